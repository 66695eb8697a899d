"""The cost of memory profiling: step time with memory collection on vs off, per source, next to the
frameworks' own memory profiling. One child process per part (params ``part``):

``mindspore``  MindSpore 2.10 PyNative MLP (bench_mindspore's): MindSpore's profiler alone
               (``mindspore.profiler.profile``, CPU activity) with ``profile_memory`` off / on, and
               ``npuprof.Profiler`` (driving that profiler) off / on; all four interleaved.
``tensorflow`` TF 2.21 Keras MLP step (bench_tensorflow's): TF's profiler alone and npuprof's TF profiler.
               TF records CPU allocations only with its BFC allocator, chosen when TensorFlow is imported
               (``TF_CPU_ALLOCATOR_USE_BFC``): so the part runs twice, in a process without it
               (``bfc: false``; memory off) and one with it (``bfc: true``; npuprof with
               ``profile_memory=True``); the on/off ratio compares two processes' medians.
``python``     a pure-Python step (building and dropping lists and dicts): npuprof with
               ``python_memory`` (tracemalloc) off / on, interleaved.

Each number is the median over ``reps`` windows of the per-step wall time.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from harness import child_main, interleave, paired_ratio, summary, timed_steps, timed_window, window_columns


def _mindspore(params: dict, out: Path) -> dict:
    import npuprof
    from bench_mindspore import make_training, ms_profiler_start, ms_profiler_stop

    steps, warmup, reps = int(params.get("steps", 30)), int(params.get("warmup", 3)), int(params.get("reps", 7))
    step = make_training(int(params.get("op_threads", 2)))

    def timed(prof=None) -> tuple:
        return timed_steps(step, steps, prof, sync=lambda r: r.asnumpy(), warmup=warmup)

    def ms(memory: bool):
        return lambda: timed_window(lambda: ms_profiler_start(out / f"ms_{memory}", memory), lambda _: timed(),
                                    ms_profiler_stop)

    def ours(memory: bool):
        return lambda: timed_window(lambda: npuprof.Profiler(output_path=str(out / f"np_{memory}"), activities=["CPU"],
                                                             profile_memory=memory),
                                    lambda prof: timed(prof), lambda prof: prof.stop())

    variants = {"mindspore_off": ms(False), "mindspore_on": ms(True), "npuprof_off": ours(False),
                "npuprof_on": ours(True)}
    for _ in range(10):
        step()
    for v in variants.values():
        v()
    wall, _, _ = window_columns(interleave(variants, reps))
    return {"steps": steps, "reps": reps, **{k: summary(v) for k, v in wall.items()},
            "mindspore_on_over_off": paired_ratio(wall["mindspore_on"], wall["mindspore_off"]),
            "npuprof_on_over_off": paired_ratio(wall["npuprof_on"], wall["npuprof_off"])}


def _tensorflow(params: dict, out: Path) -> dict:
    import os

    bfc = bool(params.get("bfc"))
    if bfc:
        os.environ["TF_CPU_ALLOCATOR_USE_BFC"] = "true"     # as npuprof's profile_memory sets it
    from npuprof.integrations.tensorflow import Profiler as TFProfiler
    import tensorflow as tf
    from bench_tensorflow import make_training

    steps, warmup, reps = int(params.get("steps", 200)), int(params.get("warmup", 10)), int(params.get("reps", 7))
    step = make_training()
    counter = iter(range(10**6))

    def timed(prof=None) -> tuple:
        return timed_steps(step, steps, prof, sync=lambda r: r.numpy(), warmup=warmup)

    variants = {
        "tensorflow": lambda: timed_window(lambda: tf.profiler.experimental.start(str(out / "tf" / str(next(counter)))),
                                           lambda _: timed(), lambda _: tf.profiler.experimental.stop()),
        "npuprof": lambda: timed_window(lambda: TFProfiler(output_path=str(out / "np"), profile_memory=bfc),
                                        lambda prof: timed(prof), lambda prof: prof.stop()),
    }
    for _ in range(50):
        step()
    for v in variants.values():
        v()
    wall, _, _ = window_columns(interleave(variants, reps))
    return {"bfc": bfc, "steps": steps, "reps": reps, **{k: summary(v) for k, v in wall.items()}}


def _python(params: dict, out: Path) -> dict:
    import npuprof

    steps, reps = int(params.get("steps", 200)), int(params.get("reps", 7))

    def step() -> int:
        rows = [{"id": i, "name": f"row{i}", "values": list(range(8))} for i in range(200)]
        return sum(len(r["values"]) for r in rows)

    def ours(memory: bool):
        return lambda: timed_window(lambda: npuprof.Profiler(output_path=str(out / f"py_{memory}"),
                                                             python_memory=memory),
                                    lambda prof: timed_steps(step, steps, prof, warmup=5), lambda prof: prof.stop())

    variants = {"off": ours(False), "on": ours(True)}
    for v in variants.values():
        v()
    wall, _, start_stop = window_columns(interleave(variants, reps))
    return {"steps": steps, "reps": reps, "off": summary(wall["off"]), "on": summary(wall["on"]),
            "on_over_off": paired_ratio(wall["on"], wall["off"]),
            "start_stop_s": {"off": summary(start_stop["off"]), "on": summary(start_stop["on"])}}


def run(params: dict) -> dict:
    out = Path(params.get("out") or tempfile.mkdtemp(prefix="npuprof-bench-profmem-"))
    part = params.get("part", "python")
    t0 = time.perf_counter()
    result = {"mindspore": _mindspore, "tensorflow": _tensorflow, "python": _python}[part](params, out)
    result["seconds"] = time.perf_counter() - t0
    return result


if __name__ == "__main__":
    child_main(run)
