"""The first recorded step against the user's own clock, per framework (not part of ``make bench``).

Each loop times its step body with ``time.perf_counter`` (the user's clock) and calls
``prof.step()``; the trace's ``ProfilerStep#N`` of the first recorded step is compared with that
clock, and so are the later recorded steps. Prints, per framework, the median excess (trace minus
the user's clock) of the first recorded step and of the later ones over the repetitions.

* ``host``: a numpy loop, ``schedule(wait=0, active=3)`` (the window opens in ``start()``) with
  host sampling, and ``schedule(wait=2, active=3)`` (it opens in ``step()``);
* ``pyacl``: the ``tests/acl`` stand-in's model (two 4 ms tasks), ``Profiler(activities=["CPU", "NPU"])``;
* ``keras``: ``fit`` with ``ProfilerCallback(profile_batch=(15, 18))``;
* ``mindspore``: a PyNative training step with the drop-in ``DynamicProfilerMonitor``, capture of
  steps 8-10 asked while it runs.

Example::

    .venv/bin/python benchmarks/first_step.py host pyacl --reps 5
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NPUPROF_NO_MSPROF", "1")      # the trace's steps are host data: no export needed
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

import npuprof  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def step_durations_us(run_dirs: list) -> dict:
    """ProfilerStep#N -> its duration (µs) in the analysed runs."""
    out = {}
    for d in run_dirs:
        for res in npuprof.analyse(d):
            ev = res.events
            for name, dur in zip(ev["name"], ev["dur"]):
                text = ev.strings[name]
                if text.startswith("ProfilerStep#"):
                    out[int(text.split("#")[1])] = dur / 1000.0
    return out


def host(tmp: Path, opens_in: str) -> tuple:
    a = np.random.default_rng(0).standard_normal((200, 200))

    def work() -> None:
        x = a
        for _ in range(10):
            x = np.tanh(x @ a / 200)

    work()
    wait = 0 if opens_in == "start" else 2
    prof = npuprof.Profiler(output_path=tmp, schedule=npuprof.schedule(wait=wait, active=3, repeat=1),
                            host_sys=["cpu", "mem"], start_profile=False)
    mine = {}
    prof.start()
    for i in range(wait + 3):
        t0 = time.perf_counter()
        work()
        mine[i] = (time.perf_counter() - t0) * 1e6
        prof.step()
    prof.stop()
    return mine, prof.saved_runs, wait


def pyacl(tmp: Path) -> tuple:
    sys.path.insert(0, str(ROOT / "tests" / "acl"))
    import acl

    from npuprof.integrations.pyacl import track_acl

    track_acl(acl)
    acl.init()
    acl.rt.set_device(0)
    model = tmp / "m.json"
    model.write_text(json.dumps({"ops": [{"name": "conv", "type": "Conv2D", "duration_us": 4000},
                                         {"name": "fc", "type": "MatMul", "duration_us": 4000}]}))
    prof = npuprof.Profiler(output_path=tmp / "p", schedule=npuprof.schedule(wait=2, active=3, repeat=1),
                            activities=["CPU", "NPU"], start_profile=False)
    mid, _ = acl.mdl.load_from_file(str(model))
    mine = {}
    prof.start()
    for i in range(5):
        t0 = time.perf_counter()
        acl.mdl.execute(mid, 0, 0)
        mine[i] = (time.perf_counter() - t0) * 1e6
        prof.step()
    prof.stop()
    acl.mdl.unload(mid)
    acl.finalize()
    return mine, prof.saved_runs, 2


def keras(tmp: Path) -> tuple:
    import tensorflow as tf

    from npuprof.integrations.tensorflow import ProfilerCallback

    x = np.random.rand(2048, 32).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile("adam", "mse")
    mine: dict = {}

    class Timer(tf.keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.t0 = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            mine[len(mine) + 1] = (time.perf_counter() - self.t0) * 1e6

    cb = ProfilerCallback(profile_batch=(15, 18), output_path=str(tmp / "k"), analyse=False)
    model.fit(x, y, batch_size=64, epochs=1, callbacks=[cb, Timer()], verbose=0)
    # the window's steps count from 0 at batch 15; its last batch (18) ends in stop(), not step()
    return {k - 15: v for k, v in mine.items() if 15 <= k < 18}, cb.saved_runs, 0


def mindspore(tmp: Path) -> tuple:
    import mindspore as ms
    from mindspore import nn

    from npuprof.dynamic_profile.request import MINDSPORE_TEMPLATE
    from npuprof.integrations.mindspore import DynamicProfilerMonitor

    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    net = nn.SequentialCell(nn.Dense(64, 128), nn.ReLU(), nn.Dense(128, 10))
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    train = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.SGD(net.trainable_params(), 0.01))
    xb = ms.Tensor(np.random.rand(32, 64).astype("float32"))
    yb = ms.Tensor(np.random.randint(0, 10, 32).astype("int32"))
    cfg = tmp / "cfg"
    monitor = DynamicProfilerMonitor(cfg_path=str(cfg), output_path=str(tmp / "dyn"), poll_interval=3600)
    (cfg / "profiler_config.json").write_text(json.dumps(dict(MINDSPORE_TEMPLATE, start_step=8, stop_step=10,
                                                              analyse=False)))
    monitor.controller._watcher.check_now()     # as the watcher's next poll would
    mine = {}
    for i in range(1, 13):                      # MindSpore numbers steps from 1
        t0 = time.perf_counter()
        train(xb, yb)
        mine[i] = (time.perf_counter() - t0) * 1e6
        monitor.step()
    monitor.controller.close()
    return mine, [r for c in monitor.controller.status.captures for r in c.run_dirs], 8


CASES = {"host": [("host, window opened by start()", lambda t: host(t, "start")),
                  ("host, window opened by step()", lambda t: host(t, "step"))],
         "pyacl": [("pyACL (tests/acl stand-in)", pyacl)], "keras": [("Keras fit", keras)],
         "mindspore": [("MindSpore dynamic capture", mindspore)]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("frameworks", nargs="*", default=["host", "pyacl"], choices=sorted(CASES))
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    for fw in args.frameworks:
        for title, case in CASES[fw]:
            first, later = [], []
            for _ in range(args.reps):
                with tempfile.TemporaryDirectory() as tmp:
                    mine, runs, first_step = case(Path(tmp))
                    steps = step_durations_us(runs)
                first.append(steps[first_step] - mine[first_step])
                later += [steps[s] - mine[s] for s in steps if s != first_step and s in mine]
            print(f"{title}: first recorded step minus the user's clock: median {statistics.median(first):+.0f} us "
                  f"[{min(first):+.0f} .. {max(first):+.0f}], later steps: median {statistics.median(later):+.0f} us "
                  f"({args.reps} runs)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
