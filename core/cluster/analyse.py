"""``npuprof cluster``: analyse every rank of a job, on a process pool or Dask.

Steps: find the ranks' run directories (the process pool's workers start
meanwhile) -> hand every rank to the chosen executor
(:func:`~.worker.summarise_packed`), merging each rank's packed summary as it
arrives (:mod:`.merge`) -> detect slow ranks, align clocks, build the cluster
tables (driver, pure functions) -> write CSV/JSON/Parquet -> optional
per-rank traces (written by the workers) and a merged timeline of chosen
ranks. With ``tool_tables=True`` (``npuprof cluster`` without ``--recompute``)
a rank of another tool's run that holds that tool's own summary files is
summarised from them in the driver, without parsing its events
(:mod:`.tool_summary`); the other ranks go to the executor as before.
Each parsed rank also runs every third-party summary analyzer
(:func:`~npuprof.analysis.analyzer.job_analyzers`), whose tables are merged by
rank as ``cluster_<table>`` (:func:`.tables.job_analyzer_tables`); a rank
summarised from the tool's tables has none, and its warning says so.
Output goes to ``<dir>/npuprof_cluster/`` unless ``output`` is given;
with Dask the workers must see the input paths (shared storage; the output path
too for per-rank traces, which they write); the tables are written by the driver. Workers are other processes (forked, or started by a fork
server that imports the main module): call this under
``if __name__ == "__main__":`` in a script (or use ``backend="serial"``).

Example::

    res = cluster_analyse("./prof", backend="dask")          # local Dask cluster
    res.slow["slow_ranks"], res.files
"""
from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

from ..analysis.analyzer import job_analyzers
from ..errors import ProfilerConfigError, ProfilerDataError
from ..quality import DataQuality, QualityIssue
from ..readers.tool_summary_files import TOOL_FILES
from ..runinfo import CLUSTER_SUMMARY, OUTPUT_DIR
from ..export.filters import parse_duration_ns, parse_steps
from ..fileio import secure_mkdir
from ..progress import ProgressCallback
from .alignment import align_ranks
from .executors import Executor
from .outputs import FORMATS, write_json, write_tables
from .jobs import Job, scan_jobs, unrecognised_runs
from .merge import ClusterMerge
from .ranks import discover_ranks, parse_rank_list, ranks_phrase, run_dirs_under
from .slowrank import detect_slow_ranks
from .job_communication import cluster_communication, cluster_communication_matrix
from .tables import cluster_tables, job_analyzer_tables
from .tool_summary import OWN_RUN, tool_summary
from .worker import RankTask, rank_events, summarise_packed, unpack_summary

log = logging.getLogger("npuprof")
OUTPUT_NAME = "npuprof_cluster"


