"""npuprof benchmark suite: one entry point (``make bench``).

Runs every benchmark, each in a fresh interpreter (so imports, allocator
state and peak RSS of one do not leak into another): annotation cost, host
run overhead, MindSpore and TensorFlow run overhead and analysis against
their own profilers, analysis throughput at 1M and 10M synthetic events,
collection memory while recording 10M events, output size, ``npuprof cluster``
against msprof-analyze on a real 2-rank job and a 64-rank copy of it, ``npuprof diff``
against HTA's TraceDiff and msprof-analyze compare, ``npuprof analyse`` of other tools' large traces
(Kineto, trace_view.json) against HTA's TraceAnalysis. Inside each
child, variants alternate repetition by repetition.

Writes ``benchmarks/results/latest.json`` and ``benchmarks/results/latest.md``, prints the table, and with ``--readme``
replaces the section between ``<!-- bench:start -->`` and
``<!-- bench:end -->`` of that file.

Example::

    .venv/bin/python benchmarks/run.py --readme README.md
    .venv/bin/python benchmarks/run.py --quick --only annotations,analysis
    .venv/bin/python benchmarks/run.py --only cluster,foreign --update --readme README.md
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import paired_ratio, run_child, summary  # noqa: E402
from report import build_rows, markdown, update_readme  # noqa: E402

SUITES = ("annotations", "host", "mindspore", "tensorflow", "analysis", "memory", "db", "cluster", "memcost", "diff",
          "foreign")
# numpy/BLAS on one thread: the host loop measures npuprof, not thread-pool jitter
SINGLE_THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def suite_of(key: str) -> str | None:
    """The suite whose results are stored under ``key`` of the results, None for the run's own entries."""
    if key in SUITES:
        return key
    if key == "host_sys":
        return "host"
    return "analysis" if key.startswith("analysis_") else None


def carry_over(results: dict, previous: dict, rerun: list[str]) -> None:
    """Put into ``results`` the suites of the ``previous`` run's results that are not ``rerun``, and note in
    ``results["measured_at"]`` when each suite in it was measured (a partial re-run updates its rows in the
    whole table, and the table says which run measured which rows)."""
    before = previous.get("measured_at") or {}
    measured = {s: results["started"] for s in rerun}
    for key, value in previous.items():
        suite = suite_of(key)
        if suite is not None and suite not in rerun:
            results[key] = value
            measured[suite] = before.get(suite, previous.get("started", "?"))
    results["measured_at"] = {s: measured[s] for s in SUITES if s in measured}


def machine() -> dict:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    import numpy

    info = {"cpu": cpu, "cores": os.cpu_count(), "mem_bytes": mem, "kernel": platform.release(),
            "python": platform.python_version(), "numpy": numpy.__version__,
            "virtualised": _virtualised()}
    info["summary"] = (f"{cpu}, {info['cores']} cores, {mem / 2**30:.0f} GB RAM"
                       f"{', ' + info['virtualised'] if info['virtualised'] else ''}, Linux {info['kernel']}, "
                       f"Python {info['python']}, numpy {info['numpy']}")
    return info


