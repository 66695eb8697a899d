"""Helpers for npuprof's TensorFlow tests.

The main virtualenv runs TensorFlow 2.21, which no longer ships
``tf.estimator``. The Estimator tests therefore run in a second virtualenv
with TensorFlow 2.15.1 + tensorflow-estimator 2.15 (numpy < 2), created on
first use by :func:`ensure_tf215_venv` (or ``python tests/tf_support.py``,
which the Makefile can call) and reused afterwards. npuprof is installed into
it from this checkout (editable, so the code under test is the working tree).

Example::

    python tests/tf_support.py            # create/refresh .venv-tf215, print its python
    .venv-tf215/bin/python -c "import tensorflow as tf; print(tf.estimator)"
"""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TF215_VENV = Path(os.environ.get("NPUPROF_TF215_VENV", REPO / ".venv-tf215"))
TF215_REQUIREMENTS = (
    "tensorflow-cpu==2.15.1",
    "tensorflow-estimator==2.15.0",
    "numpy<2",
    "pluggy>=1.3",
    "orjson>=3.9",
    "rich>=13",
)
_STAMP = ".npuprof-tf215-ready"


def _python(env_dir: Path) -> Path:
    return env_dir / "bin" / "python"


def _run(cmd: list, log: Path) -> None:
    with open(log, "ab") as fh:
        fh.write(("$ " + " ".join(map(str, cmd)) + "\n").encode())
        fh.flush()
        proc = subprocess.run([str(c) for c in cmd], stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}; see {log}")


def ensure_tf215_venv(env_dir: Path = TF215_VENV) -> Path:
    """Create (once) the TF 2.15 + tensorflow-estimator virtualenv; return its python.

    Idempotent: a finished environment carries a stamp file listing the
    requirements; npuprof itself is (re)installed editable each time, which
    is quick and keeps the venv on the working tree.
    """
    env_dir = Path(env_dir)
    py = _python(env_dir)
    stamp = env_dir / _STAMP
    wanted = "\n".join(TF215_REQUIREMENTS)
    if not py.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    log = env_dir / "npuprof-setup.log"
    if not (stamp.exists() and stamp.read_text() == wanted):
        _run([py, "-m", "pip", "install", "--quiet", *TF215_REQUIREMENTS], log)
        stamp.write_text(wanted)
    # --no-deps: the requirements above are npuprof's runtime deps; its
    # `tensorflow` extra would pull TF 2.21 over 2.15.
    _run([py, "-m", "pip", "install", "--quiet", "--no-deps", "-e", REPO], log)
    return py


if __name__ == "__main__":
    print(ensure_tf215_venv(Path(sys.argv[1]) if len(sys.argv) > 1 else TF215_VENV))


# -- small real models and output readers shared by the TF tests -------------

DOCS_PROFILING_OPTIONS = ('{"output":"/tmp/profiling","training_trace":"on","task_trace":"on","fp_point":"",'
                          '"bp_point":"","aic_metrics":"PipeUtilization"}')


def docs_options_with_output(output: Path) -> str:
    """The Ascend docs' profiling_options string with ``output`` pointed at a test directory."""
    import json

    options = json.loads(DOCS_PROFILING_OPTIONS)
    options["output"] = str(output)
    return json.dumps(options)


def build_graph_model(tf, batch: int = 32, features: int = 64, hidden: int = 128):
    """A 2-layer MLP training graph in a fresh tf.Graph (no global eager switch).

    Returns (graph, init_op, train_op, placeholder, feed_array).
    """
    import numpy as np

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [batch, features], name="x")
        w1 = tf.Variable(tf.random.normal([features, hidden]), name="w1")
        w2 = tf.Variable(tf.random.normal([hidden, 1]), name="w2")
        h = tf.nn.relu(tf.matmul(x, w1))
        loss = tf.reduce_mean(tf.square(tf.matmul(h, w2)))
        global_step = tf.compat.v1.train.get_or_create_global_step()
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.001).minimize(loss, global_step=global_step)
        init = tf.compat.v1.global_variables_initializer()
    feed = np.random.default_rng(0).random((batch, features), dtype=np.float32)
    return graph, init, train_op, x, feed


