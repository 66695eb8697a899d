"""Collection memory: RSS growth of a process recording ``n`` events.

One Profiler records ``n`` events from a tight loop (``record_function``
ranges, with an ``mstx.mark`` every 10th iteration), as fast as Python can
produce them: the worst case for the buffers, since the flusher must keep up
with the producer. A thread samples RSS every 20 ms. Growth = highest RSS
while recording minus RSS just before the loop (the Profiler already
started); also reported: RSS after stop, the events the raw files hold, and
the recording rate.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

from harness import RssSampler, child_main, rss_bytes


def run(params: dict) -> dict:
    import npuprof
    from npuprof import mstx, record_function
    from npuprof.rawstore import read_raw_dir

    n = int(params.get("n", 10_000_000))
    out = Path(params.get("out") or tempfile.mkdtemp(prefix="npuprof-bench-mem-"))
    names = [f"layer{i}" for i in range(16)]

    def record(k: int) -> None:
        for i in range(k // 10):
            for j in range(9):
                with record_function(names[j]):
                    pass
            mstx.mark("tick")

    # warm-up window: first-use allocations (thread buffers, numpy, writer) are not growth
    with npuprof.Profiler(output_path=str(out / "warm"), activities=["CPU"]):
        record(200_000)
    prof = npuprof.Profiler(output_path=str(out / "run"), activities=["CPU"])
    time.sleep(0.1)
    before = rss_bytes()
    with RssSampler(0.02) as sampler:
        t0 = time.perf_counter()
        record(n)
        loop_s = time.perf_counter() - t0
        prof.stop()
        total_s = time.perf_counter() - t0
    after = rss_bytes()
    run_dir = prof.saved_runs[0]
    table, report = read_raw_dir(run_dir / "NPUPROF")
    raw_bytes = sum(p.stat().st_size for p in (run_dir / "NPUPROF").glob("*.npr"))
    return {"n": n, "rss_before_bytes": before, "rss_max_bytes": sampler.max, "rss_after_bytes": after,
            "growth_bytes": sampler.max - before, "rss_samples": sampler.samples,
            "events_written": len(table), "raw_bytes": raw_bytes, "loop_s": loop_s, "total_s": total_s,
            "events_per_s": n / total_s}


if __name__ == "__main__":
    child_main(run)
