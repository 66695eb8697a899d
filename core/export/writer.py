"""Writing an analysed run's outputs: the one place that decides where they
go and which exporter plugins write them.

Where: a run npuprof wrote gets ``<run>/ASCEND_PROFILER_OUTPUT/``. Another
tool's run (torch_npu, MindSpore, CANN, a foreign trace: see
:class:`~npuprof.runinfo.RunOrigin`) is read-only input: its outputs go to
``<output>/<run's path below the analysed folder>/ASCEND_PROFILER_OUTPUT/``,
``<output>`` being ``-o`` / ``output_path`` or, when none is given,
:data:`DEFAULT_OUTPUT` in the current directory. An output place inside a
read-only run is refused before anything is written.

Example::

    from npuprof.analysis.pipeline import analyse_run
    result = analyse_run("./prof/w_1_20250101000000000_ascend_ms")
    outputs = export_result(result)                       # text files, as the run asked
    export_result(result, export_type=["db"], output="./elsewhere")
"""
from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from ..analysis.pipeline import RunAnalysis, analysis_phases, find_runs, start_analysis
from ..analysis.result import AnalysisResult
from ..enums import ExportType
from ..errors import CARRIED_IN_RESULT, ProfilerConfigError, ProfilerDataError
from ..pages import ordinary_pages
from ..plugins.manager import get_plugin_host
from ..fileio import atomic_write
from ..progress import PhaseCounter, ProgressCallback
from ..quality import QualityIssue
from ..runinfo import OUTPUT_DIR, RunOrigin, origin_of, read_run_info
from ..validate import check_enum_list, check_output_path

log = logging.getLogger("npuprof")
DEFAULT_OUTPUT = Path("npuprof_output")   # outputs of read-only runs when no output place is given
# beside the outputs: how many events the analysis that wrote them read, and its data quality
ANALYSIS_RECORD = "npuprof_analysis.json"
REANALYSIS_DIR = OUTPUT_DIR + "_reanalysis"   # where a re-analysis that read less than the last one writes
ExportTypeLike = Union[ExportType, str]
DONE_MARK = "analyse.done"
EXPORT_THREAD_PREFIX = "npuprof-export"   # the writer's executor threads
# From this many events the exporters run at once beside the analyzers (see write_outputs): the trace
# exporter then renders in a forked child (trace_json.FORK_MIN_EVENTS), work outside this interpreter's lock
CONCURRENT_MIN_EVENTS = 1_000_000
_exporting: set[int] = set()   # threads inside write_outputs now (waiting for their exporters, or analysing)
_exporting_lock = threading.Lock()


@dataclass(frozen=True)
class ExportTarget:
    """What one exporter plugin is asked to write, and where.

    ``output_dir`` is the run's ``ASCEND_PROFILER_OUTPUT`` folder (created by
    the plugin as needed; write with :func:`npuprof.fileio.atomic_write`).
    """

    output_dir: Path
    export_type: tuple[ExportType, ...] = (ExportType.Text,)

    @property
    def text(self) -> bool:
        return ExportType.Text in self.export_type

    @property
    def db(self) -> bool:
        return ExportType.Db in self.export_type


@dataclass(frozen=True)
class ExporterFailure:
    """An exporter plugin that raised while writing a run's outputs (its files are missing)."""

    exporter: str
    error: str

    def __str__(self) -> str:
        return f"exporter {self.exporter!r} failed: {self.error}"


@dataclass
class WrittenOutputs:
    """What the exporter plugins wrote for one target, and which of them failed."""

    paths: list[Path] = field(default_factory=list)
    failures: list[ExporterFailure] = field(default_factory=list)


@dataclass
class ExportedRun:
    """An analysed run, the files its export wrote and the exporters that failed."""

    result: AnalysisResult
    output_dir: Path
    outputs: list[Path] = field(default_factory=list)
    failures: list[ExporterFailure] = field(default_factory=list)


def output_root(run_dir: Path, writable: bool, output: Optional[Union[str, Path]] = None,
                analysed_root: Optional[Path] = None) -> Path:
    """The directory that receives a run's ``ASCEND_PROFILER_OUTPUT/``.

    Example::

        >>> output_root(Path("/data/job/rank0_ascend_pt"), writable=False, output="/out",
        ...             analysed_root=Path("/data"))
        PosixPath('/out/job/rank0_ascend_pt')
        >>> output_root(Path("/data/mine_ascend_ms"), writable=True)
        PosixPath('/data/mine_ascend_ms')
    """
    if output is None:
        if writable:
            return run_dir
        output = DEFAULT_OUTPUT
    base = Path(output)
    if analysed_root is not None and run_dir != analysed_root:
        try:
            return base / run_dir.relative_to(analysed_root)
        except ValueError:
            pass
    return base / run_dir.name


