"""Jobs, not folders: the runs under a directory grouped by the data's own job identity.

A folder may hold several jobs (Level0/1/2 collections of one training, the demo's host, MindSpore and
TensorFlow runs, yesterday's and today's job); merging them would make one "rank 0" out of unrelated
runs. Two runs belong to one job when the data says so:

1. they name the same communication group (torch_npu/MindSpore name a group by its creation address and
   time, ``90.91.105.46%enp189s0f0_60000_0_1736410538306028``, so two jobs never share one);
2. they are windows of one Profiler (npuprof's ``profiler_id``; for older runs: the same host, pid and
   framework), or different ranks of one declared world recorded by one process;
3. they name no common group because one names none (torch_npu's Level0, or its communication files
   are missing), they come from the same tool and framework, say the same world size, have different
   ranks and ran at overlapping times; where a run's time span is unknown (killed before it stopped),
   ranks of one declared multi-rank world.

Two runs of the same rank from different processes are never one job. Each job is named by the folder
holding its runs, relative to the folder analysed.

Example::

    jobs = group_jobs(Path("./prof"), run_dirs_under(Path("./prof")))
    [(j.name, j.ranks) for j in jobs]         # [('text/level1', (0, 1)), ('db/level1', (0, 1))]
"""
from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import orjson

from ..errors import ProfilerConfigError, ProfilerDataError
from ..runinfo import OUTPUT_DIR, RunInfo, read_run_info


@dataclass(frozen=True)
class RunFacts:
    """What says which job a run belongs to (read cheaply: no event is parsed)."""

    run_dir: Path
    rank: int
    origin: str
    hostname: str
    pid: int
    world_size: int
    span_ns: Optional[tuple[int, int]]
    groups: frozenset[str]
    profiler_id: str = ""      # npuprof: one Profiler object (its windows)
    framework: str = ""


@dataclass(frozen=True)
class Job:
    """One job: its runs (every rank, every window) and a name for the user."""

    name: str
    runs: tuple[Path, ...]
    ranks: tuple[int, ...]


def run_facts(run_dir: Path, info: Optional[RunInfo] = None) -> RunFacts:
    """The facts of one run directory."""
    info = info or read_run_info(run_dir)
    own = info.raw.get("npuprof") if isinstance(info.raw.get("npuprof"), dict) else {}
    rank, world = info.rank, info.world_size
    if run_dir.is_file():                   # a trace file: its distributedInfo
        from ..readers.kineto import trace_distributed

        t_rank, t_world = trace_distributed(run_dir)
        rank, world = (t_rank if t_rank is not None else rank), (t_world or world)
    return RunFacts(run_dir=run_dir, rank=rank, origin=str(info.origin), hostname=info.hostname,
                    pid=info.pid, world_size=world, span_ns=_span_ns(info),
                    groups=frozenset(_groups(run_dir)), profiler_id=str(own.get("profiler_id") or ""),
                    framework=str(info.parameters.get("framework") or ""))


def _span_ns(info: RunInfo) -> Optional[tuple[int, int]]:
    raw = info.raw
    own = raw.get("npuprof") if isinstance(raw.get("npuprof"), dict) else None
    if own:      # a run stopped by a kill has no stop time: its span is unknown
        start, stop = own.get("start_time_ns"), own.get("stop_time_ns")
        return (start, stop) if isinstance(start, int) and isinstance(stop, int) else None
    start, end = raw.get("start_info"), raw.get("end_info")        # torch_npu / MindSpore
    if isinstance(start, dict) and isinstance(end, dict):
        t_end, mono_end, mono_start = (end.get("collectionTimeEnd"), end.get("MonotonicTimeEnd"),
                                       start.get("start_monotonic"))
        if all(isinstance(x, int) for x in (t_end, mono_end, mono_start)):
            return t_end - (mono_end - mono_start), t_end       # type: ignore[operator]
    return None


def _groups(run_dir: Path) -> set[str]:
    """The communication groups a run names, as group ids (the Ascend tools' hash of the name)."""
    from ..readers.ascend_db import group_id

    out: set[str] = set()
    if run_dir.is_file():
        return out
    comm = run_dir / OUTPUT_DIR / "communication.json"
    try:
        doc = _json_doc(comm.read_bytes()) if comm.is_file() else {}
    except (OSError, ValueError):
        doc = {}
    for kinds in (doc.values() if isinstance(doc, dict) else ()):
        for ops in (kinds.values() if isinstance(kinds, dict) else ()):
            out.update(k.rpartition("@")[2] for k in (ops if isinstance(ops, dict) else ()) if "@" in k)
    for db in sorted((run_dir / OUTPUT_DIR).glob("ascend_*_profiler_*.db")):
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
            try:
                rows = con.execute("SELECT DISTINCT s.value FROM COMMUNICATION_OP c "
                                   "JOIN STRING_IDS s ON s.id = c.groupName").fetchall()
            finally:
                con.close()
        except sqlite3.Error:
            continue
        out.update(group_id(str(name)) for (name,) in rows if name)
    return out