def _virtualised() -> str:
    try:
        out = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True, timeout=5).stdout.strip()
        if out and out != "none":
            return f"VM ({out})"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        if "hypervisor" in Path("/proc/cpuinfo").read_text():
            return "VM"
    except OSError:
        pass
    return ""


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_analysis(results: dict, work: Path, sizes: dict, reps: dict) -> None:
    for label, n in sizes.items():
        log(f"analysis: generating {n:,} synthetic events")
        gen = run_child("bench_analysis", {"mode": "generate", "n": n, "parent": str(work / label)})
        if "error" in gen:
            results[f"analysis_{label}"] = gen
            continue
        runs, fallback = [], []
        for r in range(reps[label]):
            extra = {"breakdown": True, "size": True} if (label == "1M" and r == reps[label] - 1) else {}
            log(f"analysis: {label} pass {r + 1}/{reps[label]}")
            runs.append(run_child("bench_analysis", {"mode": "analyse", "run_dir": gen["run_dir"], **extra}))
            if label == "10M" and r < 2:   # the numpy row renderer (the fallback), passes interleaved
                log(f"analysis: {label} with the Python fallback (NPUPROF_PURE_PYTHON=1), pass {r + 1}/2")
                fallback.append(run_child("bench_analysis", {"mode": "analyse", "run_dir": gen["run_dir"]},
                                          env={"NPUPROF_PURE_PYTHON": "1"}))
        cores = _cores_passes(gen["run_dir"], reps[f"{label}_cores"]) if f"{label}_cores" in reps else None
        ok = [x for x in runs if "error" not in x]
        if not ok:
            results[f"analysis_{label}"] = runs[0]
            continue
        res = {"events": ok[0]["events"], "table_bytes": ok[0]["table_bytes"], "raw_bytes": gen["raw_bytes"],
               "generate_s": gen["seconds"],
               "seconds": summary([x["seconds"] for x in ok]),
               "cpu_seconds": summary([x["cpu_seconds"] for x in ok]),
               "events_per_s": summary([x["events_per_s"] for x in ok]),
               "peak_rss_bytes": summary([x["peak_rss_bytes"] for x in ok]),
               "children_cpu_seconds": summary([x["children_cpu_seconds"] for x in ok]),
               "system_seconds": summary([x["system_seconds"] for x in ok]),
               "user_seconds": summary([x["user_seconds"] for x in ok]),
               "import_s": summary([x["import_s"] for x in ok]), "outputs": ok[-1]["outputs"]}
        for x in ok:
            for k in ("phases_s", "trace_json_events_per_s", "trace_json_bytes_per_s", "trace_bytes",
                      "trace_events", "trace_bytes_per_event", "gzip_bytes_per_event", "gzip_seconds",
                      "disk_write_bytes_per_s", "disk_write_behind_bytes_per_s", "disk_rewrite_bytes_per_s"):
                if k in x:
                    res[k] = x[k]
        fallback_ok = [x for x in fallback if "error" not in x]
        if fallback_ok:
            res["python_events_per_s"] = summary([x["events_per_s"] for x in fallback_ok])
            res["python_cpu_seconds"] = summary([x["cpu_seconds"] + x["children_cpu_seconds"] for x in fallback_ok])
        if cores is not None:
            res["cores"] = cores
        results[f"analysis_{label}"] = res
        shutil.rmtree(work / label, ignore_errors=True)