def _check_outside(place: Path, run_dir: Path, writable: bool) -> None:
    if writable:
        return
    where, run = place.resolve(), run_dir.resolve()
    if where == run or run in where.parents:
        raise ProfilerConfigError("output", str(place), "a place outside the run being read",
                                  f"{run_dir} was written by another tool and is read-only input")


@ordinary_pages()
def export_result(result: AnalysisResult, export_type: Optional[Sequence[ExportTypeLike]] = None,
                  output: Optional[Union[str, Path]] = None, analysed_root: Optional[Path] = None,
                  phases: Optional[PhaseCounter] = None, analysis: Optional[RunAnalysis] = None) -> ExportedRun:
    """Write ``result``'s outputs through every exporter plugin (:func:`write_outputs`).

    ``export_type`` defaults to what the run asked for (its profiler_info),
    else text. See the module docstring for where files go. With
    ``analysis`` (:func:`~npuprof.analysis.pipeline.start_analysis`, whose
    result is ``result``) its analyzers run while the exporters write.
    """
    target = _export_target(result.run_dir, result.info, export_type, output, analysed_root)
    target, kept = _unless_degrading(target, len(result.events))
    if kept is not None:
        result.quality.add(kept)
    written = write_outputs(result, target, phases, analysis)
    if not written.failures:
        record = {"events": len(result.events), "data_quality": result.quality.to_json()}
        written.paths.append(atomic_write(target.output_dir / ANALYSIS_RECORD, json.dumps(record, indent=1)))
    return ExportedRun(result=result, output_dir=target.output_dir, outputs=written.paths,
                       failures=written.failures)


def _unless_degrading(target: ExportTarget, events: int) -> tuple[ExportTarget, Optional[QualityIssue]]:
    """``target`` itself, or, when its outputs came from an analysis that read more events than this one
    (a segment emptied, a file cut since), a place beside it and the issue saying so: a re-analysis never
    replaces better outputs silently."""
    previous = _recorded_events(target.output_dir)
    if previous is None or events >= previous:
        return target, None
    beside = target.output_dir.with_name(REANALYSIS_DIR)
    issue = QualityIssue(str(target.output_dir), f"the previous analysis read {previous} events, this one {events}: "
                                                 f"its outputs are kept, this analysis is written to {beside}",
                         ("all tables",))
    return replace(target, output_dir=beside), issue


def _recorded_events(output_dir: Path) -> Optional[int]:
    try:
        events = json.loads((output_dir / ANALYSIS_RECORD).read_text(encoding="utf-8")).get("events")
    except (OSError, ValueError, AttributeError):
        return None
    return events if isinstance(events, int) and not isinstance(events, bool) else None


def _export_target(run_dir: Path, info: Any, export_type: Optional[Sequence[ExportTypeLike]],
                   output: Optional[Union[str, Path]], analysed_root: Optional[Path]) -> ExportTarget:
    """Where and what :func:`export_result` writes for a run, checked."""
    kinds = tuple(check_enum_list("export_type", export_type if export_type is not None
                                  else (info.export_type or ("text",)), ExportType))
    root = output_root(run_dir, info.writable, output, analysed_root)
    _check_outside(root, run_dir, info.writable)
    if root != run_dir:
        check_output_path("output", str(root))
    return ExportTarget(output_dir=root / OUTPUT_DIR, export_type=kinds)


