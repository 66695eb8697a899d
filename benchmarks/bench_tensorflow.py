"""TensorFlow 2.21 on CPU: run overhead against TF's own profiler, and XSpace ->
trace conversion against TF's C++ converter.

Overhead: a small Keras MLP trained by a ``tf.function`` step under (a) no
profiler, (b) TF's profiler alone (``tf.profiler.experimental.start/stop``
around the steps), (c) ``npuprof.integrations.tensorflow.Profiler``, whose
plugin drives that same profiler, plus npuprof's host collection (a
``record_function`` and ``prof.step()`` per step). Variants alternate,
repetition by repetition (balanced orders, see ``harness.interleave``); each
runs ``warmup`` untimed steps after its profiler starts, then ``steps`` timed
ones. Profiler start + stop are timed apart (``start_stop_s``).

Conversion: one XSpace of ``steps_convert`` steps recorded by TF's profiler.
TF: ``_pywrap_profiler_plugin.xspace_to_tools_data([xplane], "trace_viewer@")``
(its LevelDB cache beside the file is removed before each run, so every run
converts). npuprof: ``npuprof.analyse(logdir)`` reading the same file
(without TensorFlow) and writing trace_view.json plus every CSV.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from harness import (Clock, child_main, interleave, paired_ratio, summary, timed_steps, timed_window,
                     window_columns)


def make_training():
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.layers.Dense(256, activation="relu"),
                                 tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)])
    opt = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.random((64, 128)).astype(np.float32))
    y = tf.constant(np.arange(64) % 10)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def step():
        return train_step(x, y)

    return step


def run(params: dict) -> dict:
    reps = int(params.get("reps", 11))
    steps = int(params.get("steps", 200))
    warmup = int(params.get("warmup", 10))
    steps_convert = int(params.get("steps_convert", 400))
    convert_reps = int(params.get("convert_reps", 5))
    out = Path(params.get("out") or tempfile.mkdtemp(prefix="npuprof-bench-tf-"))
    t0 = time.perf_counter()
    import tensorflow as tf

    import npuprof
    from npuprof.integrations.tensorflow import Profiler as TFProfiler

    import_s = time.perf_counter() - t0
    step = make_training()

    def timed(n: int, prof=None) -> tuple:
        # sync: wait for the last step
        return timed_steps(step, n, prof, sync=lambda r: r.numpy(), warmup=warmup)

    def none() -> tuple:
        return timed(steps) + (0.0,)

    counter = iter(range(10**6))

    def tf_alone() -> tuple:
        return timed_window(lambda: tf.profiler.experimental.start(str(out / "tf_alone" / str(next(counter)))),
                            lambda _: timed(steps), lambda _: tf.profiler.experimental.stop())

    npuprof_runs: list = []

    def npuprof_stop(prof) -> None:
        prof.stop()
        npuprof_runs.extend(prof.saved_runs)

    def with_npuprof() -> tuple:
        return timed_window(lambda: TFProfiler(output_path=str(out / "npuprof")), lambda prof: timed(steps, prof), npuprof_stop)

    for _ in range(50):
        step()
    for v in (none, tf_alone, with_npuprof):
        v()
    wall, cpu, start_stop = window_columns(interleave({"none": none, "tensorflow": tf_alone,
                                                       "npuprof": with_npuprof}, reps))
    plugin_active = bool(npuprof_runs) and any((npuprof_runs[-1] / "TF").rglob("*.xplane.pb"))

    # -- XSpace -> trace: TF's converter vs npuprof ---------------------------------------------
    logdir = out / "convert"
    tf.profiler.experimental.start(str(logdir))
    for _ in range(steps_convert):
        step()
    step().numpy()
    tf.profiler.experimental.stop()
    (xplane,) = list(logdir.rglob("*.xplane.pb"))
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin as tf_plugin

    def clean_cache() -> None:
        for p in xplane.parent.iterdir():
            if p != xplane:
                p.unlink() if p.is_file() else shutil.rmtree(p)

    tf_events = 0
    tf_s, np_s, np_trace_events = [], [], 0
    np_logdir = out / "convert_npuprof"
    shutil.copytree(logdir, np_logdir)
    npuprof.analyse(np_logdir)  # first use of the plugins (imports) is not charged

    def tf_convert() -> float:
        nonlocal tf_events
        clean_cache()
        with Clock() as c:
            data = tf_plugin.xspace_to_tools_data([str(xplane)], "trace_viewer@")
        text = data[0] if isinstance(data, tuple) else data
        tf_events = len(json.loads(text)["traceEvents"])
        return c.wall

    def np_convert() -> float:
        nonlocal np_trace_events
        shutil.rmtree(np_logdir / "ASCEND_PROFILER_OUTPUT", ignore_errors=True)
        with Clock() as c:
            res = npuprof.analyse(np_logdir)
        np_trace_events = len(res[0].events)
        return c.wall

    conv = interleave({"tf": tf_convert, "npuprof": np_convert}, convert_reps)
    tf_s, np_s = conv["tf"], conv["npuprof"]
    return {
        "tensorflow_version": tf.__version__, "import_s": import_s, "steps": steps, "reps": reps,
        "warmup": warmup,
        "start_stop_s": {"tensorflow": summary(start_stop["tensorflow"]), "npuprof": summary(start_stop["npuprof"])},
        "plugin_active": plugin_active,
        "none": summary(wall["none"]), "tensorflow": summary(wall["tensorflow"]), "npuprof": summary(wall["npuprof"]),
        "npuprof_over_tensorflow": paired_ratio(wall["npuprof"], wall["tensorflow"]),
        "tensorflow_over_none": paired_ratio(wall["tensorflow"], wall["none"]),
        "npuprof_over_none": paired_ratio(wall["npuprof"], wall["none"]),
        "cpu_npuprof_over_tensorflow": paired_ratio(cpu["npuprof"], cpu["tensorflow"]),
        "cpu_tensorflow_over_none": paired_ratio(cpu["tensorflow"], cpu["none"]),
        "convert_steps": steps_convert, "xplane_bytes": xplane.stat().st_size,
        "tf_trace_events": tf_events, "npuprof_events": np_trace_events,
        "tf_convert_s": summary(tf_s), "npuprof_convert_s": summary(np_s),
        "convert_ratio": paired_ratio(np_s, tf_s),
    }


if __name__ == "__main__":
    child_main(run)
