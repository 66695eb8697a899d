"""Analysis throughput on synthetic host raw data, and output size.

Modes (``params["mode"]``), each run in a fresh interpreter by ``run.py``:

- ``generate``: write a run directory of ``n`` synthetic host events
  (:mod:`synth`) under ``parent``;
- ``analyse``: time ``analyse_and_export(run_dir)`` end to end (raw files ->
  events -> every analyzer -> trace_view.json and every CSV), report events
  per second and the process's peak RSS (VmHWM, imports included), and the
  CPU time and peak RSS of its children (the trace rendered by a forked
  child: its RSS counts the event table it shares copy-on-write); with
  ``breakdown`` also time the phases separately (a second pass); with
  ``cpus`` (a list of core numbers) run pinned to those cores, as ``taskset -c`` does; with
  ``size`` measure trace_view.json bytes per event, plain and gzip (level 6),
  the speed of trace JSON encoding alone and of file writes here (plain into
  memory the page cache takes fresh, written behind, plain into memory just freed).
"""
from __future__ import annotations

import gzip
import os
import resource
import shutil
from pathlib import Path

from harness import Clock, child_main, peak_rss_bytes, rss_bytes


def generate(params: dict) -> dict:
    from synth import make_run

    parent = Path(params["parent"])
    parent.mkdir(parents=True, exist_ok=True)
    with Clock() as c:
        run_dir = make_run(parent, int(params["n"]))
    raw = sum(p.stat().st_size for p in (run_dir / "NPUPROF").iterdir())
    return {"run_dir": str(run_dir), "seconds": c.wall, "raw_bytes": raw}


def _write_speeds(directory: Path, total: int = 256 << 20) -> dict:
    """Bytes per second of buffered writes of large blocks into ``directory``, three ways in a row:
    plain into a new file; written behind as npuprof writes its long outputs
    (:class:`npuprof.fileio.WriteBehind`) into another new file, the first still there; plain again
    right after deleting both. The last lands in the page-cache memory the first two just gave back;
    on a VM that lets the host reclaim free memory, the first pays for memory the guest has not
    touched lately, as a plain write of an analysis's outputs does."""
    from npuprof.fileio import WriteBehind

    block = os.urandom(1 << 20) * 4
    speeds = {}
    paths = [directory / f".write_speed_{i}.tmp" for i in range(3)]
    for key, path in zip(("disk_write_bytes_per_s", "disk_write_behind_bytes_per_s", "disk_rewrite_bytes_per_s"),
                         paths):
        if key == "disk_rewrite_bytes_per_s":
            for p in paths[:2]:
                p.unlink()
        with Clock() as c:
            # WriteBehind(-1) is no file: it advises nothing (the two plain writes)
            with open(path, "wb") as fh, \
                    WriteBehind(fh.fileno() if key == "disk_write_behind_bytes_per_s" else -1) as behind:
                for _ in range(total // len(block)):
                    fh.write(block)
                    behind.update()
        speeds[key] = total / c.wall
    paths[2].unlink()
    return speeds


def analyse(params: dict) -> dict:
    if params.get("cpus"):   # pinned before numpy starts: the process and its forked children run on these cores
        os.sched_setaffinity(0, set(params["cpus"]))
    load_start = os.getloadavg()[0]
    base_rss = rss_bytes()
    with Clock() as c:
        from npuprof.analysis import pipeline
        from npuprof.events import is_constant_column
        from npuprof.export.writer import analyse_and_export
    import_s = c.wall
    run_dir = Path(params["run_dir"])
    shutil.rmtree(run_dir / "ASCEND_PROFILER_OUTPUT", ignore_errors=True)
    rss_after_import = rss_bytes()
    before = resource.getrusage(resource.RUSAGE_SELF)
    with Clock() as c:
        (run,) = analyse_and_export(run_dir)
    after = resource.getrusage(resource.RUSAGE_SELF)
    res = run.result
    n = len(res.events)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)   # the forked trace writer, once reaped
    # constant columns are views: no bytes per row
    table_bytes = sum(col.nbytes for col in res.events.cols.values() if not is_constant_column(col))
    out: dict = {"events": n, "table_bytes": table_bytes, "seconds": c.wall, "cpu_seconds": c.cpu,
                 "events_per_s": n / c.wall,
                 "peak_rss_bytes": peak_rss_bytes(), "rss_start_bytes": base_rss,
                 # kernel time: mostly faulting in fresh memory (the event table, the outputs' page cache)
                 "system_seconds": after.ru_stime - before.ru_stime + kids.ru_stime,
                 "user_seconds": after.ru_utime - before.ru_utime + kids.ru_utime,
                 "children_cpu_seconds": kids.ru_utime + kids.ru_stime,
                 "children_peak_rss_bytes": kids.ru_maxrss * 1024,
                 "rss_after_import_bytes": rss_after_import, "import_s": import_s,
                 "cpus": sorted(os.sched_getaffinity(0)), "load_start": load_start,
                 "outputs": {p.name: p.stat().st_size for p in run.outputs if p.exists()}}
    del run
    trace = run_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    del res
    if params.get("breakdown"):
        from npuprof.analysis.analyzer import registered_analyzers
        from npuprof.export.csvfiles import write_csv
        from npuprof.export.trace_json import write_trace

        phases = {}
        with Clock() as c:
            events, info, _ = pipeline.load_events(run_dir)
        phases["load_raw_and_sort"] = c.wall
        tables = {}
        with Clock() as c:
            for registered in registered_analyzers():
                tables[registered.analyzer.table] = registered.analyzer.compute(events)
        phases["analyzers"] = c.wall
        tmp = run_dir / "bench_tmp"
        with Clock() as c:
            write_trace(events, tmp / "trace_view.json", rank=0)
        phases["trace_json"] = c.wall
        trace_bytes = (tmp / "trace_view.json").stat().st_size
        with Clock() as c:
            for name, table in tables.items():
                write_csv(table, tmp / f"{name}.csv")
        phases["csv"] = c.wall
        shutil.rmtree(tmp)
        out["phases_s"] = phases
        out["trace_json_events_per_s"] = len(events) / phases["trace_json"]
        out["trace_json_bytes_per_s"] = trace_bytes / phases["trace_json"]
        del events, tables
    if params.get("size"):
        size = trace.stat().st_size
        n_trace = 0
        with open(trace, "rb") as fh:
            for line in fh:
                n_trace += line.startswith(b"{\"ph\"")
        gz = run_dir / "trace_view.json.gz"
        with Clock() as c:
            with open(trace, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 4 << 20)
        out["trace_bytes"] = size
        out["trace_events"] = n_trace
        out["trace_bytes_per_event"] = size / max(1, n_trace)
        out["gzip_bytes_per_event"] = gz.stat().st_size / max(1, n_trace)
        out["gzip_seconds"] = c.wall
        gz.unlink()
        out.update(_write_speeds(run_dir))
    return out


def run(params: dict) -> dict:
    return {"generate": generate, "analyse": analyse}[params.get("mode", "analyse")](params)


if __name__ == "__main__":
    child_main(run)
