"""A small training loop under npuprof that writes its own ground truth.

Run by the crash-recovery harness (tests/rel_support.py) as a child process
that is then killed at a random instant. Argument: one JSON object::

    {"out": output_path, "log": ground-truth file, "tag": "k17",
     "flush": 0.2, "schedule": null | [wait, warmup, active],
     "style": "with" | "explicit", "threads": 1 | 2, "host_sys": false,
     "self_kill": null | {"mode": "exception" | "os_exit", "after": seconds},
     "user_handler": null | "before-exit" | "after-flag" | "after-exit",
     "framework": null | "tf" | "ms", "hammer": 0, "max_seconds": 30}

``hammer`` threads record ranges as fast as they can (not logged), and the
main thread records 3,000 more per step: each fills its buffer often and
writes it itself (the recorder's full-buffer rule), so signals land inside
the main thread's own writes.
With ``framework`` the training step is a real TensorFlow tf.function or a
MindSpore PyNative value_and_grad step (CPU), under that integration's
Profiler, instead of the numpy one.

Ground truth goes to ``log`` with one unbuffered ``os.write`` per line on an
O_APPEND descriptor (the page cache keeps it when the process is killed):

- ``E <thread> <id> <t_before> <t_after> <flag>`` for each ``mstx.mark``
  named ``<tag>:<thread>:<id>``; times are CLOCK_MONOTONIC ns read just before
  and after the call; flag 1 = a recorder was active (the same one) before and
  after the call, so the mark was certainly buffered; 0 = none was active
  before and after, so it was certainly not recorded; 2 = undecidable (a
  window opened or closed during the call).
- ``READY <t>`` once the profiler has started; ``K <t>`` just before a self
  kill; ``H <t>`` when the user's SIGTERM handler runs; ``DONE`` at a normal end.
"""
from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import threading
import time

import numpy as np

faulthandler.register(signal.SIGUSR1, all_threads=True)   # the harness dumps stacks of a hung child
cfg = json.loads(sys.argv[1])
LOG = os.open(cfg["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
now = time.perf_counter_ns   # CLOCK_MONOTONIC on Linux: comparable with the parent's clock


def log(line: str) -> None:
    os.write(LOG, (line + "\n").encode())


stop_requested = threading.Event()


def user_handler(signum, frame):  # noqa: ANN001
    log(f"H {now()}")
    if (cfg.get("user_handler") or "").endswith("exit"):
        sys.exit(0)
    stop_requested.set()


if cfg.get("user_handler") == "before-exit":
    signal.signal(signal.SIGTERM, user_handler)

from npuprof import Profiler, mstx, record_function, schedule  # noqa: E402
from npuprof.recorder import active_recorder  # noqa: E402

TAG = cfg["tag"]


def mark(thread: str, i: int) -> None:
    before = active_recorder()
    t0 = now()
    mstx.mark(f"{TAG}:{thread}:{i}")
    t1 = now()
    after = active_recorder()
    flag = 1 if (before is not None and before is after) else 0 if (before is None and after is None) else 2
    log(f"E {thread} {i} {t0} {t1} {flag}")


def helper_thread() -> None:
    i = 0
    while not stop_requested.is_set():
        mark("h", i)
        i += 1
        time.sleep(0.0005)


def hammer_thread() -> None:
    while not stop_requested.is_set():
        with record_function("hammer"):
            pass


def numpy_step() -> callable:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 128))
    y = x @ rng.standard_normal((128, 4))
    state = {"w": np.zeros((128, 4))}

    def step() -> None:
        with record_function("forward"):
            pred = x @ state["w"]
        with record_function("backward"):
            grad = x.T @ (pred - y) / len(x)
        state["w"] -= 0.001 * grad

    return step


def tf_step() -> callable:
    import tensorflow as tf

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # tests/, for tf_support
    from tf_support import build_tf2_train_step

    train_step = build_tf2_train_step(tf)
    x = tf.ones([32, 64])
    train_step(x)   # trace before profiling
    return lambda: train_step(x).numpy()


def ms_step() -> callable:
    import mindspore as ms
    from mindspore import nn

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    net = nn.SequentialCell([nn.Dense(16, 32), nn.ReLU(), nn.Dense(32, 4)])
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.SGD(net.trainable_params(), 0.05)
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)
    x = ms.Tensor(np.random.default_rng(0).random((8, 16)).astype(np.float32))
    y = ms.Tensor((np.arange(8) % 4).astype(np.int32))

    def step() -> None:
        loss, grads = grad_fn(x, y)
        opt(grads)
        loss.asnumpy()

    step()
    return step


STEPS = {None: numpy_step, "tf": tf_step, "ms": ms_step}


def train(prof: Profiler, step_fn: callable) -> None:
    deadline = time.monotonic() + cfg.get("max_seconds", 30)
    self_kill = cfg.get("self_kill") or {}
    kill_at = now() + int(self_kill["after"] * 1e9) if self_kill else None
    i = 0
    hammer = 3_000 if cfg.get("hammer") else 0
    while time.monotonic() < deadline and not stop_requested.is_set():
        step_fn()
        for _ in range(hammer):
            with record_function("hammer"):
                pass
        for _ in range(10):
            mark("m", i)
            i += 1
            if kill_at is not None and now() >= kill_at:
                log(f"K {now()}")
                if self_kill["mode"] == "os_exit":
                    os._exit(3)
                raise RuntimeError("injected failure in the training loop")
        prof.step()


def main() -> None:
    sched = cfg.get("schedule")
    framework = cfg.get("framework")
    step_fn = STEPS[framework]()
    kwargs = dict(output_path=cfg["out"], flush_interval=cfg.get("flush", 0.2),
                  host_sys=["cpu", "mem"] if cfg.get("host_sys") else None, worker_name=TAG)
    if sched:
        kwargs["schedule"] = schedule(wait=sched[0], warmup=sched[1], active=sched[2])
    profiler_cls = Profiler
    if framework == "tf":
        from npuprof.integrations.tensorflow import Profiler as profiler_cls  # noqa: N813
    elif framework == "ms":
        kwargs["activities"] = ["CPU"]
    helpers = []
    if cfg.get("style", "with") == "with":
        with profiler_cls(**kwargs) as prof:
            started(prof, helpers)
            train(prof, step_fn)
    else:
        prof = profiler_cls(**kwargs)
        started(prof, helpers)
        train(prof, step_fn)   # no stop(): the interpreter's exit must finish the run
    stop_requested.set()
    for t in helpers:
        t.join()
    log("DONE")


def started(prof: Profiler, helpers: list) -> None:
    if (cfg.get("user_handler") or "").startswith("after"):
        signal.signal(signal.SIGTERM, user_handler)
    if cfg.get("threads", 1) > 1:
        t = threading.Thread(target=helper_thread, daemon=True)
        t.start()
        helpers.append(t)
    for _ in range(cfg.get("hammer", 0)):
        t = threading.Thread(target=hammer_thread, daemon=True)
        t.start()
        helpers.append(t)
    log(f"READY {now()}")
    print("READY", flush=True)


main()
