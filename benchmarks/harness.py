"""Measurement helpers shared by the benchmark children.

- :func:`interleave` runs variants A, B, ... in rotating order, repetition by
  repetition, so that drift of a noisy machine hits every variant alike;
- :func:`summary` and :func:`paired_ratio` turn samples into median and
  min–max; ratios are taken per repetition (A_i / B_i), then summarised;
- :func:`rss_bytes`, :func:`peak_rss_bytes`, :class:`RssSampler` read
  ``/proc/self/status``;
- :func:`child_main` / :func:`run_child` are the protocol between
  ``benchmarks/run.py`` and a benchmark module run in its own interpreter:
  the child prints one ``BENCH-RESULT {json}`` line.

Example::

    samples = interleave({"bare": lambda: time_loop(f0), "rf": lambda: time_loop(f1)}, reps=7)
    print(summary(samples["rf"]), paired_ratio(samples["rf"], samples["bare"]))
"""
from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Optional

RESULT_TAG = "BENCH-RESULT "
HERE = Path(__file__).resolve().parent


def interleave(variants: dict[str, Callable[[], Any]], reps: int) -> dict[str, list]:
    """Call each variant once per repetition in a rotating order; returns samples per variant.

    Even repetitions rotate the given order, odd ones the reversed order, so
    over ``2 * len(variants)`` repetitions every variant runs first as often
    as the others and follows each other variant equally often: what one
    variant leaves behind (a native profiler's stop writing its files, freed
    memory, cold caches) does not always land on the same neighbour.

    A variant returns a number, or a tuple of numbers (e.g. wall and CPU time).
    """
    names = list(variants)
    out: dict[str, list] = {n: [] for n in names}
    for r in range(reps):
        order = names if r % 2 == 0 else names[::-1]
        k = (r // 2) % len(names)
        for name in order[k:] + order[:k]:
            out[name].append(variants[name]())
    return out


def column(samples: list, i: int) -> list[float]:
    """The i-th number of tuple samples."""
    return [float(s[i]) for s in samples]


class Clock:
    """Wall and process-CPU time of a block (CPU time counts every thread of the process).

    Example::

        with Clock() as c:
            work()
        c.wall, c.cpu
    """

    def __enter__(self) -> "Clock":
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.wall = time.perf_counter() - self._w
        self.cpu = time.process_time() - self._c


def timed_steps(step: Callable[[], Any], n: int, prof: Any = None,
                sync: Callable[[Any], Any] = lambda result: None, warmup: int = 0) -> tuple:
    """(wall, cpu) seconds per step over ``n`` calls of a training ``step``.

    With ``prof`` each step is wrapped in a ``record_function`` and followed
    by ``prof.step()``, as a profiled user loop is; ``sync`` waits for the
    result of one last step (asynchronous frameworks). ``warmup`` steps of
    the same loop run untimed first (then ``sync``): the transient right after
    a profiler starts (its first events, caches, the previous variant's
    leftovers) is a per-window cost, reported apart, not a per-step one. A
    garbage collection before the clock starts keeps the previous variant's
    garbage out of the timed steps.
    """
    import npuprof

    def loop(count: int) -> None:
        for _ in range(count):
            if prof is not None:
                with npuprof.record_function("train_step"):
                    step()
                prof.step()
            else:
                step()
        sync(step())

    if warmup:
        loop(warmup)
    gc.collect()
    with Clock() as c:
        loop(n)
    return c.wall / n, c.cpu / n


def timed_window(start: Callable[[], Any], run: Callable[[Any], tuple], stop: Callable[[Any], Any]) -> tuple:
    """``run(handle)``'s timing tuple plus the seconds ``start()`` and
    ``stop(handle)`` took together (a profiler's per-window cost).

    Example::

        timed_window(lambda: npuprof.Profiler(output_path=out), lambda p: timed_steps(step, 200, p),
                     lambda p: p.stop())
    """
    t0 = time.perf_counter()
    handle = start()
    started = time.perf_counter() - t0
    try:
        res = run(handle)
    finally:
        t0 = time.perf_counter()
        stop(handle)
        stopped = time.perf_counter() - t0
    return tuple(res) + (started + stopped,)


def window_columns(samples: dict[str, list]) -> tuple[dict, dict, dict]:
    """Per variant: wall per step, CPU per step, start+stop seconds, from
    :func:`interleave` samples of ``(wall, cpu, start_stop)`` tuples."""
    return tuple({k: column(v, i) for k, v in samples.items()} for i in range(3))  # type: ignore[return-value]


def summary(samples: list[float]) -> dict:
    """Median, min, max and the samples themselves."""
    s = sorted(samples)
    return {"median": statistics.median(s), "min": s[0], "max": s[-1], "n": len(s), "samples": samples}


def paired_ratio(a: list[float], b: list[float]) -> dict:
    """Summary of the per-repetition ratios a_i / b_i."""
    return summary([x / y for x, y in zip(a, b) if y])


def _status_kb(field: str) -> int:
    with open("/proc/self/status", "rb") as fh:
        for line in fh:
            if line.startswith(field.encode()):
                return int(line.split()[1])
    return 0


def rss_bytes() -> int:
    return _status_kb("VmRSS:") * 1024


def peak_rss_bytes() -> int:
    """High-water mark of this process's RSS (VmHWM)."""
    return _status_kb("VmHWM:") * 1024


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False when not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class RssSampler:
    """Samples RSS every ``period`` s in a thread; ``max`` is the highest seen."""

    def __init__(self, period: float = 0.02) -> None:
        self.period = period
        self.max = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-rss")

    def _run(self) -> None:
        while not self._stop.is_set():
            self.max = max(self.max, rss_bytes())
            self.samples += 1
            self._stop.wait(self.period)

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.max = max(self.max, rss_bytes())


def timed(fn: Callable[[], Any]) -> float:
    """Wall seconds of one call."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def child_main(fn: Callable[[dict], dict]) -> None:
    """Entry of a benchmark module run as a script: JSON params in argv[1], result line on stdout."""
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    try:
        result = fn(params)
    except Exception as e:  # reported, not raised: the suite goes on with the other rows
        result = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
    sys.stdout.flush()
    print(RESULT_TAG + json.dumps(result, default=float), flush=True)


def run_child(module: str, params: Optional[dict] = None, timeout: float = 900,
              env: Optional[dict] = None) -> dict:
    """Run ``benchmarks/<module>.py`` in a fresh interpreter and return its result dict."""
    cmd = [sys.executable, str(HERE / f"{module}.py"), json.dumps(params or {})]
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", GLOG_v="3", TF_CPP_MIN_LOG_LEVEL="3",
                    PYTHONPATH=os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH", "")])))
    full_env.update(env or {})
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)
    except subprocess.TimeoutExpired:
        return {"error": f"{module} timed out after {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            result = json.loads(line[len(RESULT_TAG):])
            result.setdefault("child_seconds", time.perf_counter() - t0)
            return result
    return {"error": f"{module} exited {proc.returncode} without a result",
            "stderr": proc.stderr[-4000:], "stdout": proc.stdout[-2000:]}
