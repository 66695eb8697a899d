"""``npuprof cluster`` against msprof-analyze ``cluster -m all`` on real torch_npu data, whole processes.

Two jobs:

* the real 2-rank torch_npu job (Ascend910B, text export) in ``../shared/realdata`` that
  ``tests/interop/test_interop_cluster_real.py`` runs both tools on; before anything is timed, the two tools'
  ``cluster_step_trace_time``, ``cluster_communication`` and ``cluster_communication_matrix`` are
  compared with that test's own checks (imported, not copied); the row says "equal tables: yes" only
  when they passed in this run;
* a 64-rank job generated here from those two ranks (:func:`make_job`): each real rank directory copied
  32 times as ranks 0..63, never committed (a temporary directory, removed afterwards).

npuprof runs as a user runs it (``npuprof cluster DIR -o OUT``): on these torch_npu jobs its default
reads each rank's own step_trace_time.csv, op_statistic.csv and communication*.json (the fast path of
``core/cluster/tool_summary.py``, as msprof-analyze reads them) instead of parsing the 176 MB of events;
``--recompute`` (not timed here) parses every rank's events.

Each tool runs on its own copy of the job in a temporary directory (msprof-analyze writes
``cluster_analysis_output`` into its input; npuprof writes to ``-o``); the outputs are removed before
every run. Both are timed as whole processes (interpreter start, imports, every output), alternating
run by run in balanced orders (``harness.interleave``); one untimed run of each comes first.

Scaling of ``npuprof cluster JOB --recompute`` (every rank's events parsed, as npuprof's own runs always
are), on a copy of the real job of ``scale_ranks`` ranks (:func:`scaling`): ``--workers 1`` against
``--workers 2`` of the process pool, and the local Dask cluster against the process pool at equal workers,
alternated run by run, the 1-minute load average recorded with each run (the machine may be shared;
``python benchmarks/bench_cluster.py '{"only": "scaling", "scale_reps": 7}'`` measures these rows alone,
``"scale_copies": 8, "scale_trace_view_copies": 60`` on 16 ranks of a user's size: :func:`heavier_ranks`);
the same rows on those 16 ranks of a user's size (``heavy_copies``, ``heavy_trace_view_copies``: each rank's
trace_view.json 116 MB, 653k events, what a user's rank holds, where the fixed start-up weighs less);
then the driver's serial part per rank from 32 to 256 ranks (:func:`serial_per_rank`: the first
``max(sizes)`` ranks generated once, smaller jobs hard-linked subsets of them, medians of three runs each), from the driver's own
accounting in ``cluster_summary.json`` (``driver``: its CPU seconds from the analysis's start to the first
rank handed out and after the last summary arrives - the interpreter's start-up and imports before it
reported apart, being the same for every job -, wall seconds of the same, bytes of summaries received).

Peak memory of a process *tree* (both tools start worker processes: npuprof a spawn pool,
msprof-analyze a forked multiprocessing pool): a thread samples every ``period`` s (20 ms) the sum of
PSS (``/proc/<pid>/smaps_rollup``: each page shared by k processes counted 1/k) over the tool's process
and all its descendants (``/proc/<pid>/task/*/children``, recursively) - the memory the tree holds. A
plain RSS sum (also recorded, ``tree_rss_bytes``) would count the pages a forked pool shares with its
parent once per worker (for msprof-analyze's 8 processes here: a 675 MB RSS sum, 527 MB of PSS). The exact
largest single process comes from ``os.wait4``'s ``ru_maxrss`` (the child and its reaped descendants,
a max not a sum). The sampled sum can miss a peak shorter than the period.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

from harness import child_main, interleave, paired_ratio, summary
from npuprof.readers.ascend_ops import INVALID_RANK      # msprof's "no peer"
from npuprof.readers.ascend_output import OUTPUT_DIR      # the tables' folder

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
REALDATA = REPO.parent / "shared" / "realdata"      # as tests/realdata.py
MSPROF = REPO / ".venv-interop" / "bin" / "msprof-analyze"
GROUP_SIZE = 8                       # the real job's world: its matrices name ranks 0..7

# epoch timestamps in the Ascend text files: µs (16 digits, ``1736408883709301.270``) and ns
# (19 digits: profiler_info's collectionTimeEnd, the trace's flow ids made of ns times)
_US_RE = re.compile(rb"(?<![\d.])1[6-9]\d{14}(?![\d])")
_NS_RE = re.compile(rb"(?<![\d.])1[6-9]\d{17}(?![\d])")
_TRACE_RANK_RE = re.compile(rb'("(?:src|dst) rank": )(\d+)')
_LINK_RE = re.compile(rb'"(\d+)-(\d+)"(\s*:)')


def real_job() -> tuple[Optional[Path], str]:
    """The real 2-rank job of tests/interop/test_interop_cluster_real.py, or None and why not."""
    sys.path.insert(0, str(TESTS))
    try:
        from cluster_real import JOB
    except Exception as e:   # the tests' helpers need numpy (the dev extras)
        return None, f"tests/cluster_real.py not importable: {type(e).__name__}: {e}"
    path = REALDATA / JOB
    if not path.is_dir():
        return None, f"real job {JOB} not found under {REALDATA}"
    return path, ""


# -- the 64-rank job --------------------------------------------------------------------------------

def _peer(x: int, src: int, new: int) -> int:
    """The real job's rank ``x`` seen from rank ``src``, for the copy of ``src`` that is rank ``new``:
    rotated into ``new``'s block of 8 (``src`` itself becomes ``new``), msprof's "no peer" kept."""
    if x == INVALID_RANK or x >= GROUP_SIZE:
        return x
    block = new - new % GROUP_SIZE
    return block + (new % GROUP_SIZE + x - src) % GROUP_SIZE


def rewrite_rank(data: bytes, src: int, new: int, shift_us: int, links: bool) -> bytes:
    """One file of rank ``src`` as the copy that is rank ``new``, its clock shifted by ``shift_us``."""
    data = _US_RE.sub(lambda m: str(int(m.group()) + shift_us).encode(), data)
    data = _NS_RE.sub(lambda m: str(int(m.group()) + shift_us * 1000).encode(), data)
    data = _TRACE_RANK_RE.sub(lambda m: m.group(1) + str(_peer(int(m.group(2)), src, new)).encode(), data)
    if links:   # communication_matrix.json: "src-dst" link keys
        data = _LINK_RE.sub(lambda m: b'"%d-%d"%s' % (_peer(int(m.group(1)), src, new),
                                                       _peer(int(m.group(2)), src, new), m.group(3)), data)
    return data


def make_job(src_job: Path, dest: Path, copies: int = 32, seed: int = 0, jitter_us: int = 500) -> dict:
    """Write ``copies`` copies of each real rank directory under ``dest`` as ranks 0..(copies * ranks - 1).

    Copy ``k`` of real rank ``r`` (of ``R``) is rank ``k * R + r``: directory ``rank{n}_ascend_pt``,
    ``profiler_info_{n}.json`` with ``"rank_id": n``; the peer ranks of its communication (the matrix's
    ``"src-dst"`` link keys, the trace's ``src rank``/``dst rank``) rotated into the new rank's block of 8
    (see :func:`_peer`). Every epoch timestamp of every text file of the copy (µs and ns: trace_view.json,
    kernel_details.csv, the memory CSVs, communication.json's start times, profiler_info's end time) is
    shifted by one random offset per rank, whole µs in ``[-jitter_us, jitter_us]`` (a per-host clock
    offset: durations and the order of a rank's events are unchanged). Not rewritten: the device ids
    (``NPU:1``) and the communication group (one group for all ranks, as the tools group ranks by it).
    Returns ``{"ranks", "bytes", "shift_us": {rank: µs}}``.
    """
    rng = random.Random(seed)
    real = sorted((p for p in src_job.iterdir() if p.is_dir() and p.name.endswith("_ascend_pt")),
                  key=lambda p: _real_rank(p))
    ranks = [_real_rank(p) for p in real]
    assert ranks == list(range(len(ranks))), ranks
    dest.mkdir(parents=True, exist_ok=True)
    shifts, total = {}, 0
    for k in range(copies):
        for r, run in zip(ranks, real):
            n = k * len(ranks) + r
            shift = rng.randint(-jitter_us, jitter_us)
            shifts[n] = shift
            out = dest / f"rank{n}_ascend_pt"
            for path in sorted(run.rglob("*")):
                rel = path.relative_to(run)
                if path.is_dir():
                    (out / rel).mkdir(parents=True, exist_ok=True)
                    continue
                target = out / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                if path.name == f"profiler_info_{r}.json":
                    info = json.loads(path.read_text(encoding="utf-8"))
                    info["rank_id"] = n
                    end = info.get("end_info") or {}
                    if isinstance(end.get("collectionTimeEnd"), int):
                        end["collectionTimeEnd"] += shift * 1000
                    target = out / f"profiler_info_{n}.json"
                    data = json.dumps(info, indent=4).encode()
                elif path.suffix in (".json", ".csv"):
                    data = rewrite_rank(path.read_bytes(), r, n, shift,
                                        links=path.name == "communication_matrix.json")
                else:
                    data = path.read_bytes()
                target.write_bytes(data)
                total += len(data)
    return {"ranks": copies * len(ranks), "bytes": total, "shift_us": shifts}


def _real_rank(run: Path) -> int:
    (info,) = run.glob("profiler_info_*.json")
    return int(json.loads(info.read_text(encoding="utf-8"))["rank_id"])


# -- running a tool -------------------------------------------------------------------------------

def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except OSError:
            continue
    return out


def _rss_pss(pid: int) -> tuple[int, int]:
    """(RSS, PSS) bytes of one process, (0, 0) once it is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith(b"Pss:"):
                    pss = int(line.split()[1]) * 1024
                    break
    except (OSError, IndexError, ValueError):
        pass
    return rss, pss


def run_tree(cmd: list[str], cwd: Path, log: Path, env: Optional[dict] = None, period: Optional[float] = 0.02,
             timeout: float = 1800) -> dict:
    """Run ``cmd`` to its end: wall s, CPU s (user+sys, reaped descendants included), peak RSS of the
    process tree (sampled sums of RSS and of PSS every ``period`` s), the largest single process's peak RSS
    (``ru_maxrss``), the number of processes seen. ``period=None`` samples nothing (the tree's figures are
    None): each sample reads every process's ``smaps_rollup``, a walk of its page tables under its memory
    map's lock that stalls its page faults, and on two cores the sampler takes a core's share from the run
    (two cluster workers reading 116 MB ranks: 7.85 s sampled every 20 ms, 5.66 s every 1 s)."""
    peak, seen = [0, 0], set()
    done = threading.Event()
    with open(log, "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env)

        def sample() -> None:
            while not done.is_set():
                pids = _tree(proc.pid)
                seen.update(pids)
                mem = [_rss_pss(p) for p in pids]
                peak[0] = max(peak[0], sum(m[0] for m in mem))
                peak[1] = max(peak[1], sum(m[1] for m in mem))
                done.wait(period)

        sampler = threading.Thread(target=sample, daemon=True)
        if period is not None:
            sampler.start()
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        timer.cancel()
        done.set()
        if period is not None:
            sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... exited {proc.returncode}: "
                           f"{log.read_text(errors='replace')[-2000:]}")
    sampled = period is not None
    return {"seconds": wall, "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "tree_rss_bytes": peak[0] if sampled else None, "tree_pss_bytes": peak[1] if sampled else None,
            "max_process_rss_bytes": usage.ru_maxrss * 1024, "processes": len(seen) if sampled else None}


class Tools:
    """The two commands on one job, each on its own copy under ``root``."""

    def __init__(self, job: Path, root: Path, msprof: bool) -> None:
        self.root = root
        self.ms_job, self.np_job, self.np_out = root / "ms" / "job", root / "np" / "job", root / "np" / "out"
        shutil.copytree(job, self.np_job)
        self.msprof = msprof
        if msprof:
            shutil.copytree(job, self.ms_job)
        self.env = dict(os.environ, PYTHONWARNINGS="ignore")
        self.runs: dict[str, list] = {"npuprof": [], "msprof": []}

    def npuprof(self) -> float:
        shutil.rmtree(self.np_out, ignore_errors=True)
        res = run_tree([sys.executable, "-m", "npuprof", "cluster", str(self.np_job), "-o", str(self.np_out),
                        "--quiet"], cwd=self.np_job.parent, log=self.root / "np.log", env=self.env)
        self.runs["npuprof"].append(res)
        return res["seconds"]

    def msprof_analyze(self) -> float:
        shutil.rmtree(self.ms_job / "cluster_analysis_output", ignore_errors=True)
        res = run_tree([str(MSPROF), "cluster", "-d", str(self.ms_job), "-m", "all"], cwd=self.ms_job.parent,
                       log=self.root / "ms.log", env=self.env)
        self.runs["msprof"].append(res)
        return res["seconds"]

    def outputs(self) -> tuple[Path, Path]:
        return self.ms_job / "cluster_analysis_output", self.np_out


def compare(outputs: tuple[Path, Path], comm: bool = True) -> dict:
    """tests/cluster_real.py's checks on the two outputs: {table: "equal" or the failure}."""
    import cluster_real as t

    checks = {"cluster_step_trace_time": lambda: t.check_step_trace_time_equal(outputs)}
    if comm:
        for name in ("cluster_communication.json", "cluster_communication_matrix.json"):
            checks[name.rsplit(".", 1)[0]] = lambda name=name: t.check_communication_files_equal(outputs,
                                                                                                      name)
    out = {}
    for table, check in checks.items():
        text = io.StringIO()
        try:
            with contextlib.redirect_stdout(text):
                check()
            out[table] = "equal"
        except (AssertionError, OSError, KeyError, ValueError) as e:
            out[table] = f"differ: {type(e).__name__}: {str(e)[:300]}"
        if text.getvalue().strip():
            out[f"{table}_note"] = text.getvalue().strip()[:600]
    return out


def _mem(runs: list, key: str) -> dict:
    return summary([r[key] for r in runs])


# what msprof-analyze's cluster reads of a text export: each rank's own precomputed tables
PRECOMPUTED = ("step_trace_time.csv", "communication.json", "communication_matrix.json")


def job_bytes(job: Path) -> dict:
    """Bytes of the job: all of it, and the per-rank precomputed tables msprof-analyze aggregates."""
    files = [p for p in job.rglob("*") if p.is_file()]
    return {"bytes": sum(p.stat().st_size for p in files),
            "precomputed_bytes": sum(p.stat().st_size for p in files
                                     if p.name in PRECOMPUTED and p.parent.name == OUTPUT_DIR),
            "ranks": sum(1 for p in job.iterdir() if p.is_dir() and p.name.endswith("_ascend_pt"))}


def measure(job: Path, root: Path, reps: int, msprof: bool, comm_check: bool) -> dict:
    sizes = job_bytes(job)
    tools = Tools(job, root, msprof)
    variants = {"npuprof": tools.npuprof}
    if msprof:
        variants["msprof"] = tools.msprof_analyze
    for v in variants.values():     # untimed first run of each; its outputs are compared
        v()
    res: dict = dict(sizes)
    try:
        np_summary = json.loads((tools.np_out / "cluster_summary.json").read_text())
        res["npuprof_backend"] = np_summary["backend"]
        res["npuprof_tool_table_ranks"] = len(np_summary["tool_tables"])   # ranks not parsed (the fast path)
    except (OSError, ValueError, KeyError):
        res["npuprof_backend"] = "?"
    if msprof:
        res["equal"] = compare(tools.outputs(), comm=comm_check)
    for k in tools.runs:
        tools.runs[k].clear()
    samples = interleave(variants, reps)
    for name, runs in tools.runs.items():
        if not runs:
            continue
        res[name] = {"seconds": summary(samples[name]), "cpu_seconds": _mem(runs, "cpu_seconds"),
                     "tree_rss_bytes": _mem(runs, "tree_rss_bytes"),
                     "tree_pss_bytes": _mem(runs, "tree_pss_bytes"),
                     "max_process_rss_bytes": _mem(runs, "max_process_rss_bytes"),
                     "processes": max(r["processes"] for r in runs)}
    if msprof:
        res["speedup"] = paired_ratio(samples["msprof"], samples["npuprof"])
    shutil.rmtree(root, ignore_errors=True)
    return res


def _recompute(job: Path, out: Path, log: Path, workers: int, backend: str = "process") -> dict:
    """One ``npuprof cluster JOB --recompute`` as a whole process: run_tree's figures, the load average
    when it started, and the driver's own accounting."""
    shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()[0]
    res = run_tree([sys.executable, "-m", "npuprof", "cluster", str(job), "-o", str(out), "--recompute", "--quiet",
                    "--workers", str(workers), "--backend", backend], cwd=job.parent, log=log,
                   env=dict(os.environ, PYTHONWARNINGS="ignore"), period=None)     # time and CPU only
    res["load1"] = load
    res["driver"] = json.loads((out / "cluster_summary.json").read_text())["driver"]
    shutil.rmtree(out, ignore_errors=True)
    return res


def heavier_ranks(job: Path, work: Path, copies: int) -> None:
    """Every rank of ``job`` given the real Level1 rank's trace_view.json repeated ``copies`` times
    (:func:`foreign_traces.trace_view_repeated`): ranks of a user's size (x60: 116 MB, 653k events), the
    same job around them: the full run's ``scaling_heavy`` rows (``heavy_trace_view_copies``) and, with
    ``"only": "scaling"``, ``scale_trace_view_copies``."""
    from foreign_traces import trace_view_repeated

    big = trace_view_repeated(work, copies) / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    for rank in job.iterdir():
        target = rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
        target.unlink()
        os.link(big, target)
    shutil.rmtree(work)   # the links keep the file


def scaling(job: Path, work: Path, reps: int) -> dict:
    """Process pool ``--workers 1`` / ``--workers 2`` and local Dask ``--workers 2``, alternated."""
    runs: dict[str, list] = {"process_1": [], "process_2": [], "dask_2": []}
    work.mkdir(parents=True, exist_ok=True)

    def variant(name: str, workers: int, backend: str):
        def go() -> float:
            r = _recompute(job, work / f"out_{name}", work / f"{name}.log", workers, backend)
            runs[name].append(r)
            return r["seconds"]
        return go

    variants = {"process_1": variant("process_1", 1, "process"), "process_2": variant("process_2", 2, "process"),
                "dask_2": variant("dask_2", 2, "dask")}
    for v in variants.values():     # untimed first run of each
        v()
    for k in runs:
        runs[k].clear()
    samples = interleave(variants, reps)
    out: dict = {"ranks": job_bytes(job)["ranks"], "bytes": job_bytes(job)["bytes"], "reps": reps}
    for name, rs in runs.items():
        out[name] = {"seconds": summary(samples[name]), "cpu_seconds": _mem(rs, "cpu_seconds"),
                     "load1": [round(r["load1"], 2) for r in rs],
                     "driver_serial_cpu_s": summary([_serial_cpu(r) for r in rs]),     # start-up and exit included
                     "driver_exit_cpu_s": summary([_exit_cpu(r) for r in rs]),
                     "first_rank_s": summary([r["driver"]["first_rank_s"] for r in rs]),
                     "after_last_rank_s": summary([r["driver"]["after_last_rank_s"] for r in rs])}
    out["workers_2_vs_1"] = paired_ratio(samples["process_1"], samples["process_2"])    # speedup, > 1 is faster
    out["dask_vs_process_2"] = paired_ratio(samples["dask_2"], samples["process_2"])    # < 1.25 is the goal
    # the same from CPU seconds, which a shared machine's load does not stretch as it stretches wall time:
    # serial S = the driver's CPU before the first rank is handed out, after the last summary and at its exit
    # (start-up included), parallel P = its workers' CPU, D = the driver's CPU while the ranks run (merging the
    # summaries; Dask's scheduler and client run in it too); on 2 free cores one worker leaves D the other
    # core, two share both with it: T(1) = S + P1, T(2) = S + (P2 + D) / 2 (every process of the tree is
    # counted: the local Dask cluster's workers are the driver's children too)
    def model(name: str) -> dict:
        rs = runs[name]
        s = statistics.median(_serial_cpu(r) for r in rs)
        d = statistics.median(r["driver"]["cpu_while_ranks_run_s"] for r in rs)
        p = statistics.median(_workers_cpu(r) for r in rs)
        two = s + (p + d) / 2 if name != "process_1" else s + p
        return {"serial_cpu_s": round(s, 3), "driver_while_ranks_cpu_s": round(d, 3), "workers_cpu_s": round(p, 3),
                "two_core_s": round(two, 3)}
    one = model("process_1")
    out["cpu_model"] = {"process_1": one}
    dask_m, proc_m = model("dask_2"), model("process_2")
    out["cpu_model"]["dask_2"], out["cpu_model"]["process_2"] = dask_m, proc_m
    out["cpu_model"]["workers_2_vs_1"] = round(one["two_core_s"] / proc_m["two_core_s"], 3)
    out["cpu_model"]["dask_vs_process_2"] = round(dask_m["two_core_s"] / proc_m["two_core_s"], 3)
    return out


def _workers_cpu(run: dict) -> float:
    """The workers' CPU seconds of one run: the driver's ended children (``children_cpu_s``), else the process
    tree's CPU less the driver's as it wrote its summary (its exit then counted with the workers)."""
    d = run["driver"]
    return d["children_cpu_s"] if d.get("children_cpu_s") is not None else run["cpu_seconds"] - d["process_cpu_s"]


def _exit_cpu(run: dict) -> float:
    """The driver's CPU after it wrote its summary (closing, the interpreter's exit): the tree's CPU less the
    driver's at its summary and its workers'; 0 where the workers' CPU is not known apart."""
    d = run["driver"]
    if d.get("children_cpu_s") is None:
        return 0.0
    return max(0.0, run["cpu_seconds"] - d["process_cpu_s"] - d["children_cpu_s"])


def _serial_cpu(run: dict) -> float:
    """The driver's CPU that overlaps no worker: to the first rank handed out, after the last summary, its exit."""
    d = run["driver"]
    return d["cpu_to_found_s"] + d["cpu_after_last_rank_s"] + _exit_cpu(run)


def serial_per_rank(src_job: Path, work: Path, sizes: tuple, reps: int = 3) -> dict:
    """The driver's serial part per rank for jobs of ``sizes`` ranks (``--workers 2``): each size run ``reps``
    times, the sizes in turn, medians (one run's few milliseconds a rank swing by a third on a shared
    machine)."""
    top = max(sizes)
    work.mkdir(parents=True, exist_ok=True)
    full = work / f"gen{top}"
    make_job(src_job, full, copies=top // 2)
    jobs = {top: full}
    for n in sizes:
        if n != top:
            jobs[n] = work / f"gen{n}"
            jobs[n].mkdir()
            for r in range(n):
                subprocess.run(["cp", "-al", str(full / f"rank{r}_ascend_pt"), str(jobs[n])], check=True)
    runs: dict = {n: [] for n in sorted(sizes)}
    for _ in range(reps):
        for n in runs:
            runs[n].append(_recompute(jobs[n], work / f"out{n}", work / f"serial{n}.log", 2))
    out: dict = {}
    med = statistics.median
    for n, rs in runs.items():
        drivers = [r["driver"] for r in rs]
        serial_ms = [1e3 * (d["cpu_found_s"] + d["cpu_after_last_rank_s"]) / n for d in drivers]   # start-up apart
        out[str(n)] = {"ranks": n, "runs": reps, "seconds": round(med(r["seconds"] for r in rs), 3),
                       "load1": round(med(r["load1"] for r in rs), 2), "driver": drivers[0],
                       "serial_cpu_ms_per_rank": round(med(serial_ms), 2),
                       "serial_cpu_ms_per_rank_runs": [round(x, 2) for x in serial_ms],
                       "startup_cpu_s": med(d["cpu_before_s"] for d in drivers),
                       "serial_wall_ms_per_rank": round(med(1e3 * (d["found_s"] + d["after_last_rank_s"]) / n
                                                            for d in drivers), 2),
                       "driver_cpu_ms_per_rank": round(med(1e3 * d["process_cpu_s"] / n for d in drivers), 2),
                       "summary_bytes_per_rank": drivers[0]["summary_bytes"] // n}
    for job in jobs.values():
        shutil.rmtree(job, ignore_errors=True)
    return out


def ensure_bytecode() -> dict:
    """Compile npuprof's modules to bytecode (``__pycache__``, as a wheel's install does) when any is missing or
    older than its source, so that no timed process compiles them: where PYTHONDONTWRITEBYTECODE is set (or
    a checkout was edited after ``make venv`` compiled it) every ``npuprof`` process would otherwise compile
    the modules it imports again, about 0.45 s of the driver's start-up on this machine, before any worker
    starts - a serial part that an installed npuprof does not have."""
    import compileall

    import npuprof

    # the package, and the framework integrations its plugins import (linked into it from the checkout's
    # integrations/, which compile_dir does not follow)
    dirs = [d for d in (Path(npuprof.__file__).resolve().parent, REPO / "integrations") if d.is_dir()]
    ok = all(compileall.compile_dir(str(d), quiet=1, workers=1) for d in dirs)
    return {"compiled": [str(d) for d in dirs], "compiled_ok": ok,
            "PYTHONDONTWRITEBYTECODE": bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))}


def msprof_version() -> str:
    try:
        out = subprocess.run([str(MSPROF.parent / "python"), "-c",
                              "import importlib.metadata as m; print(m.version('msprof-analyze'))"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
        return out or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def run(params: dict) -> dict:
    reps = int(params.get("reps", 5))
    reps_64 = int(params.get("reps_64", 3))
    copies = int(params.get("copies", 32))
    job, why = real_job()
    if job is None:
        return {"error": why}
    msprof = MSPROF.exists()
    res: dict = {"job": str(job.relative_to(REALDATA)), "cpus": os.cpu_count(), "msprof_available": msprof,
                 "reps": reps, "reps_64": reps_64,
                 "msprof_missing": "" if msprof else f"msprof-analyze not available: no {MSPROF} "
                                                      "(`make interop` creates .venv-interop)"}
    if msprof:
        res["msprof_version"] = msprof_version()
    res["bytecode"] = ensure_bytecode()
    work = Path(params.get("out") or tempfile.mkdtemp(prefix="npuprof-bench-cluster-"))
    if params.get("only") == "scaling":     # the 1-vs-2-worker and Dask-vs-pool rows alone
        try:
            make_job(job, work / "genscale", copies=int(params.get("scale_copies", 16)))
            heavier = int(params.get("scale_trace_view_copies", 0))
            if heavier:
                heavier_ranks(work / "genscale", work / "heavier", heavier)
            key = "scaling_heavy" if heavier else "scaling"     # the report labels the heavier rows by their key
            res[key] = scaling(work / "genscale", work / "scaling", int(params.get("scale_reps", 3)))
            if heavier:
                res[key]["trace_view_copies"] = heavier
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return res
    try:
        res["real"] = measure(job, work / "real", reps, msprof, comm_check=True)
        gen = make_job(job, work / "gen64", copies=copies)
        res["gen"] = {"ranks": gen["ranks"], "copies": copies, "bytes": gen["bytes"],
                      "shift_us_range": [min(gen["shift_us"].values()), max(gen["shift_us"].values())]}
        res["scaled"] = measure(work / "gen64", work / "scaled", reps_64, msprof, comm_check=True)
        shutil.rmtree(work / "gen64", ignore_errors=True)
        scale_copies = int(params.get("scale_copies", 16))
        make_job(job, work / "genscale", copies=scale_copies)
        res["scaling"] = scaling(work / "genscale", work / "scaling", int(params.get("scale_reps", 3)))
        shutil.rmtree(work / "genscale", ignore_errors=True)
        heavy = int(params.get("heavy_copies", 8))
        if heavy:     # the same rows on ranks of a user's size
            make_job(job, work / "genheavy", copies=heavy)
            tv = int(params.get("heavy_trace_view_copies", 60))
            heavier_ranks(work / "genheavy", work / "heavier", tv)
            res["scaling_heavy"] = scaling(work / "genheavy", work / "scaling_heavy", int(params.get("heavy_reps", 3)))
            res["scaling_heavy"]["trace_view_copies"] = tv
            shutil.rmtree(work / "genheavy", ignore_errors=True)
        sizes = tuple(int(x) for x in params.get("serial_sizes", (32, 64, 128, 256)))
        if sizes:
            res["serial_per_rank"] = serial_per_rank(job, work / "serial", sizes)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


if __name__ == "__main__":
    child_main(run)
