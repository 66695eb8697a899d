"""Annotation cost: npuprof ``record_function`` / ``mstx.mark`` while profiling,
against a bare ``time.perf_counter_ns()`` pair and ``torch.profiler.record_function``.

Two figures per annotation, from the same sample:

- *enter+exit*: the wall time of a loop of ``n`` annotations divided by ``n``,
  what the annotated thread pays inline. ``n`` stays under the recorder's
  flush threshold, so the events are buffered (as torch keeps its events in
  memory until ``stop``);
- *amortised*: the same plus the deferred work per event. npuprof: an
  explicit ``flush()`` right after the loop, i.e. converting every buffered
  event to columns and writing it to the raw files (normally done when a
  buffer fills, or by the flusher thread). torch: leaving ``torch.profiler.profile`` (stopping and
  collecting its events).

Variants run interleaved, repetition by repetition.

Also measured, *sustained*: each annotation at full rate over 1M events while
profiling, per 50,000-event window, the conversion and writes included (the
recording thread writes each 30,000 events itself): the median window and the
worst one.

With ``sustained_only`` (and ``NPUPROF_PURE_PYTHON=1`` in its environment) the same sustained
figures for the Python fallback of the compiled hot paths.

Also measured: an idle ``npuprof.dynamic_profile.step()`` (a config watched,
no capture due), the per-step cost of leaving dynamic profiling on.

Also measured, as the floor any Python annotation pays: an empty loop, a
clock read, an empty Python call and an empty ``with`` block.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from harness import child_main, interleave, paired_ratio, summary

_perf = time.perf_counter_ns


def _per_iter(fn, n: int) -> float:
    t0 = _perf()
    fn(n)
    return (_perf() - t0) / n


def loop_empty(n: int) -> None:
    for _ in range(n):
        pass


def loop_clock_pair(n: int) -> None:
    p = time.perf_counter_ns
    for _ in range(n):
        p()
        p()


def _noop() -> None:
    return None


def loop_call(n: int) -> None:
    f = _noop
    for _ in range(n):
        f()


class _Empty:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> "_Empty":
        return self

    def __exit__(self, *exc: object) -> bool:
        return False


def loop_with_empty(n: int) -> None:
    for _ in range(n):
        with _Empty("x"):
            pass


def loop_record_function(n: int) -> None:
    from npuprof import record_function

    for _ in range(n):
        with record_function("step_part"):
            pass


def loop_mstx_mark(n: int) -> None:
    from npuprof import mstx

    for _ in range(n):
        mstx.mark("tick")


WINDOW = 50_000


def sustained(out: Path, n: int) -> dict:
    """Per-event cost at full rate over ``n`` events, everything included (conversion and
    writes run in the recording thread, the flusher's under the same GIL): one figure per
    50,000-event window; the median and the worst window per annotation."""
    import npuprof

    mstx = npuprof.mstx

    @npuprof.trace_api
    def traced() -> None:
        return None

    def mstx_range(k: int) -> None:
        start, end = mstx.range_start, mstx.range_end
        for _ in range(k):
            end(start("load"))

    def api(k: int) -> None:
        for _ in range(k):
            traced()

    results = {}
    for name, loop in (("record_function", loop_record_function), ("mstx_mark", loop_mstx_mark),
                       ("mstx_range", mstx_range),
                       ("trace_api", api)):
        prof = npuprof.Profiler(output_path=str(out / name), activities=["CPU"])
        try:
            windows = [_per_iter(loop, WINDOW) for _ in range(max(1, n // WINDOW))]
        finally:
            prof.stop()
        s = summary(windows)
        s["worst"] = s["max"]
        results[name] = s
    results["n"] = n
    results["window"] = WINDOW
    return results


def run(params: dict) -> dict:
    import npuprof
    from npuprof import recorder as rec_mod

    compiled = rec_mod._hotpath is not None   # NPUPROF_PURE_PYTHON=1 (or no build): the Python fallback
    if params.get("sustained_only"):
        out = Path(params.get("out") or tempfile.mkdtemp(prefix="npuprof-bench-ann-"))
        return {"sustained": sustained(out / "sustained", int(params.get("n_sustained", 1_000_000))),
                "compiled": compiled}
    reps = int(params.get("reps", 7))
    n = int(params.get("n", 25_000))          # under SELF_FLUSH_EVENTS: buffered, as torch does
    n_torch = int(params.get("n_torch", 20_000))
    out = Path(params.get("out") or tempfile.mkdtemp(prefix="npuprof-bench-ann-"))

    amortised: dict = {"record_function": [], "mstx_mark": [], "torch_record_function": []}

    def profiled(loop, key):
        def sample() -> float:
            prof = npuprof.Profiler(output_path=str(out / "npuprof"), activities=["CPU"])
            try:
                rec = rec_mod.active_recorder()
                t0 = _perf()
                loop(n)
                t1 = _perf()
                rec.flush()   # the deferred work: columns + raw files
                t2 = _perf()
                amortised[key].append((t2 - t0) / n)
                return (t1 - t0) / n
            finally:
                prof.stop()
        return sample

    def profiler_step() -> float:
        # one window from start to stop: each step() ends a recorded step (Recorder.add_step)
        prof = npuprof.Profiler(output_path=str(out / "npuprof_steps"), activities=["CPU"])
        try:
            step = prof.step
            t0 = _perf()
            for _ in range(n):
                step()
            return (_perf() - t0) / n
        finally:
            prof.stop()

    import npuprof.dynamic_profile as dp

    dp.init(out / "dynamic_cfg", poll_interval=3600)    # watching, no capture due: the idle path
    dyn_step = dp.step

    def dynamic_loop(k: int) -> None:
        for _ in range(k):
            dyn_step()

    variants = {
        "clock_pair": lambda: _per_iter(loop_clock_pair, n),
        "dynamic_idle_step": lambda: _per_iter(dynamic_loop, n),
        "profiler_step": profiler_step,
        "record_function": profiled(loop_record_function, "record_function"),
        "mstx_mark": profiled(loop_mstx_mark, "mstx_mark"),
        "record_function_idle": lambda: _per_iter(loop_record_function, n),
    }
    torch_info: dict = {}
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
        from torch.profiler import record_function as torch_rf

        torch_info["version"] = torch.__version__
        torch.set_num_threads(1)

        def torch_loop(k: int) -> None:
            for _ in range(k):
                with torch_rf("step_part"):
                    pass

        def torch_sample() -> float:
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                t0 = _perf()
                torch_loop(n_torch)
                t1 = _perf()
            amortised["torch_record_function"].append((_perf() - t0) / n_torch)
            torch_info["last_prof"] = prof
            return (t1 - t0) / n_torch

        torch_loop(1000)
        variants["torch_record_function"] = torch_sample
    except Exception as e:  # torch is a bench-only dependency
        torch_info["error"] = f"{type(e).__name__}: {e}"

    # warm up every path once (imports, first-use registration)
    for v in variants.values():
        v()
    for v in amortised.values():
        v.clear()
    samples = interleave(variants, reps)
    floors = interleave({"empty_loop": lambda: _per_iter(loop_empty, n),
                         "python_call": lambda: _per_iter(loop_call, n),
                         "with_empty": lambda: _per_iter(loop_with_empty, n)}, 5)
    res = {k: summary(v) for k, v in samples.items()}
    res.update({k: summary(v) for k, v in floors.items()})
    res.update({f"{k}_amortised": summary(v) for k, v in amortised.items() if v})
    res["rf_over_clock"] = paired_ratio(samples["record_function"], samples["clock_pair"])
    if "torch_record_function" in samples:
        res["torch_over_rf"] = paired_ratio(samples["torch_record_function"], samples["record_function"])
        res["torch_over_rf_amortised"] = paired_ratio(amortised["torch_record_function"],
                                                      amortised["record_function"])
        prof = torch_info.pop("last_prof", None)
        if prof is not None:
            path = out / "torch_trace.json"
            prof.export_chrome_trace(str(path))
            import json

            events = json.loads(path.read_text())["traceEvents"]
            torch_info["trace_bytes_per_event"] = path.stat().st_size / max(1, len(events))
            torch_info["trace_events"] = len(events)
    dp.finalize()
    res["sustained"] = sustained(out / "sustained", int(params.get("n_sustained", 1_000_000)))
    res["torch"] = torch_info
    res["compiled"] = compiled
    res["n"] = n
    res["n_torch"] = n_torch
    res["reps"] = reps
    res["pid"] = os.getpid()
    return res


if __name__ == "__main__":
    child_main(run)