def _cores_passes(run_dir: str, reps: int) -> dict:
    """The same analysis pinned to one core and to two (``taskset -c 0`` / ``-c 0,1``), alternated pass by
    pass (the order swapped every other pair): seconds of each, and their paired ratio."""
    if len(os.sched_getaffinity(0)) < 2:
        return {"error": "one core only: no 1/2-core comparison"}
    one, two, loads = [], [], []
    for r in range(reps):
        order = ([0], [0, 1]) if r % 2 == 0 else ([0, 1], [0])
        for cpus in order:
            log(f"analysis: 10M pinned to cores {cpus}, pair {r + 1}/{reps}")
            x = run_child("bench_analysis", {"mode": "analyse", "run_dir": run_dir, "cpus": cpus})
            if "error" in x:
                return x
            (one if len(cpus) == 1 else two).append(x)
            loads.append(x["load_start"])
    return {"one_core_s": summary([x["seconds"] for x in one]), "two_cores_s": summary([x["seconds"] for x in two]),
            "speedup": paired_ratio([x["seconds"] for x in one], [x["seconds"] for x in two]),
            "peak_rss_bytes": summary([x["peak_rss_bytes"] for x in one + two]),
            "load_averages": loads}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--readme", type=Path, help="README to update between the bench markers")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="directory for the result files")
    ap.add_argument("--only", default="", help=f"comma-separated subset of {','.join(SUITES)}")
    ap.add_argument("--quick", action="store_true", help="small sizes and few repetitions (a smoke run)")
    ap.add_argument("--workdir", type=Path, help="scratch directory (default: a fresh temporary one)")
    ap.add_argument("--update", action="store_true",
                    help="with --only: keep the other suites' results from OUT/latest.json, so the table stays "
                         "whole and says which run measured each suite")
    args = ap.parse_args(argv)
    only = [s for s in args.only.split(",") if s] or list(SUITES)
    unknown = set(only) - set(SUITES)
    if unknown:
        ap.error(f"unknown suites {sorted(unknown)}; choose from {', '.join(SUITES)}")
    previous_file = args.out / "latest.json"
    if args.update and not args.only:
        ap.error("--update needs --only: a whole run replaces every suite")
    if args.update and not previous_file.is_file():
        ap.error(f"--update keeps the suites of {previous_file}, which does not exist: run the whole bench first")
    q = args.quick
    work = Path(args.workdir or tempfile.mkdtemp(prefix="npuprof-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    results: dict = {"started": time.strftime("%Y-%m-%d %H:%M %Z"), "machine": machine(), "quick": q,
                     "load_start": loadavg()}
    log(f"machine: {results['machine']['summary']}; load {results['load_start']}")
    try:
        if "annotations" in only:
            log("annotations: record_function / mstx.mark / torch.profiler.record_function")
            results["annotations"] = run_child("bench_annotations", {
                "reps": 3 if q else 15, "n": 10_000 if q else 25_000, "n_torch": 5_000 if q else 20_000,
                "n_sustained": 200_000 if q else 1_000_000,
                "out": str(work / "annotations")}, env=SINGLE_THREAD_ENV)
            log("annotations: sustained cost of the Python fallback (NPUPROF_PURE_PYTHON=1)")
            fallback = run_child("bench_annotations", {
                "sustained_only": True, "n_sustained": 200_000 if q else 1_000_000,
                "out": str(work / "annotations_python")}, env={**SINGLE_THREAD_ENV, "NPUPROF_PURE_PYTHON": "1"})
            if isinstance(results["annotations"], dict) and "sustained" in fallback:
                results["annotations"]["sustained_python"] = fallback["sustained"]
        if "host" in only:
            log("host overhead: numpy MLP loop, unprofiled / profiled / profiled + host_sys")
            host = run_child("bench_host", {"reps": 5 if q else 31, "steps": 20 if q else 40,
                                            "out": str(work / "host")}, env=SINGLE_THREAD_ENV)
            results["host"] = host
            if "host_sys" in host:
                results["host_sys"] = host.pop("host_sys")
        if "mindspore" in only:
            log("MindSpore: overhead (none / MindSpore's profiler / npuprof) and analysis time")
            results["mindspore"] = run_child("bench_mindspore", {
                "reps": 3 if q else 48, "steps": 10 if q else 20, "steps_analysis": 50 if q else 200, "op_threads": 1,
                "analysis_reps": 1 if q else 3, "out": str(work / "mindspore")}, timeout=1200)
        if "tensorflow" in only:
            log("TensorFlow: overhead (none / TF's profiler / npuprof) and XSpace -> trace")
            results["tensorflow"] = run_child("bench_tensorflow", {
                "reps": 3 if q else 60, "steps": 100 if q else 200, "steps_convert": 100 if q else 400,
                "convert_reps": 2 if q else 7, "out": str(work / "tensorflow")}, timeout=1200)
        if "analysis" in only:
            sizes = {"1M": 100_000 if q else 1_000_000, "10M": 300_000 if q else 10_000_000}
            # five 10M passes: a pass's kernel time swings 2-6 s with how much of the memory it touches the
            # VM's host has taken back meanwhile (14:13 run: 4.1, 6.2 and 7.6 s), so a median of three moved
            # with one pass
            # and three pairs pinned to one core / two cores: how much of the analysis uses the second core
            run_analysis(results, work / "analysis", sizes, {"1M": 2 if q else 3, "10M": 1 if q else 5,
                                                             "10M_cores": 1 if q else 3})
        if "db" in only:
            n_db = 100_000 if q else 10_000_000
            log(f"Ascend profiler database: writing {n_db:,} synthetic events")
            gen = run_child("bench_db", {"mode": "generate", "n": n_db, "parent": str(work / "db")})
            results["db"] = gen if "error" in gen else run_child("bench_db", {"mode": "write", "reps": 1 if q else 3,
                                                                                "run_dir": gen["run_dir"]})
            shutil.rmtree(work / "db", ignore_errors=True)
        if "cluster" in only:
            log("cluster: npuprof cluster vs msprof-analyze cluster, real 2-rank job and a 64-rank copy of it; "
                "--recompute on 1 and 2 workers and on Dask (32 small ranks, 16 of a user's size); the driver's serial "
                "part per rank, 32 to 256 ranks")
            results["cluster"] = run_child("bench_cluster", {
                "reps": 3 if q else 5, "reps_64": 3 if q else 5, "copies": 4 if q else 32,
                "scale_copies": 4 if q else 16, "scale_reps": 2 if q else 5,
                "heavy_copies": 1 if q else 8, "heavy_trace_view_copies": 2 if q else 60, "heavy_reps": 1 if q else 3,
                "serial_sizes": [8, 16] if q else [32, 64, 128, 256],
                "out": str(work / "cluster")}, timeout=3600)
        if "memcost" in only:
            log("memory profiling cost: profile_memory / python_memory on vs off (MindSpore, TensorFlow, Python)")
            part = {"reps": 3 if q else 9, "out": str(work / "memcost")}
            results["memcost"] = {
                "mindspore": run_child("bench_profile_memory", {**part, "part": "mindspore", "steps": 10 if q else 20},
                                       timeout=1800),
                "tensorflow_off": run_child("bench_profile_memory", {**part, "part": "tensorflow", "bfc": False,
                                                                      "steps": 50 if q else 200}, timeout=1200),
                "tensorflow_on": run_child("bench_profile_memory", {**part, "part": "tensorflow", "bfc": True,
                                                                     "steps": 50 if q else 200}, timeout=1200),
                "python": run_child("bench_profile_memory", {**part, "part": "python", "steps": 50 if q else 200}),
            }
        if "diff" in only:
            log("diff: npuprof diff vs HTA TraceDiff.compare_traces vs msprof-analyze compare, real pair and 1M pair")
            results["diff"] = run_child("bench_diff", {"n": 100_000 if q else 1_000_000, "reps": 1 if q else 3,
                                                       "slow_reps": 1, "out": str(work / "diff")}, timeout=3600)
        if "foreign" in only:
            log("other tools' traces: npuprof analyse of a Kineto trace (x25), a trace_view.json (x60) and CANN "
                "timelines (x40) built from real samples, vs HTA TraceAnalysis and msprof-analyze's own parsers")
            results["foreign"] = run_child("bench_foreign", {"reps": 1 if q else 3,
                                                             "kineto_copies": 3 if q else 25,
                                                             "trace_view_copies": 6 if q else 60,
                                                             "cann_copies": 4 if q else 40,
                                                             "out": str(work / "foreign")}, timeout=7200)
        if "memory" in only:
            log("collection memory: recording 10M events")
            results["memory"] = run_child("bench_memory", {"n": 500_000 if q else 10_000_000,
                                                           "out": str(work / "memory")})
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    results["duration_s"] = time.time() - t0
    if args.update:
        carry_over(results, json.loads(previous_file.read_text()), only)
    results["load_end"] = loadavg()
    ls, le = results["load_start"], results["load_end"]
    if ls and le and max(ls[0], le[0]) > 0.5 * (os.cpu_count() or 1):
        results["machine"]["load_note"] = (f"The machine was shared while measuring (load average "
                                           f"{ls[0]:.1f} at the start, {le[0]:.1f} at the end on "
                                           f"{os.cpu_count()} cores): expect wide ranges.")
    rows = build_rows(results)
    results["rows"] = rows
    table = markdown(results, rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(results, indent=1, default=str))
    (args.out / "latest.md").write_text(table)
    print()
    print(table)
    errors = {k: v["error"] for k, v in results.items() if isinstance(v, dict) and "error" in v}
    for k, e in errors.items():
        print(f"[bench] {k} failed: {e}", file=sys.stderr)
    if args.readme is not None:
        if update_readme(args.readme, table):
            log(f"updated the Performance section of {args.readme}")
        else:
            log(f"{args.readme} has no '<!-- bench:start -->' / '<!-- bench:end -->' markers; not changed")
    log(f"results: {args.out / 'latest.json'} ({results['duration_s'] / 60:.1f} min)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