@dataclass
class ClusterResult:
    """What :func:`cluster_analyse` computed and wrote."""

    output_dir: Path
    summaries: list
    tables: dict
    slow: dict
    alignment: dict
    matrix: dict
    backend: str
    files: list = field(default_factory=list)
    traces: list = field(default_factory=list)
    merged_timeline: Optional[Path] = None
    seconds: float = 0.0
    job: Optional[Job] = None
    tool_table_ranks: list = field(default_factory=list)    # ranks summarised from the tool's own tables
    parsed: dict = field(default_factory=dict)              # rank -> why its events were parsed
    unused_tool_tables: dict = field(default_factory=dict)  # rank -> why its tool's own tables could not be used
    unplaced: list = field(default_factory=list)            # (run, why) found under the folder, in no job
    analyzer_tables: list = field(default_factory=list)     # JobAnalyzerTable: third-party analyzers' job tables
    analyzer_warnings: list = field(default_factory=list)   # those analyzers' failures, the ranks they hit

    @property
    def quality(self) -> DataQuality:
        """The job's data-quality contract: every rank's issues, and each rank whose tool tables were there
        but not usable, so that its numbers are a recomputation (:mod:`npuprof.quality`)."""
        out = DataQuality(issues=[i for s in self.summaries for i in s.issues])
        for rank, why in sorted(self.unused_tool_tables.items()):
            out.add(QualityIssue(f"rank {rank}", f"the tool's own tables not used ({why}): its numbers are "
                                                 "npuprof's recomputation from the events read",
                                 (f"rank {rank} in every cluster table",)))
        for run, why in self.unplaced:
            out.add(QualityIssue(str(run), f"not analysed: {why}", ("its rank in every cluster table",)))
        out.found["ranks"] = [s.rank for s in self.summaries]
        return out

    def summary(self) -> dict:
        return {"output_dir": str(self.output_dir), "job": self.job.name if self.job else None,
                "ranks": [s.rank for s in self.summaries],
                "backend": self.backend, "slow_ranks": self.slow["slow_ranks"], "seconds": round(self.seconds, 3),
                "files": [str(p) for p in self.files],
                "traces": [{"rank": r, "path": p, "bytes": b, "events": n} for r, p, b, n in self.traces],
                "merged_timeline": str(self.merged_timeline) if self.merged_timeline else None,
                "tool_tables": list(self.tool_table_ranks),
                "events_parsed": {str(r): why for r, why in sorted(self.parsed.items())},
                "analyzer_tables": {t.merged: {"analyzer": t.table, "plugin": t.plugin, "ranks": list(t.ranks)}
                                    for t in self.analyzer_tables},
                "analyzer_warnings": list(self.analyzer_warnings),
                "data_quality": self.quality.to_json()}


def default_place(root: Path, runs: Optional[list] = None) -> Path:
    """Where a job's cluster outputs go when no output is given: ``root`` itself for npuprof's own runs; for
    another tool's job (its folders are read-only input) ``./npuprof_output/<root name>``, as the per-run
    outputs of such runs. ``runs``: the runs under ``root`` (:func:`~npuprof.analysis.pipeline.find_runs`),
    when the caller has them."""
    from ..analysis.pipeline import find_runs
    from ..export.writer import DEFAULT_OUTPUT
    from ..runinfo import RunOrigin, origin_of

    if all(origin_of(d) is RunOrigin.NPUPROF for d in (find_runs(root) if runs is None else runs)):
        return root
    return DEFAULT_OUTPUT / root.resolve().name


