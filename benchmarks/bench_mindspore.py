"""MindSpore 2.10 on CPU (PyNative): run overhead and analysis time against
MindSpore's own profiler.

Overhead: the same network and steps under (a) no profiler, (b) MindSpore's
profiler alone, configured as npuprof drives it (``mindspore.profiler.profile``
with the CPU activity, ``tensorboard_trace_handler(analyse_flag=False)``,
started and stopped around the steps), (c) an ``npuprof.Profiler`` whose
MindSpore plugin drives that same profiler, plus npuprof's own host
collection (steps, a ``record_function`` per step). Variants alternate,
repetition by repetition (balanced orders, see ``harness.interleave``); each
runs ``warmup`` untimed steps after its profiler starts; only the steps are
timed; profiler start + stop are timed apart (``start_stop_s``).

Analysis: one run of ``steps_analysis`` steps recorded by MindSpore's profiler
(``mindspore.profiler.Profiler(output_path, activities=[CPU])``), copied
before MindSpore analyses it; MindSpore's ``analyse()`` is timed on the
original, ``npuprof.analyse()`` on the copy (same FRAMEWORK files), both in
this process with their imports done.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from harness import (Clock, child_main, interleave, paired_ratio, summary, timed_steps, timed_window,
                     window_columns)


def make_training(op_threads: int = 0):
    import mindspore as ms
    from mindspore import nn

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    if op_threads:
        # MindSpore's default is 25 CPU-kernel threads: on 2 shared cores they fight the
        # machine's other jobs and each other, and 20-step blocks swing by ~25%
        ms.device_context.cpu.op_tuning.threads_num(op_threads)
    ms.set_seed(0)

    class MLP(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Dense(64, 128)
            self.fc2 = nn.Dense(128, 64)
            self.fc3 = nn.Dense(64, 10)
            self.relu = nn.ReLU()

        def construct(self, x):
            return self.fc3(self.relu(self.fc2(self.relu(self.fc1(x)))))

    net = MLP()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.SGD(net.trainable_params(), 0.01)

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)
    rng = np.random.default_rng(0)
    x = ms.Tensor(rng.random((32, 64)).astype(np.float32))
    y = ms.Tensor((np.arange(32) % 10).astype(np.int32))

    def step():
        loss, grads = grad_fn(x, y)
        opt(grads)
        return loss

    return step


def _forget_handler_dir() -> None:
    """tensorboard_trace_handler leaves its directory in MindSpore's process-wide profiler
    context; a later ``Profiler(output_path=...)`` would write there instead."""
    try:
        from mindspore.profiler.common.profiler_context import ProfilerContext

        ProfilerContext().on_trace_ready_output_path = None
    except Exception:
        pass


def ms_profiler_start(dir_name: Path, profile_memory: bool = False):
    """Start MindSpore's own profiler (CPU activity, written by tensorboard_trace_handler without its
    analysis) into ``dir_name``; stop it with :func:`ms_profiler_stop`."""
    from mindspore import profiler as msp

    prof = msp.profile(activities=[msp.ProfilerActivity.CPU], start_profile=False, profile_memory=profile_memory,
                       on_trace_ready=msp.tensorboard_trace_handler(dir_name=str(dir_name), analyse_flag=False))
    prof.start()
    return prof


def ms_profiler_stop(prof) -> None:
    prof.stop()
    _forget_handler_dir()


def run(params: dict) -> dict:
    reps = int(params.get("reps", 7))
    steps = int(params.get("steps", 30))
    warmup = int(params.get("warmup", 3))
    steps_analysis = int(params.get("steps_analysis", 200))
    analysis_reps = int(params.get("analysis_reps", 3))
    out = Path(params.get("out") or tempfile.mkdtemp(prefix="npuprof-bench-ms-"))
    t0 = time.perf_counter()
    import mindspore
    from mindspore import profiler as msp

    import npuprof

    import_s = time.perf_counter() - t0
    op_threads = int(params.get("op_threads", 0))
    step = make_training(op_threads)

    def timed(n: int, prof=None) -> tuple:
        # sync: wait for the last step; warmup: untimed steps after the profiler starts
        return timed_steps(step, n, prof, sync=lambda r: r.asnumpy(), warmup=warmup)

    def none() -> tuple:
        return timed(steps) + (0.0,)

    def ms_alone() -> tuple:
        return timed_window(lambda: ms_profiler_start(out / "ms_alone"), lambda _: timed(steps), ms_profiler_stop)

    npuprof_runs: list = []

    def npuprof_stop(prof) -> None:
        prof.stop()
        npuprof_runs.extend(prof.saved_runs)

    def with_npuprof() -> tuple:
        return timed_window(lambda: npuprof.Profiler(output_path=str(out / "npuprof"), activities=["CPU"]), lambda prof: timed(steps, prof), npuprof_stop)

    for _ in range(10):
        step()
    for v in (none, ms_alone, with_npuprof):  # warm-up: first-use costs of each path
        v()
    wall, cpu, start_stop = window_columns(interleave({"none": none, "mindspore": ms_alone,
                                                       "npuprof": with_npuprof}, reps))
    plugin_active = bool(npuprof_runs) and (npuprof_runs[-1] / "FRAMEWORK").is_dir()

    # -- analysis of the same MindSpore run: MindSpore's analyse() vs npuprof.analyse() --------
    ms_times, np_times, events = [], [], []
    warm = None
    for r in range(analysis_reps):
        target = out / f"ms_analysis_{r}"
        prof = msp.Profiler(output_path=str(target), activities=[msp.ProfilerActivity.CPU])
        for _ in range(steps_analysis):
            step()
        step().asnumpy()
        prof.stop()
        copy = out / f"ms_analysis_{r}_copy"
        shutil.copytree(target, copy)
        if warm is None:  # first use of npuprof's plugins (imports) is not charged
            warm = out / "ms_analysis_warm"
            shutil.copytree(target, warm)
            npuprof.analyse(warm)
        with Clock() as c:
            prof.analyse()
        ms_times.append(c.wall)
        with Clock() as c:
            res = npuprof.analyse(copy)
        np_times.append(c.wall)
        events.append(sum(len(x.events) for x in res))
    own_run = None
    if npuprof_runs:
        with Clock() as c:
            res = npuprof.analyse(npuprof_runs[-1])
        own_run = {"seconds": c.wall, "events": len(res[0].events)}
    return {
        "mindspore_version": mindspore.__version__, "import_s": import_s, "steps": steps, "reps": reps,
        "warmup": warmup, "op_threads": op_threads,
        "start_stop_s": {"mindspore": summary(start_stop["mindspore"]), "npuprof": summary(start_stop["npuprof"])},
        "plugin_active": plugin_active,
        "none": summary(wall["none"]), "mindspore": summary(wall["mindspore"]), "npuprof": summary(wall["npuprof"]),
        "npuprof_over_mindspore": paired_ratio(wall["npuprof"], wall["mindspore"]),
        "mindspore_over_none": paired_ratio(wall["mindspore"], wall["none"]),
        "npuprof_over_none": paired_ratio(wall["npuprof"], wall["none"]),
        "cpu_npuprof_over_mindspore": paired_ratio(cpu["npuprof"], cpu["mindspore"]),
        "cpu_mindspore_over_none": paired_ratio(cpu["mindspore"], cpu["none"]),
        "analysis_steps": steps_analysis, "analysis_events": events,
        "ms_analyse_s": summary(ms_times), "npuprof_analyse_s": summary(np_times),
        "analysis_speedup": paired_ratio(ms_times, np_times), "npuprof_own_run": own_run,
    }


if __name__ == "__main__":
    child_main(run)
