"""Dynamic profiling tests: real training processes whose config is changed while they run.

A child (``python tests/dyn_support.py <kind> <cfg_dir> <out_dir> <delay_s>``) trains until
``<out_dir>/stop`` appears, sleeping ``delay_s`` per step so the test can act between steps:

* ``numpy``     - a numpy loop with ``npuprof.dynamic_profile.init/step`` and record_function;
* ``mindspore`` - MindSpore ``Model.train`` with the drop-in ``DynamicProfilerMonitor``;
* ``keras``     - Keras ``fit`` with ``DynamicProfilerCallback``;
* ``zero_code*`` - Keras ``fit``, MindSpore ``Model.train`` and a TF1 ``MonitoredTrainingSession`` loop in
  scripts that never import npuprof (``NPUPROF_CONFIG_PATH`` and the start-up hook).

The test (parent) reads the child's status file, writes configs as a user would, and waits for
the captures the status file reports.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

HERE = Path(__file__).resolve()
POLL = 0.1


# -- the children --------------------------------------------------------------------------------------------------
def _stop_requested(out: Path) -> bool:
    return (out / "stop").exists()


def _hold_here(out: Path, step: int) -> None:
    """Between two steps: while ``<out>/hold`` exists, say the step about to run in ``<out>/held`` and wait
    (the test then writes a config knowing the job's step, whatever the machine's load)."""
    if not (out / "hold").exists():
        return
    (out / "held.tmp").write_text(str(step))
    os.replace(out / "held.tmp", out / "held")
    while (out / "hold").exists() and not _stop_requested(out):
        time.sleep(0.01)
    (out / "held").unlink()


def child_numpy(cfg: Path, out: Path, delay: float) -> None:
    import npuprof.dynamic_profile as dp
    from npuprof import record_function

    ctl = dp.init(cfg, poll_interval=POLL)
    a = np.ones((64, 64))
    while not _stop_requested(out):
        _hold_here(out, ctl.step_num)
        with record_function("train_step"):
            a = np.tanh(a @ a / 64.0)
            time.sleep(delay)
        dp.step()
    dp.finalize()


def child_mindspore(cfg: Path, out: Path, delay: float) -> None:
    sys.path.insert(0, str(HERE.parent))
    from ms_support import make_dataset, make_model, make_net, set_mode
    from mindspore.train import Callback

    from npuprof.integrations.mindspore import DynamicProfilerMonitor

    class Pace(Callback):        # runs before the monitor's step end: the next step is the running one + 1
        def on_train_step_end(self, run_context: Any) -> None:
            time.sleep(delay)
            _hold_here(out, monitor.controller.step_num + 1)
            if _stop_requested(out):
                run_context.request_stop()

    set_mode("graph")
    monitor = DynamicProfilerMonitor(cfg_path=str(cfg), output_path=str(out / "dyn_profile_data"),
                                     poll_interval=POLL)
    make_model(make_net()).train(1000, make_dataset(n=20, batch=2), callbacks=[Pace(), monitor])


def _keras_fit(out: Path, delay: float, callbacks: list, next_step: Optional[Callable[[], int]] = None) -> None:
    import tensorflow as tf

    class Pace(tf.keras.callbacks.Callback):    # runs before the callbacks': ``next_step`` is after theirs
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            time.sleep(delay)
            if next_step is not None:
                _hold_here(out, next_step())
            if _stop_requested(out):
                self.model.stop_training = True

    model = tf.keras.Sequential([tf.keras.Input((16,)), tf.keras.layers.Dense(32, activation="relu"),
                                 tf.keras.layers.Dense(4)])
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x = rng.random((64, 16), dtype=np.float32)
    y = (np.arange(64) % 4).astype(np.int32)
    model.fit(x, y, batch_size=8, epochs=1000, verbose=0, callbacks=[Pace()] + callbacks)


def child_keras(cfg: Path, out: Path, delay: float) -> None:
    from npuprof.integrations.tensorflow import DynamicProfilerCallback

    callback = DynamicProfilerCallback(cfg, poll_interval=POLL)
    _keras_fit(out, delay, [callback], next_step=lambda: callback.controller.step_num + 1)


# Scripts that never import npuprof: NPUPROF_CONFIG_PATH and the start-up hook do it all.
_ZERO_CODE_HEAD = """
import os, sys, time
import numpy as np
out, delay = sys.argv[1], float(sys.argv[2])
def stop_requested():
    return os.path.exists(os.path.join(out, "stop"))
"""
_ZERO_CODE_TAIL = """
assert "npuprof" in sys.modules, "the start-up hook did not load"
"""
ZERO_CODE_SCRIPTS = {
    "zero_code": """
