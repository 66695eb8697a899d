"""Ascend profiler database write speed and memory: ``export_type`` db alone.

Run in a fresh interpreter per measurement (``run.py``-style child, or by hand)::

    python benchmarks/bench_db.py '{"mode": "generate", "n": 10000000, "parent": "/tmp/benchdb"}'
    python benchmarks/bench_db.py '{"mode": "write", "run_dir": "<printed run_dir>"}'

``write`` analyses the run (not timed), then times
:func:`npuprof.export.ascend_db_writer.write_ascend_db` and
:func:`npuprof.export.analysis_db.write_analysis_db` on it ``reps`` times
(default 3) and reports events per second of the median write, each write's
wall and CPU seconds and load average, and the process's peak RSS (whole
process: the analysed events included). Target: >= 1M events/s at 10M events, peak
RSS < 1 GB.
"""
from __future__ import annotations

import os
import shutil
import statistics
from pathlib import Path

from harness import Clock, child_main, peak_rss_bytes


def generate(params: dict) -> dict:
    from synth import make_run

    parent = Path(params["parent"])
    parent.mkdir(parents=True, exist_ok=True)
    return {"run_dir": str(make_run(parent, int(params["n"])))}


def write(params: dict) -> dict:
    from npuprof.analysis.pipeline import analyse_run
    from npuprof.export.analysis_db import write_analysis_db
    from npuprof.export.ascend_db_writer import write_ascend_db

    run_dir = Path(params["run_dir"])
    out = run_dir / "ASCEND_PROFILER_OUTPUT"
    shutil.rmtree(out, ignore_errors=True)
    result = analyse_run(run_dir)
    rss_before = peak_rss_bytes()
    n = len(result.events)
    walls, cpus, loads = [], [], []
    db = out
    # several writes of the same analysed run, the median reported: one write's wall time moves with
    # whatever else the machine does meanwhile
    for _ in range(int(params.get("reps", 3))):
        shutil.rmtree(out, ignore_errors=True)
        loads.append(os.getloadavg()[0])
        with Clock() as c:
            db = write_ascend_db(result, out)
            write_analysis_db(result, out)
        walls.append(c.wall)
        # CPU seconds of every thread (rows built on one, stored by SQLite on another): on a shared machine
        # the wall time moves with the other load, this far less
        cpus.append(c.cpu)
    seconds = statistics.median(walls)
    return {"events": n, "seconds": seconds, "cpu_seconds": statistics.median(cpus), "events_per_s": n / seconds,
            "seconds_passes": walls, "cpu_seconds_passes": cpus, "load_start": loads[0], "load_starts": loads,
            "db_bytes": db.stat().st_size, "peak_rss_bytes": peak_rss_bytes(),
            "peak_rss_before_write_bytes": rss_before}


def main(params: dict) -> dict:
    return {"generate": generate, "write": write}[params["mode"]](params)


if __name__ == "__main__":
    child_main(main)