def write_outputs(result: AnalysisResult, target: ExportTarget, phases: Optional[PhaseCounter] = None,
                  analysis: Optional[RunAnalysis] = None) -> WrittenOutputs:
    """Call every exporter plugin for ``target`` and return what they wrote. A plugin that raises is
    warned about by name and recorded in ``failures``; the others still write (a profiled job keeps
    what can be kept, the CLI fails).

    From :data:`CONCURRENT_MIN_EVENTS` events every exporter runs at once, each on a thread of an
    executor this function owns, and with ``analysis`` (whose ``result`` is ``result``, its tables
    pending) the analyzers run on this thread meanwhile: an exporter that reads only the events (the
    trace) writes beside them, one that reads a table waits for it
    (:class:`~npuprof.analysis.pipeline.PendingTables`). When the analysis fails, what the exporters
    wrote is removed and its error raised. A smaller run's exporters run one after another on this
    thread once the analyzers are done (and not at all when they fail): their work is short and holds
    the interpreter's lock, so threads would only add their start, lock hand-overs and a second
    allocator arena's memory. So does every run at interpreter exit, when no thread may start.
    """
    host = get_plugin_host()
    names = exporter_names()
    me = threading.get_ident()
    with _exporting_lock:
        _exporting.add(me)
    analysis_error: Optional[BaseException] = None
    outcomes: list[tuple[str, Any]] = []
    try:
        with ThreadPoolExecutor(max_workers=max(1, len(names)), thread_name_prefix=EXPORT_THREAD_PREFIX) as pool:
            jobs: list[tuple[str, Optional[Future]]] = []   # None: to be run here
            if len(result.events) >= CONCURRENT_MIN_EVENTS:
                try:
                    jobs = [(name, pool.submit(_call_exporter, host, name, result, target)) for name in names]
                except RuntimeError:   # the interpreter is exiting (a window saved at exit): no new threads
                    jobs = []
            if analysis is not None:
                try:
                    analysis.finish()
                except BaseException as e:   # raised once the exporters are done (they wait on its tables)
                    analysis_error = e
            if not jobs and analysis_error is None:   # one after another, here
                jobs = [(name, None) for name in names]
            for name, job in jobs:
                with phases.phase(f"writing {name} outputs ({result.run_dir.name})") if phases else nullcontext():
                    try:
                        outcomes.append((name, job.result() if job is not None
                                         else _call_exporter(host, name, result, target)))
                    except BaseException as e:   # ProfilerDataError/ConfigError: the user's to see
                        outcomes.append((name, e))
    finally:
        with _exporting_lock:
            _exporting.discard(me)
    written = WrittenOutputs()
    raised: Optional[BaseException] = analysis_error
    for name, outcome in outcomes:
        if isinstance(outcome, BaseException):
            raised = raised or outcome
            continue
        paths, failures = outcome
        written.paths += paths
        written.failures += failures
    if raised is not None:
        if analysis_error is not None:   # no output of an analysis that did not complete
            for path in written.paths:
                path.unlink(missing_ok=True)
        raise raised
    if not written.failures:   # torch_npu's mark of a complete ASCEND_PROFILER_OUTPUT, written last
        written.paths.append(atomic_write(target.output_dir / DONE_MARK, ""))
    for failure in written.failures:
        log.warning("npuprof: plugin %r failed in npuprof_export for %s: %s", failure.exporter, result.run_dir,
                    failure.error, extra={CARRIED_IN_RESULT: True})
    return written


def _call_exporter(host: Any, exporter: str, result: AnalysisResult,
                   target: ExportTarget) -> tuple[list[Path], list[ExporterFailure]]:
    failures: list[ExporterFailure] = []

    def failed(plugin: str, exc: BaseException) -> None:
        failures.append(ExporterFailure(plugin, f"{type(exc).__name__}: {exc}"))

    paths: list[Path] = []
    for _, written in host.call("npuprof_export", only=[exporter], on_error=failed, result=result, target=target):
        paths += [Path(p) for p in written]
    return paths, failures


def fork_is_safe() -> bool:
    """True when every live thread but the calling one is a daemon, an exporter thread of
    :func:`write_outputs` or a thread waiting for one: threads running npuprof's own export and
    analysis code only, none holding a lock a forked child that renders a file would take. Another
    thread (the user's, in a training process) may hold any lock: then no exporter forks.

    Example::

        fork_is_safe()   # True in `npuprof analyse`, on an exporter thread
    """
    me = threading.current_thread()
    with _exporting_lock:
        owners = set(_exporting)
    return all(t is me or t.daemon or t.name.startswith(EXPORT_THREAD_PREFIX) or t.ident in owners
               for t in threading.enumerate())


def exporter_names() -> list[str]:
    """The plugins that write outputs, in call order."""
    return [i.plugin_name for i in get_plugin_host().impls("npuprof_export")]


def analyse_and_export(path: Union[str, Path], export_type: Optional[Sequence[ExportTypeLike]] = None,
                       output: Optional[Union[str, Path]] = None, progress: Optional[ProgressCallback] = None,
                       force: bool = False, steps: Optional[Sequence[int]] = None,
                       log_quality: bool = True) -> list[ExportedRun]:
    """Analyse every run at ``path`` and write each one's outputs (``npuprof analyse``).

    Output places are checked for every run before any run is analysed;
    ``steps`` keeps those steps of each run (see :func:`analyse_run`). A run
    whose data is not complete has its data quality section logged as one
    warning (``log_quality``; the command line prints it itself).

    Example::

        for run in analyse_and_export("./npuprof_data"):
            print(run.output_dir, len(run.result.events))
    """
    root = Path(path)
    runs = find_runs(root)
    if not runs:
        raise ProfilerDataError(root, "holds no profiling run (no profiler_info_*.json or data any reader "
                                      "understands)")
    if output is not None:
        check_output_path("output", str(output))
    for run in runs:   # refuse a bad output place before anything is written
        try:
            writable = read_run_info(run).writable
        except ProfilerDataError:
            writable = origin_of(run) is RunOrigin.NPUPROF
        _check_outside(output_root(run, writable, output, root), run, writable)
    phases = PhaseCounter(progress, len(runs) * (analysis_phases() + len(exporter_names())))
    out = []
    for run in runs:
        analysis = start_analysis(run, force=force, phases=phases, steps=steps)
        out.append(export_result(analysis.result, export_type, output, root, phases, analysis))
        result = out[-1].result
        if log_quality and not result.quality.complete:
            log.warning("npuprof: %s: %s", run, "\n".join(result.quality.lines()))
    return out