def cluster_analyse(path: Union[str, Path], output: Optional[Union[str, Path]] = None, backend: str = "process",
                    scheduler: Optional[str] = None, workers: Optional[int] = None, ranks: Any = None,
                    timeline_ranks: Any = None, steps: Any = None, min_dur: Any = 0, use_gzip: bool = False,
                    rank_traces: bool = False, align: str = "auto", formats: tuple = FORMATS,
                    progress: Optional[Callable[[str], None]] = None, job: Optional[str] = None,
                    tool_tables: bool = False, rank_series: bool = True,
                    progress_bar: Optional[ProgressCallback] = None) -> ClusterResult:
    """Analyse the ranks under ``path``; see the module doc. Bad arguments
    raise ProfilerConfigError before any work starts. ``tool_tables``: summarise another tool's ranks from
    that tool's own summary files where they are all there (see :mod:`.tool_summary`; such summaries carry
    no memory, host series or event count, which the HTML report shows: it leaves this False).
    ``rank_series``: summarise each parsed rank's memory timeline and host counter series too (the HTML
    report's; no cluster table reads them, so ``npuprof cluster`` leaves them out of what its workers send).
    ``progress``: a line per phase; ``progress_bar`` (:func:`npuprof.progress.terminal_progress`): called
    ``(message, ranks done, ranks to parse)`` as each rank's summary arrives, on every backend."""
    t0 = time.perf_counter()
    rank_sel = parse_rank_list("ranks", ranks)
    tl_sel = parse_rank_list("timeline_ranks", timeline_ranks) if timeline_ranks is not None else None
    step_sel = parse_steps("steps", steps)
    min_dur_ns = parse_duration_ns("min_dur", min_dur)
    if align not in ("auto", "comm", "none"):
        raise ProfilerConfigError("align", align, "auto, comm, none")
    root = Path(path)
    if not root.is_dir():
        raise ProfilerDataError(root, "does not exist or is not a directory")
    requested = Executor(backend, scheduler=scheduler, workers=workers)     # checks the arguments; starts nothing
    analyzers = job_analyzers()       # the third-party analyzers each rank runs (their tables merged below)
    timings = DriverTimings()
    with contextlib.ExitStack() as stack:
        ex: Optional[Executor] = None
        if not tool_tables:     # every rank is parsed: the workers start while the ranks are found
            ex = stack.enter_context(requested)
        run_dirs = run_dirs_under(root)
        scan = scan_jobs(root, run_dirs)
        the_job = scan.choose(job)        # never two jobs merged into one set of ranks
        found = discover_ranks(path, rank_sel, run_dirs=the_job.runs)
        if tl_sel is not None:
            missing = sorted(set(tl_sel) - set(found))
            if missing:
                raise ProfilerConfigError("timeline_ranks", missing, f"ranks being analysed: {sorted(found)}")
        tasks = [RankTask(rank=r, run_dirs=tuple(str(d) for d in dirs), series=rank_series,
                          analyzers=tuple((a.analyzer.table, a.plugin) for a in analyzers))
                 for r, dirs in found.items()]
        say = progress or (lambda msg: None)
        fast: dict = {}
        parsed: dict = {}
        unused: dict = {}
        for t in tasks:
            if tool_tables:
                from_tables, why = tool_summary(t)
                if from_tables is not None:
                    if analyzers:
                        from_tables.analyzer_warnings.append(
                            f"summarised from the tool's own tables: the tables of analyzers "
                            f"{', '.join(repr(a.analyzer.table) for a in analyzers)} need its events and are left "
                            "out (--recompute parses them)")
                    fast[t.rank] = from_tables
                    continue
            else:
                why = "tool tables not used (recompute)"
            parsed[t.rank] = why
            if tool_tables and why != OWN_RUN and _has_tool_tables(t):    # another tool's tables, there but unusable
                unused[t.rank] = why
            log.info("npuprof cluster: rank %d: parsing its events (%s)", t.rank, why)
        if fast:
            say(f"{ranks_phrase(list(fast))}: summaries from the tool's own tables "
                f"({', '.join(TOOL_FILES)}; --recompute parses their events)")
        rest = [t for t in tasks if t.rank not in fast]
        needs_workers = bool(rest) or rank_traces or bool(tl_sel)
        if ex is None:
            ex = stack.enter_context(requested if needs_workers else Executor("serial"))
        timings.mark("found", t0)
        merge = ClusterMerge()
        for s in fast.values():
            merge.add(s)
        if rest:
            say(f"summarising {len(rest)} ranks' events on {ex.description}")
            if progress_bar is not None:
                progress_bar(f"summarising ranks on {ex.description}", 0, len(rest))
        folder: Optional[FolderRuns] = None
        for done, (_, packed) in enumerate(ex.as_completed(summarise_packed, rest), 1):
            if folder is None:     # while the other ranks run; before this analysis writes anything under root
                timings.mark("first_rank", t0)
                folder = FolderRuns.of(root, run_dirs, scan, output)
                _import_writers(tuple(formats))
            merge.add(unpack_summary(packed))
            timings.received_bytes += len(packed)
            if progress_bar is not None:
                progress_bar(f"rank {merge.last_rank} summarised", done, len(rest))
        timings.mark("last_rank", t0)
        if folder is None:
            folder = FolderRuns.of(root, run_dirs, scan, output)
        unplaced, out_dir = folder.unplaced, folder.out_dir
        summaries = merge.summaries()
        slow = detect_slow_ranks(merge.busy)
        alignment = align_ranks(summaries, align)
        matrix = cluster_communication_matrix(summaries)
        tables = cluster_tables(summaries, slow, alignment, matrix)
        merged, analyzer_tables, analyzer_warnings = job_analyzer_tables(summaries, analyzers)
        tables.update(merged)
        communication = cluster_communication(summaries)
        secure_mkdir(out_dir)
        say("writing tables")
        # cluster_communication.json and cluster_communication_matrix.json are msprof-analyze's files of those
        # names (they replaced the tables' JSON records, which are not encoded only to be overwritten)
        files_json = {"cluster_communication": communication, "cluster_communication_matrix": matrix}
        files = write_tables(tables, out_dir, tuple(formats), json_elsewhere=tuple(k for k, v in files_json.items() if v))
        files.append(write_json(slow, out_dir / "slow_ranks.json"))
        files.append(write_json({"method": align, **alignment}, out_dir / "clock_alignment.json"))
        for name, doc in files_json.items():
            if doc:
                files.append(write_json(doc, out_dir / f"{name}.json"))
        world = max([s.world_size for s in summaries] + [len(summaries)])
        timings.mark("written", t0)
        traces: list = []
        if rank_traces:
            say("writing per-rank traces")
            suffix = ".pt.trace.json" + (".gz" if use_gzip else "")
            paths = [str(out_dir / "traces" / f"rank{t.rank}{suffix}") for t in tasks]
            secure_mkdir(out_dir / "traces")
            traces = [tuple(x) for x in ex.map(_write_trace_task, list(zip(tasks, paths)), step_sel, min_dur_ns,
                                                 use_gzip, world)]
        merged = None
        if tl_sel:
            say(f"merging the timeline of ranks {tl_sel}")
            chosen = [t for t in tasks if t.rank in set(tl_sel)]
            parts = ex.map(rank_events, chosen, step_sel, min_dur_ns)
            from .timeline import write_merged

            merged = write_merged(parts, alignment,
                                  out_dir / ("merged_timeline.json" + (".gz" if use_gzip else "")), use_gzip)
            files.append(merged)
        desc = ex.description if needs_workers else "the tool's own tables (no worker started)"
    result = ClusterResult(output_dir=out_dir, summaries=summaries, tables=tables, slow=slow, alignment=alignment,
                           matrix=matrix, backend=desc, files=files, traces=traces, merged_timeline=merged,
                           seconds=time.perf_counter() - t0, job=the_job, tool_table_ranks=sorted(fast),
                           parsed=parsed, unused_tool_tables=unused, unplaced=unplaced,
                           analyzer_tables=analyzer_tables,
                           analyzer_warnings=_rank_warnings(summaries) + analyzer_warnings)
    summary = result.summary()
    summary["driver"] = timings.to_json(len(rest), time.perf_counter() - t0)
    summary["warnings"] = {s.rank: s.warnings for s in summaries if s.warnings}
    # the backend and timing differ between runs; keep them out of the comparable tables
    result.files.append(write_json(summary, out_dir / CLUSTER_SUMMARY))
    return result


