"""``npuprof cluster``: analyse every rank of a job, on a process pool or Dask.

Steps: find the ranks' run directories -> map :func:`summarise_rank` over the
ranks on the chosen executor -> detect slow ranks, align clocks, build the
cluster tables (driver, pure functions) -> write CSV/JSON/Parquet -> optional
per-rank traces (written by the workers) and a merged timeline of chosen
ranks. With ``tool_tables=True`` (``npuprof cluster`` without ``--recompute``)
a rank of another tool's run that holds that tool's own summary files is
summarised from them in the driver, without parsing its events
(:mod:`.tool_summary`); the other ranks go to the executor as before.
Output goes to ``<dir>/npuprof_cluster/`` unless ``output`` is given;
with Dask the workers must see the input and output paths (shared storage).
Workers are spawned processes: call this under ``if __name__ == "__main__":``
in a script (or use ``backend="serial"``).

Example::

    res = cluster_analyse("./prof", backend="dask")          # local Dask cluster
    res.slow["slow_ranks"], res.files
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

from ..errors import ProfilerConfigError, ProfilerDataError
from ..quality import DataQuality, QualityIssue
from ..readers.tool_summary_files import TOOL_FILES
from ..runinfo import CLUSTER_SUMMARY, OUTPUT_DIR
from ..export.filters import parse_duration_ns, parse_steps
from ..fileio import secure_mkdir
from .alignment import align_ranks
from .executors import Executor
from .outputs import FORMATS, write_json, write_tables
from .jobs import Job, choose_job, unplaced_runs
from .ranks import discover_ranks, parse_rank_list, ranks_phrase, run_dirs_under
from .slowrank import detect_slow_ranks
from .job_communication import cluster_communication, cluster_communication_matrix
from .tables import busy_times, cluster_tables
from .timeline import write_merged, write_rank_trace
from .tool_summary import OWN_RUN, tool_summary
from .worker import RankTask, rank_events, summarise_rank

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
                "data_quality": self.quality.to_json()}


def default_place(root: Path) -> Path:
    """Where a job's cluster outputs go when no output is given: ``root`` itself for npuprof's own runs; for
    another tool's job (its folders are read-only input) ``./npuprof_output/<root name>``, as the per-run
    outputs of such runs."""
    from ..analysis.pipeline import find_runs
    from ..export.writer import DEFAULT_OUTPUT
    from ..runinfo import RunOrigin, origin_of

    if all(origin_of(d) is RunOrigin.NPUPROF for d in find_runs(root)):
        return root
    return DEFAULT_OUTPUT / root.resolve().name


def cluster_analyse(path: Union[str, Path], output: Optional[Union[str, Path]] = None, backend: str = "process",
                    scheduler: Optional[str] = None, workers: Optional[int] = None, ranks: Any = None,
                    timeline_ranks: Any = None, steps: Any = None, min_dur: Any = 0, use_gzip: bool = False,
                    rank_traces: bool = False, align: str = "auto", formats: tuple = FORMATS,
                    progress: Optional[Callable[[str], None]] = None, job: Optional[str] = None,
                    tool_tables: bool = False) -> ClusterResult:
    """Analyse the ranks under ``path``; see the module doc. Bad arguments
    raise ProfilerConfigError before any work starts. ``tool_tables``: summarise another tool's ranks from
    that tool's own summary files where they are all there (see :mod:`.tool_summary`; such summaries carry
    no memory, host series or event count, which the HTML report shows: it leaves this False)."""
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
    run_dirs = run_dirs_under(root)
    the_job = choose_job(root, run_dirs, job)      # never two jobs merged into one set of ranks
    unplaced = unplaced_runs(root, run_dirs)       # before this analysis writes anything under root
    found = discover_ranks(path, rank_sel, run_dirs=the_job.runs)
    if tl_sel is not None:
        missing = sorted(set(tl_sel) - set(found))
        if missing:
            raise ProfilerConfigError("timeline_ranks", missing, f"ranks being analysed: {sorted(found)}")
    out_dir = Path(output) if output is not None else default_place(root) / OUTPUT_NAME
    tasks = [RankTask(rank=r, run_dirs=tuple(str(d) for d in dirs))
             for r, dirs in found.items()]
    say = progress or (lambda msg: None)
    fast: dict = {}
    parsed: dict = {}
    unused: dict = {}
    for t in tasks:
        if tool_tables:
            from_tables, why = tool_summary(t)
            if from_tables is not None:
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
    requested = Executor(backend, scheduler=scheduler, workers=workers)     # checks the arguments; starts nothing
    needs_workers = bool(rest) or rank_traces or bool(tl_sel)
    with (requested if needs_workers else Executor("serial")) as ex:
        if rest:
            say(f"summarising {len(rest)} ranks' events on {ex.description}")
        summaries = sorted(list(fast.values()) + ex.map(summarise_rank, rest), key=lambda s: s.rank)
        slow = detect_slow_ranks(busy_times(summaries))
        alignment = align_ranks(summaries, align)
        tables = cluster_tables(summaries, slow, alignment)
        communication = cluster_communication(summaries)
        matrix = cluster_communication_matrix(summaries)
        secure_mkdir(out_dir)
        say("writing tables")
        files = write_tables(tables, out_dir, tuple(formats))
        files.append(write_json(slow, out_dir / "slow_ranks.json"))
        files.append(write_json({"method": align, **alignment}, out_dir / "clock_alignment.json"))
        if communication:
            files.append(write_json(communication, out_dir / "cluster_communication.json"))
        if matrix:
            files.append(write_json(matrix, out_dir / "cluster_communication_matrix.json"))
        world = max([s.world_size for s in summaries] + [len(summaries)])
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
            merged = write_merged(parts, alignment,
                                  out_dir / ("merged_timeline.json" + (".gz" if use_gzip else "")), use_gzip)
            files.append(merged)
        desc = ex.description if needs_workers else "the tool's own tables (no worker started)"
    result = ClusterResult(output_dir=out_dir, summaries=summaries, tables=tables, slow=slow, alignment=alignment,
                           matrix=matrix, backend=desc, files=files, traces=traces, merged_timeline=merged,
                           seconds=time.perf_counter() - t0, job=the_job, tool_table_ranks=sorted(fast),
                           parsed=parsed, unused_tool_tables=unused, unplaced=unplaced)
    summary = result.summary()
    summary["warnings"] = {s.rank: s.warnings for s in summaries if s.warnings}
    # the backend and timing differ between runs; keep them out of the comparable tables
    result.files.append(write_json(summary, out_dir / CLUSTER_SUMMARY))
    return result


def _has_tool_tables(task: RankTask) -> bool:
    """True when a run of the rank holds some of its tool's summary files (so recomputing is a fallback)."""
    return any((Path(d) / OUTPUT_DIR / name).is_file() for d in task.run_dirs for name in TOOL_FILES)


def _write_trace_task(item: tuple, steps: Optional[list], min_dur_ns: int, use_gzip: bool, world: int) -> tuple:
    task, path = item
    return write_rank_trace(task, path, steps, min_dur_ns, use_gzip, world)