import tensorflow as tf
class Pace(tf.keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        time.sleep(delay)
        if stop_requested():
            self.model.stop_training = True
model = tf.keras.Sequential([tf.keras.Input((16,)), tf.keras.layers.Dense(32, activation="relu"),
                             tf.keras.layers.Dense(4)])
model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
x = np.random.default_rng(0).random((64, 16), dtype=np.float32)
y = (np.arange(64) % 4).astype(np.int32)
model.fit(x, y, batch_size=8, epochs=1000, verbose=0, callbacks=[Pace()])
""",
    "zero_code_mindspore": """
sys.path.insert(0, %r)
from ms_support import make_dataset, make_model, make_net, set_mode
from mindspore.train import Callback
class Pace(Callback):
    def on_train_step_end(self, run_context):
        time.sleep(delay)
        if stop_requested():
            run_context.request_stop()
set_mode("graph")
make_model(make_net()).train(1000, make_dataset(n=20, batch=2), callbacks=[Pace()])
""" % str(HERE.parent),
    "zero_code_tf1": """
import tensorflow as tf
tf.compat.v1.disable_eager_execution()
x = tf.constant(np.random.default_rng(0).random((8, 16), dtype=np.float32))
w = tf.compat.v1.get_variable("w", [16, 4])
loss = tf.reduce_mean(tf.square(tf.matmul(x, w)))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
    loss, global_step=tf.compat.v1.train.get_or_create_global_step())
with tf.compat.v1.train.MonitoredTrainingSession() as sess:
    while not stop_requested():
        sess.run(train_op)
        time.sleep(delay)
""",
}


CHILDREN: dict[str, Callable[[Path, Path, float], None]] = {
    "numpy": child_numpy, "mindspore": child_mindspore, "keras": child_keras}
HOLDABLE = set(CHILDREN)     # the zero-code scripts never import npuprof: they cannot say their step


# -- the parent's side ---------------------------------------------------------------------------------------------
class RunningJob:
    """A child training process and the files the test talks to it through."""

    def __init__(self, kind: str, cfg: Path, out: Path, delay: float = 0.05, env: Optional[dict] = None) -> None:
        self.kind, self.cfg, self.out = kind, cfg, out
        out.mkdir(parents=True, exist_ok=True)
        full_env = dict(os.environ, GLOG_v="3", PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="2", **(env or {}))
        if kind in ZERO_CODE_SCRIPTS:
            script = out / "train_without_npuprof.py"
            script.write_text(_ZERO_CODE_HEAD + ZERO_CODE_SCRIPTS[kind] + _ZERO_CODE_TAIL)
            full_env["NPUPROF_CONFIG_PATH"] = str(cfg)
            full_env["NPUPROF_POLL_INTERVAL"] = str(POLL)
            cmd = [sys.executable, str(script), str(out), str(delay)]
        else:
            cmd = [sys.executable, str(HERE), kind, str(cfg), str(out), str(delay)]
        self.stderr_path = out / "stderr.txt"
        self._stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._stderr, env=full_env,
                                     cwd=str(out))

    def statuses(self) -> list[dict]:
        from npuprof.dynamic_profile.status import read_statuses

        return [s for s in read_statuses(self.cfg) if s.get("pid") == self.proc.pid]

    def status(self) -> dict:
        found = self.statuses()
        return found[0] if found else {}

    def wait_for(self, what: str, test: Callable[[dict], bool], timeout: float = 120) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            st = self.status()
            if st and test(st):
                return st
            if self.proc.poll() is not None:
                raise AssertionError(f"child exited ({self.proc.returncode}) waiting for {what}:\n{self.stderr()}")
            time.sleep(0.05)
        self.proc.kill()
        raise AssertionError(f"timed out waiting for {what}; status {json.dumps(self.status())[:3000]}\n"
                             f"{self.stderr()}")

    def hold(self) -> int:
        """Stop the job between two steps (the numpy, mindspore and keras children: see HOLDABLE);
        returns the step it will run next."""
        (self.out / "hold").touch()
        end = time.monotonic() + 120
        while not (self.out / "held").exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                raise AssertionError(f"the job did not hold:\n{self.stderr()}")
            time.sleep(0.01)
        return int((self.out / "held").read_text())

    def release(self) -> None:
        (self.out / "hold").unlink()

    def write_config_read_while_held(self, jobs: list, config: str) -> None:
        """Write ``config`` and wait until every held job's watcher has read it (its status names it)."""
        from npuprof.dynamic_profile import parse_config_text

        digest = parse_config_text(config, "mindspore" if self.kind == "mindspore" else "npuprof").digest
        self.write_config(config)
        for job in jobs:
            job.wait_for(f"config {digest} read", lambda s: s.get("config_digest") == digest)

    def write_config(self, config: Any) -> None:
        """Write the file in place (not atomically), as an editor saving over it does."""
        text = config if isinstance(config, str) else json.dumps(config, indent=2)
        with open(self.cfg / "profiler_config.json", "w") as fh:
            fh.write(text)

    def finish(self, timeout: float = 240) -> int:
        (self.out / "stop").touch()
        try:
            return self.proc.wait(timeout)
        finally:
            self._stderr.close()

    def stderr(self) -> str:
        return self.stderr_path.read_text()[-6000:]


def captures_done(count: int) -> Callable[[dict], bool]:
    return lambda st: sum(c["state"] == "done" for c in st.get("captures", [])) >= count


def run_info(run_dir: str) -> dict:
    (path,) = Path(run_dir).glob("profiler_info_*.json")
    return json.loads(path.read_text())


if __name__ == "__main__":
    kind, cfg_dir, out_dir, delay_s = sys.argv[1:5]
    CHILDREN[kind](Path(cfg_dir), Path(out_dir), float(delay_s))
