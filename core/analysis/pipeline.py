"""Run directories -> event table -> analyzer tables. Writes nothing.

Parsing and analysis are one layer; writing files is another
(:mod:`npuprof.export.writer`). So commands that only read — ``npuprof show``,
``report``, ``cluster``, ``Profiler.key_averages()`` — call this module and
leave every file of the run as it was.

Example::

    results = analyse_path("./npuprof_data")      # a run or a folder of runs, any depth
    print(results[0].tables["op_statistic"].rows()[:5])
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence, Union

from ..errors import ProfilerDataError
from ..events import EventTable, release_free_memory, offset_corr
from ..fileio import forced_reading
from ..pages import ordinary_pages
from ..plugins.manager import get_plugin_host
from ..progress import PhaseCounter, ProgressCallback
from ..quality import DataQuality, QualityIssue
from ..rawstore import RAW_DIR
from ..runinfo import OUTPUT_DIR, RunInfo, is_npuprof_output, origin_of, read_run_info
from ..session import ParseContext
from ..readers.ascend_contract import tool_step_trace
from .analyzer import registered_analyzers
from .contract import check_against_tool, check_run_contract, leave_unmeasured_empty
from .result import AnalysisResult
from .table import Table
from .step_breakdown import assign_steps
from .steps import select_steps

log = logging.getLogger("npuprof")
MAX_DEPTH = 8   # how deep below the given folder runs are looked for
__all__ = ["OUTPUT_DIR", "AnalysisResult", "LoadedRun", "PendingTables", "RunAnalysis", "analyse_path", "analyse_run",
           "find_runs", "is_run_dir", "load_events", "load_run", "start_analysis", "analysis_phases"]


def analysis_phases() -> int:
    """The progress phases of analysing one run: parsing, then each registered analyzer."""
    return 1 + len(registered_analyzers())


def is_run_dir(path: Path, named: bool = False) -> bool:
    """True for a directory with profiler_info, or a directory or file a reader plugin claims
    (``named``: the folder the user named, see the ``npuprof_recognise_run`` hook)."""
    if path.is_dir() and any(path.glob("profiler_info*.json")):
        return True
    if not (path.is_dir() or path.is_file()):
        return False
    return any(bool(r) for _, r in get_plugin_host().call("npuprof_recognise_run", path=path, named=named))


def find_runs(path: Union[str, Path]) -> list[Path]:
    """The runs at ``path``: itself, or every run below it (any depth up to
    :data:`MAX_DEPTH`; a run's own sub-folders are not searched)."""
    root = Path(path)
    if not root.exists():
        raise ProfilerDataError(root, "does not exist")
    if is_run_dir(root, named=True):
        return [root]
    if not root.is_dir():
        raise ProfilerDataError(root, "is not a directory nor a trace file any reader understands")
    found: list[Path] = []
    _collect_runs(root, MAX_DEPTH, found)
    return found


def _collect_runs(folder: Path, depth: int, found: list[Path]) -> None:
    try:
        children = sorted(p for p in folder.iterdir() if not p.is_symlink())
    except OSError:
        return
    for child in children:
        if child.is_dir() and is_npuprof_output(child):
            continue
        if is_run_dir(child):
            found.append(child)
        elif depth > 1 and child.is_dir():
            _collect_runs(child, depth - 1, found)


@dataclass
class LoadedRun:
    """One run parsed into its event table (:func:`load_run`), before any analyzer ran."""

    events: EventTable
    info: RunInfo
    warnings: list[str]
    quality: DataQuality


def load_run(run_dir: Union[str, Path]) -> LoadedRun:
    """:func:`load_events` with the run's data-quality contract kept typed.

    Example::

        loaded = load_run("rank0_ascend_pt")
        loaded.quality.exit_code      # 0 complete, 3 partial
    """
    events, info, warnings, _, quality, _ = _load(Path(run_dir))
    return LoadedRun(events, info, warnings, quality)


def load_events(run_dir: Union[str, Path]) -> tuple[EventTable, RunInfo, list[str]]:
    """Parse every reader's data of one run into one time-sorted table.

    Returns the events, the run's info and the warnings (notes and every
    data-quality issue as text; :func:`analyse_run` keeps the issues typed). A damaged
    profiler_info is a warning (the raw data is still parsed, on the time base
    it was written in). Raises :class:`ProfilerDataError` when no reader
    understands the run, or when readers claimed its files and none could be
    read: "0 events" is never a success.
    """
    events, info, warnings, _, _, _ = _load(Path(run_dir))
    return events, info, warnings


@ordinary_pages()
def _load(run_dir: Path) -> tuple[EventTable, RunInfo, list[str], list[str], DataQuality, dict]:
    """(events, info, warnings, skipped, quality, tables): ``skipped`` are the readers' errors
    on a run that other readers did read; ``quality`` every issue the readers flagged,
    the skipped inputs and what the run's own metadata promised but the data lacks;
    ``tables`` those the readers handed over (:meth:`ParseContext.add_table`)."""
    info_error = None
    try:
        info = read_run_info(run_dir)
    except ProfilerDataError as e:
        info, info_error = RunInfo(run_dir=run_dir, origin=origin_of(run_dir)), str(e)
    ctx = ParseContext(run_dir=run_dir, info=info)
    if info_error:
        ctx.flag(info_error, "analysing the raw data without it: steps, clock and rank as the data says",
                 affects=("profiler_info",))
    tables = []
    errors: list[str] = []
    for impl in get_plugin_host().impls("npuprof_parse_run"):
        try:
            res = impl.function(run_dir=run_dir, context=ctx)
        except ProfilerDataError as e:
            ctx.warn(str(e))
            errors.append(str(e))
            continue
        except Exception as e:  # a reader bug must not hide the other readers' data
            message = f"reader plugin {impl.plugin_name!r} failed on {run_dir}: {type(e).__name__}: {e}"
            ctx.warn(message)
            errors.append(message)
            continue
        if res is not None:
            tables.append(res)
    if not tables:
        if errors:
            raise ProfilerDataError(run_dir, "could not be read: " + "; ".join(errors))
        raise ProfilerDataError(run_dir, f"holds no data to analyse (no {RAW_DIR}/ raw data and no files any "
                                         "reader understands)")
    events = EventTable.concat(offset_corr(tables), consume=True)   # readers' link ids kept apart
    del tables
    if not len(events) and errors:
        raise ProfilerDataError(run_dir, "no events could be read: " + "; ".join(errors))
    # the table is ours now: reorder it in place, one column at a time (bounded peak memory)
    events = events.sorted(release=True)
    release_free_memory()
    events = assign_steps(events)
    quality = DataQuality(issues=list(ctx.issues))
    quality.extend(QualityIssue(str(run_dir), f"not read: {e}") for e in errors)
    if not len(events) and not _recorded_nothing(info):
        quality.usable = False
        quality.add(QualityIssue(str(run_dir), "no event could be read: nothing to analyse", ("all tables",)))
    check_run_contract(events, info, quality)
    # the warnings every caller prints: notes, then each data-quality issue
    warnings = ctx.warnings + [str(i) for i in quality.issues if str(i) not in ctx.warnings]
    return events, info, warnings, errors, quality, ctx.tables


def _recorded_nothing(info: RunInfo) -> bool:
    """True for an npuprof window whose profiler says it wrote no event (an empty window is complete)."""
    own = info.raw.get("npuprof") if isinstance(info.raw.get("npuprof"), dict) else {}
    return own.get("events_written") == 0 and info.state == "stopped"


class PendingTables(dict):
    """The analyzers' tables of a run whose analyzers still run (:class:`RunAnalysis`): every read
    waits until they are done, and raises :class:`~npuprof.errors.ProfilerDataError` when the
    analysis failed. So whatever reads an :class:`AnalysisResult` (an exporter) may start as soon as
    the events are loaded: what needs only the events goes on beside the analyzers. Each table is
    put here as its analyzer makes it; only :meth:`wait_for` hands one over before the others."""

    def __init__(self, run_dir: Union[str, Path] = "analysis") -> None:
        super().__init__()
        self._run_dir = run_dir
        self._settled = threading.Event()
        self._error: Optional[BaseException] = None
        self._changed = threading.Condition()   # a table made, or the analysis settled (see wait_for)

    def _publish_one(self, name: str, table: Table) -> None:
        with self._changed:
            dict.__setitem__(self, name, table)
            self._changed.notify_all()

    def _publish(self, tables: dict, error: Optional[BaseException] = None) -> None:
        with self._changed:
            dict.update(self, tables)
            self._error = error
            self._settled.set()
            self._changed.notify_all()

    def wait(self) -> None:
        """Return once the analyzers are done; raise if the analysis failed."""
        self._settled.wait()
        if self._error is not None:
            raise ProfilerDataError(self._run_dir, f"analysis did not complete: {type(self._error).__name__}: "
                                                f"{self._error}") from self._error

    @property
    def failed(self) -> bool:
        """True once the analysis has failed (its tables never come)."""
        return self._settled.is_set() and self._error is not None

    def wait_for(self, name: str) -> Optional[Table]:
        """The table ``name`` as soon as its analyzer has made it (the others may still run), or once
        every analyzer is done, the table of that name (None when there is none); raises as
        :meth:`wait` when the analysis failed first. What it returns is final: the analysis changes
        it no more."""
        with self._changed:
            self._changed.wait_for(lambda: dict.__contains__(self, name) or self._settled.is_set())
            table = dict.get(self, name)
        if table is None:
            self.wait()   # raises when the analysis failed
        return table

    def __getitem__(self, key: str) -> Table:
        self.wait()
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        self.wait()
        return dict.__contains__(self, key)

    def __iter__(self) -> Iterator[str]:
        self.wait()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self.wait()
        return dict.__len__(self)

    def __repr__(self) -> str:
        return dict.__repr__(self) if self._settled.is_set() else "PendingTables(<analysing>)"

    def get(self, key: str, default: Any = None) -> Any:
        self.wait()
        return dict.get(self, key, default)

    def keys(self) -> Any:
        self.wait()
        return dict.keys(self)

    def values(self) -> Any:
        self.wait()
        return dict.values(self)

    def items(self) -> Any:
        self.wait()
        return dict.items(self)

    def copy(self) -> dict:
        self.wait()
        return dict(dict.items(self))

    def __reduce__(self) -> Any:   # pickled as the plain dict it becomes
        return (dict, (self.copy(),))


class RunAnalysis:
    """One run loaded, its analyzers still to run: :func:`start_analysis`, then :meth:`finish`.

    ``result`` exists from the start: its events, info, warnings and quality
    as loaded; its ``tables`` a :class:`PendingTables` that a reader on
    another thread waits on. :meth:`finish` runs the analyzers on this
    thread and hands their tables over (then ``result.tables`` is a plain
    dict and ``result.quality`` final).

    Example::

        analysis = start_analysis("./prof/rank0_ascend_pt")
        len(analysis.result.events)          # known already
        result = analysis.finish()           # every table
    """

    def __init__(self, result: AnalysisResult, read_tables: dict, phases: PhaseCounter, t0: float) -> None:
        self.result = result
        self._read_tables = read_tables
        self._phases = phases
        self._t0 = t0

    def finish(self) -> AnalysisResult:
        """Run every analyzer; the result, complete. Raised errors are also raised to whoever waits on
        the pending tables."""
        result, pending = self.result, self.result.tables
        tables: dict[str, Table] = {}
        made = pending._publish_one if isinstance(pending, PendingTables) else None
        try:
            _analyse(result, tables, self._read_tables, self._phases, made)
        except BaseException as e:
            if isinstance(pending, PendingTables):
                pending._publish({}, e)
            raise
        result.tables = tables
        if isinstance(pending, PendingTables):
            pending._publish(tables)
        log.info("npuprof: analysed %s: %d events in %.2f s", result.run_dir, len(result.events),
                 time.perf_counter() - self._t0)
        return result


def _analyse(result: AnalysisResult, tables: dict, read_tables: dict, phases: PhaseCounter,
             made: Optional[Callable[[str, Table], None]] = None) -> None:
    """Every analyzer's table into ``tables``, then the readers' ones; each analyzer's table handed to
    ``made`` as soon as it is final (its unmeasured columns emptied), while the next analyzers run."""
    run_dir, events, quality = result.run_dir, result.events, result.quality
    for registered in registered_analyzers():
        name = registered.analyzer.table
        with phases.phase(f"{name} ({run_dir.name})"):
            table = registered.run(events, result.warnings)
        if table is not None:
            tables[name] = table
            leave_unmeasured_empty({name: table}, quality)
            if made is not None:
                made(name, table)
    for name, table in read_tables.items():   # what the tool measured itself (whole run, not per step)
        if name in tables:
            result.warnings.append(f"{run_dir}: a reader's table {name!r} has an analyzer's name; not kept")
        else:
            tables[name] = table
            leave_unmeasured_empty({name: table}, quality)
    if not result.info.writable and run_dir.is_dir() and "step_trace_time" in tables:
        check_against_tool(tables["step_trace_time"], tool_step_trace(run_dir / OUTPUT_DIR), quality)


@ordinary_pages()
def start_analysis(run_dir: Union[str, Path], progress: Optional[ProgressCallback] = None, *,
                   force: bool = False, phases: Optional[PhaseCounter] = None,
                   steps: Optional[Sequence[int]] = None) -> RunAnalysis:
    """Parse one run (the ``parsing`` phase); its analyzers run at :meth:`RunAnalysis.finish`.
    Arguments as :func:`analyse_run`."""
    run_dir = Path(run_dir)
    phases = phases or PhaseCounter(progress, analysis_phases())
    t0 = time.perf_counter()
    with phases.phase(f"parsing {run_dir.name}"), forced_reading(force):
        events, info, warnings, skipped, quality, read_tables = _load(run_dir)
    if steps is not None:
        events = select_steps(events, steps)
    result = AnalysisResult(run_dir=run_dir, info=info, events=events, tables=PendingTables(run_dir), warnings=warnings,
                            skipped=skipped, quality=quality)
    return RunAnalysis(result, read_tables, phases, t0)


@ordinary_pages()
def analyse_run(run_dir: Union[str, Path], progress: Optional[ProgressCallback] = None, *,
                force: bool = False, phases: Optional[PhaseCounter] = None,
                steps: Optional[Sequence[int]] = None) -> AnalysisResult:
    """Parse and analyse one run; writes nothing.

    ``progress(message, done, total)`` is told each phase as it starts
    (parsing, each analyzer); ``force`` reads input files over the size limit.
    ``steps`` (consecutive step numbers) keeps the events that start within
    those ``ProfilerStep`` ranges (mindspore.profiler's ``step_list``).
    :func:`start_analysis` is the same in two halves (the events first).

    Example::

        result = analyse_run("./prof/host_1_20250101000000000_ascend_ms")
        print(result.tables["step_trace_time"].rows())
    """
    return start_analysis(run_dir, progress, force=force, phases=phases, steps=steps).finish()


def analyse_path(path: Union[str, Path], progress: Optional[ProgressCallback] = None, *,
                 force: bool = False) -> list[AnalysisResult]:
    """Analyse every run at ``path`` (see :func:`find_runs`); writes nothing."""
    runs = find_runs(path)
    if not runs:
        raise ProfilerDataError(path, "holds no profiling run (no profiler_info_*.json or data any reader "
                                      "understands)")
    phases = PhaseCounter(progress, len(runs) * analysis_phases())
    return [analyse_run(r, force=force, phases=phases) for r in runs]