def _json_doc(data: bytes) -> object:
    """A JSON document, decoded by orjson (a rank's communication.json: 4x faster than json, once per rank
    before any worker starts), by json where orjson declines it (NaN, which Python's json writes)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data.decode("utf-8"))


def _same_job(a: RunFacts, b: RunFacts) -> bool:
    if a.groups & b.groups:
        return True
    one_process = a.hostname == b.hostname and a.pid == b.pid and a.pid and a.framework == b.framework
    if a.profiler_id and b.profiler_id:
        if a.profiler_id == b.profiler_id:
            return True
    elif one_process:
        return True
    if one_process and a.rank != b.rank and a.world_size == b.world_size > 1:
        return True      # one process recording several ranks of one world, one after the other
    if (a.groups and b.groups) or a.rank == b.rank or a.origin != b.origin or a.framework != b.framework:
        return False      # (one naming no group at all: its communication files missing, or Level0)
    if a.world_size != b.world_size:
        return False
    if a.span_ns is None or b.span_ns is None:     # no time to compare: ranks of one declared world
        return a.world_size > 1
    return a.span_ns[0] <= b.span_ns[1] and b.span_ns[0] <= a.span_ns[1]


@dataclass(frozen=True)
class JobScan:
    """The jobs of a folder's runs and the runs no job takes, from one reading of each run's facts."""

    root: Path
    jobs: tuple[Job, ...]
    unplaced: tuple[tuple[Path, str], ...]      # (run, why): its profiler_info unreadable, or no rank

    def choose(self, job: Optional[str] = None) -> Job:
        """The one job to analyse: the only one, or the one named ``job``.

        Several jobs and no choice is an error listing them (never a merge).
        """
        jobs, root = self.jobs, self.root
        if not jobs:
            raise ProfilerDataError(root, "holds no profiling run with a rank")
        listing = "; ".join(f"{j.name!r} (ranks {','.join(map(str, j.ranks))}: {len(j.runs)} runs)" for j in jobs)
        if job is None:
            if len(jobs) > 1:
                raise ProfilerConfigError("job", None, f"one of the {len(jobs)} jobs found under {root}: {listing}",
                                          hint="runs of different jobs are never merged; choose one with --job NAME "
                                               "or point at its folder")
            return jobs[0]
        for j in jobs:
            if j.name == job:
                return j
        raise ProfilerConfigError("job", job, f"one of the jobs found under {root}: {listing}")


def scan_jobs(root: Path, run_dirs: Sequence[Path]) -> JobScan:
    """The jobs the runs ``run_dirs`` (found under ``root``) make, in the order of their first run, and the
    runs among them that no job takes (a profiler_info that cannot be read, no rank), each run's facts
    read once. A job analysed without those runs is partial (:mod:`npuprof.quality`)."""
    from .ranks import rank_of

    facts, unplaced = [], []
    for d in run_dirs:
        try:
            f = run_facts(Path(d))
        except ProfilerDataError as e:
            unplaced.append((Path(d), f"its profiler_info cannot be read ({e.problem})"))
            continue
        facts.append(f)
        if rank_of(Path(d)) is None:
            unplaced.append((Path(d), "records no rank"))
    parent = list(range(len(facts)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_group: dict[str, int] = {}      # rule 1 by lookup: runs naming one group are one job
    for i, f in enumerate(facts):
        for g in f.groups:
            parent[find(i)] = find(by_group.setdefault(g, i))
    for i in range(len(facts)):
        for j in range(i + 1, len(facts)):
            if find(i) != find(j) and _same_job(facts[i], facts[j]):    # a pair already joined: nothing to ask
                parent[find(i)] = find(j)
    members: dict[int, list[RunFacts]] = {}
    for i, f in enumerate(facts):
        members.setdefault(find(i), []).append(f)
    jobs = []
    for runs in members.values():
        common = Path(os.path.commonpath([str(f.run_dir.parent) for f in runs]))
        try:
            name = str(common.relative_to(root)) if common != root else "."
        except ValueError:
            name = str(common)
        jobs.append(Job(name=name, runs=tuple(f.run_dir for f in runs), ranks=tuple(sorted({f.rank for f in runs}))))
    names = [j.name for j in jobs]
    return JobScan(root=root, jobs=tuple(j if names.count(j.name) == 1 else Job(f"{j.name}#{k}", j.runs, j.ranks)
                                         for k, j in enumerate(jobs, 1)), unplaced=tuple(unplaced))


def group_jobs(root: Path, run_dirs: Sequence[Path]) -> list[Job]:
    """The jobs the runs ``run_dirs`` (found under ``root``) make, in the order of their first run."""
    return list(scan_jobs(root, run_dirs).jobs)


def unrecognised_runs(root: Path, run_dirs: Sequence[Path], found: Optional[Sequence[Path]] = None
                      ) -> list[tuple[Path, str]]:
    """The runs under ``root`` some reader understands that are not among ``run_dirs`` (no profiler_info:
    their rank and job unknown). ``found``: :func:`~npuprof.analysis.pipeline.find_runs` of ``root``, when
    the caller has it. The only part of the job scan that asks the reader plugins, so cluster analysis runs
    it while the workers summarise the ranks."""
    if found is None:
        from ..analysis.pipeline import find_runs

        try:
            found = find_runs(root)
        except ProfilerDataError:
            found = []
    listed = {Path(d).resolve() for d in run_dirs}
    return [(Path(d), "no profiler_info: its rank and job are unknown") for d in found
            if Path(d).resolve() not in listed and not (Path(d).is_dir() and Path(d).resolve() == root.resolve())]


def choose_job(root: Path, run_dirs: Sequence[Path], job: Optional[str] = None) -> Job:
    """The one job to analyse among ``run_dirs``: the only one, or the one named ``job`` (:meth:`JobScan.choose`)."""
    return scan_jobs(root, run_dirs).choose(job)