@dataclass(frozen=True)
class FolderRuns:
    """What the reader plugins say of the folder analysed (its one walk): the runs no job takes, and where
    the outputs go when no output was given."""

    unplaced: list
    out_dir: Path

    @classmethod
    def of(cls, root: Path, run_dirs: list, scan: Any, output: Any) -> "FolderRuns":
        from ..analysis.pipeline import find_runs

        try:
            runs = find_runs(root)
        except ProfilerDataError:
            runs = []
        out_dir = Path(output) if output is not None else default_place(root, runs) / OUTPUT_NAME
        return cls(list(scan.unplaced) + unrecognised_runs(root, run_dirs, runs), out_dir)


@dataclass
class DriverTimings:
    """Where the driver (this process) spent one analysis: wall seconds from the start to the ranks found
    (job scan, discovery, tool tables), to the first and the last rank's summary received, to the tables
    written; its CPU seconds (all its threads) at those points; the bytes of summaries received. Its serial
    part is what does not overlap the workers: up to ``found``, and after the last summary."""

    found: float = 0.0
    first_rank: float = 0.0
    last_rank: float = 0.0
    written: float = 0.0
    cpu_start: float = field(default_factory=time.process_time)    # the process's start-up (imports) before
    cpu_found: float = 0.0
    cpu_last_rank: float = 0.0
    cpu_written: float = 0.0
    received_bytes: int = 0

    def mark(self, phase: str, t0: float) -> None:
        """Record the wall time at the end of ``phase`` (found, first_rank, last_rank, written) and, but for
        first_rank, this process's CPU time."""
        setattr(self, phase, time.perf_counter() - t0)
        if phase != "first_rank":
            setattr(self, f"cpu_{phase}", time.process_time())

    def to_json(self, ranks: int, total: float) -> dict:
        r = lambda x: round(x, 3)       # noqa: E731
        return {"ranks_parsed": ranks, "found_s": r(self.found), "first_rank_s": r(self.first_rank),
                "last_rank_s": r(self.last_rank), "tables_written_s": r(self.written), "total_s": r(total),
                "after_last_rank_s": r(self.written - self.last_rank),
                "cpu_before_s": r(self.cpu_start), "cpu_to_found_s": r(self.cpu_found),
                "cpu_found_s": r(self.cpu_found - self.cpu_start), "cpu_while_ranks_run_s": r(self.cpu_last_rank - self.cpu_found),
                "cpu_after_last_rank_s": r(self.cpu_written - self.cpu_last_rank),
                "summary_bytes": self.received_bytes, "process_cpu_s": r(time.process_time()),
                "children_cpu_s": _children_cpu()}