def build_tf2_train_step(tf, features: int = 64, hidden: int = 128):
    """The same 2-layer MLP as :func:`build_graph_model`, as a TF2 ``tf.function``
    training step (SGD); call it with an input of shape ``[batch, features]``."""
    w1 = tf.Variable(tf.random.normal([features, hidden]))
    w2 = tf.Variable(tf.random.normal([hidden, 1]))
    opt = tf.keras.optimizers.SGD(0.001)

    @tf.function
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)))
        grads = tape.gradient(loss, [w1, w2])
        opt.apply_gradients(zip(grads, [w1, w2]))
        return loss

    return train_step


def read_csv(path: Path) -> list:
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def exported(run_dir: Path, name: str) -> list:
    """Rows of ``<run_dir>/ASCEND_PROFILER_OUTPUT/<name>``."""
    return read_csv(Path(run_dir) / "ASCEND_PROFILER_OUTPUT" / name)


# Run by the TF 2.15 interpreter: NPUEstimator / ProfilingHook on a real tf.estimator.
ESTIMATOR_SCENARIO = r"""
import json, sys
from pathlib import Path
import numpy as np
import tensorflow as tf
import npuprof
from npuprof.integrations.tensorflow import (NPUEstimator, NPURunConfig, ProfilingConfig, ProfilingHook)

out = Path(sys.argv[1])
DOCS = '{"output":"/tmp/profiling","training_trace":"on","task_trace":"on","fp_point":"","bp_point":"","aic_metrics":"PipeUtilization"}'
options = json.loads(DOCS); options["output"] = str(out / "profiling")

def model_fn(features, labels, mode, params):
    h = tf.compat.v1.layers.dense(features["x"], 64, activation=tf.nn.relu)
    logits = tf.compat.v1.layers.dense(h, 1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": logits})
    loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
        loss, global_step=tf.compat.v1.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

def input_fn():
    x = np.random.rand(512, 32).astype("float32"); y = x.sum(1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(32)

def pred_fn():
    return tf.data.Dataset.from_tensor_slices({"x": np.random.rand(64, 32).astype("float32")}).batch(32)

def summary(hook):
    runs = []
    for res in hook.results:
        ops = res.tables["op_statistic"]
        ci, ti = ops.columns.index("OP Type"), ops.columns.index("Total Time(us)")
        steps = res.tables["step_trace_time"].rows()
        runs.append({"run_dir": str(res.run_dir), "op_types": sorted({r[ci] for r in ops.rows()}),
                     "matmul_total_us": sum(float(r[ti]) for r in ops.rows() if "MatMul" in r[ci]),
                     "steps": [r[0] for r in steps]})
    return runs

report = {"tf": tf.__version__}
config = NPURunConfig(profiling_config=ProfilingConfig(enable_profiling=True, profiling_options=json.dumps(options)),
                      session_config=tf.compat.v1.ConfigProto(), model_dir=str(out / "model"),
                      save_checkpoints_steps=100, iterations_per_loop=1, precision_mode="allow_mix_precision")
est = NPUEstimator(model_fn=model_fn, config=config)
est.train(input_fn, max_steps=6)
est.evaluate(input_fn, steps=3)
preds = list(est.predict(pred_fn))
report["npu_estimator"] = [summary(h) for h in est.profiling_hooks]
report["predictions"] = len(preds)
report["npu_options"] = config.npu_options

# Plain Estimator + ProfilingHook, schedule on the global step; resumes from step 6.
hook = ProfilingHook(output_path=str(out / "hook"), schedule=npuprof.schedule(wait=1, active=2, repeat=1, skip_first=7))
plain = tf.estimator.Estimator(model_fn=model_fn, model_dir=str(out / "model"))
plain.train(input_fn, steps=6, hooks=[hook])
report["hook"] = summary(hook)
report["hook_steps_in_info"] = [json.loads(next(Path(r).glob("profiler_info_*.json")).read_text())["npuprof"]["steps"]
                                for r in hook.saved_runs]
errors = {}
try:
    ProfilingConfig(enable_profiling=True, profiling_options='{"output":"/tmp/x","task_time":"l7"}')
except npuprof.ProfilerConfigError as e:
    errors["profiling_config"] = e.param
try:
    NPURunConfig(profiling_config="yes")
except npuprof.ProfilerConfigError as e:
    errors["run_config"] = e.param
try:
    NPURunConfig(no_such_argument=1)
except TypeError as e:
    errors["unknown_kwarg"] = str(e)
report["errors"] = errors
print("REPORT " + json.dumps(report))
"""
