"""Run overhead of npuprof's host collectors on a pure Python/numpy training-like loop.

The loop is a two-layer MLP trained with hand-written numpy forward,
backward and SGD, batches drawn by a Python data loader, and the usual
instrumentation: ``record_function`` around data / forward / backward /
optimizer, the loader wrapped in ``trace_api``, an ``mstx.mark`` per step,
``prof.step()`` per step. Unprofiled = the same instrumented code with no
Profiler running (annotations inert); profiled = a default Profiler (CPU
activity); and a third variant adds host_sys sampling (cpu, mem at 50 Hz). Samples alternate, repetition by
repetition; only the steps are timed (start/stop reported apart).
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from harness import Clock, child_main, column, interleave, paired_ratio, summary


class Loader:
    """Python-side batching, like a simple dataset iterator."""

    def __init__(self, n: int, dim: int, classes: int, batch: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.x = rng.standard_normal((n, dim)).astype(np.float32)
        self.y = rng.integers(0, classes, n)
        self.batch = batch
        self.pos = 0

    def next_batch(self) -> tuple:
        if self.pos + self.batch > len(self.x):
            self.pos = 0
        sl = slice(self.pos, self.pos + self.batch)
        self.pos += self.batch
        return self.x[sl], self.y[sl]


def make_step(dim: int = 512, hidden: int = 1024, classes: int = 10, batch: int = 128):
    import npuprof
    from npuprof import mstx, record_function, trace_api

    rng = np.random.default_rng(1)
    w1 = (rng.standard_normal((dim, hidden)) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((hidden, classes)) * 0.05).astype(np.float32)
    loader = Loader(8192, dim, classes, batch)
    next_batch = trace_api(loader.next_batch, level="DataLoader", name="Loader.next_batch")
    lr = np.float32(0.01)

    def step() -> float:
        nonlocal w1, w2
        with record_function("data"):
            x, y = next_batch()
        with record_function("forward"):
            h = np.maximum(x @ w1, 0)
            logits = h @ w2
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            loss = float(-np.log(p[np.arange(len(y)), y] + 1e-9).mean())
        with record_function("backward"):
            g = p
            g[np.arange(len(y)), y] -= 1
            g /= len(y)
            gw2 = h.T @ g
            gh = g @ w2.T
            gh[h <= 0] = 0
            gw1 = x.T @ gh
        with record_function("optimizer"):
            w1 -= lr * gw1
            w2 -= lr * gw2
        mstx.mark("step done")
        return loss

    return step, npuprof


def run(params: dict) -> dict:
    reps = int(params.get("reps", 15))
    steps = int(params.get("steps", 40))
    out = Path(params.get("out") or tempfile.mkdtemp(prefix="npuprof-bench-host-"))
    step, npuprof = make_step()
    start_stop: list[float] = []

    def unprofiled() -> tuple:
        with Clock() as c:
            for _ in range(steps):
                step()
        return c.wall / steps, c.cpu / steps

    def profiled_with(**kwargs):
        def sample() -> tuple:
            t0 = time.perf_counter()
            prof = npuprof.Profiler(output_path=str(out), activities=["CPU"], **kwargs)
            t1 = time.perf_counter()
            with Clock() as c:
                for _ in range(steps):
                    step()
                    prof.step()
            t2 = time.perf_counter()
            prof.stop()
            start_stop.append((t1 - t0) + (time.perf_counter() - t2))
            return c.wall / steps, c.cpu / steps
        return sample

    profiled = profiled_with()
    profiled_sys = profiled_with(host_sys=["cpu", "mem"])
    for _ in range(20):
        step()
    profiled()
    profiled_sys()
    samples = interleave({"unprofiled": unprofiled, "profiled": profiled, "host_sys": profiled_sys}, reps)
    runs = sorted(p for p in out.iterdir() if p.is_dir())
    res = npuprof.analyse(runs[-1])[0]
    wall = {k: column(v, 0) for k, v in samples.items()}
    cpu = {k: column(v, 1) for k, v in samples.items()}

    def one(key: str) -> dict:
        return {"unprofiled": summary(wall["unprofiled"]), "profiled": summary(wall[key]),
                "ratio": paired_ratio(wall[key], wall["unprofiled"]),
                "cpu_unprofiled": summary(cpu["unprofiled"]), "cpu_profiled": summary(cpu[key]),
                "cpu_ratio": paired_ratio(cpu[key], cpu["unprofiled"]), "steps": steps, "reps": reps}

    out_res = one("profiled")
    out_res["host_sys"] = one("host_sys")
    out_res["start_stop_s"] = summary(start_stop)
    out_res["events_per_step"] = len(res.events) / steps
    return out_res


if __name__ == "__main__":
    child_main(run)