def _children_cpu() -> Optional[float]:
    """CPU seconds of this process's children that have ended: the pool's (or the local Dask cluster's
    forked) workers once the executor is closed, with whatever children the caller had ended before; None
    where the platform does not say. The whole process's CPU less this and ``process_cpu_s`` is its exit."""
    try:
        import resource
    except ImportError:         # Windows has no resource module
        return None
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(usage.ru_utime + usage.ru_stime, 3)


def _rank_warnings(summaries: list) -> list[str]:
    """Each rank's analyzer warnings once, with the ranks it came from (``ranks 0-15: analyzer ...``)."""
    ranks: dict[str, list[int]] = {}
    for s in summaries:
        for w in s.analyzer_warnings:
            ranks.setdefault(w, []).append(s.rank)
    return [f"{ranks_phrase(r)}: {w}" for w, r in ranks.items()]


def _import_writers(formats: tuple) -> None:
    """Import what the steps after the last rank use (pyarrow's Parquet writer, numpy's masked arrays that
    ``np.median`` loads on first use: a tenth of a second each; the CSV writer, whose number tables are built
    on import), while the workers still parse ranks."""
    import numpy.ma  # noqa: F401

    if "csv" in formats:
        from ..export import csvfiles  # noqa: F401

    if "parquet" in formats:
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            pass        # write_tables says so, naming the parameter


def _has_tool_tables(task: RankTask) -> bool:
    """True when a run of the rank holds some of its tool's summary files (so recomputing is a fallback)."""
    return any((Path(d) / OUTPUT_DIR / name).is_file() for d in task.run_dirs for name in TOOL_FILES)


def _write_trace_task(item: tuple, steps: Optional[list], min_dur_ns: int, use_gzip: bool, world: int) -> tuple:
    task, path = item
    from .timeline import write_rank_trace      # the trace writer: imported where traces are written

    return write_rank_trace(task, path, steps, min_dur_ns, use_gzip, world)
