"""Run directories -> event table -> analyzer tables -> export hooks.

Example::

    results = analyse_path("./npuprof_data")      # a run or a parent of runs
    print(results[0].tables["op_statistic"].rows()[:5])
"""
from __future__ import annotations

import contextlib
import json
import logging
import time
from pathlib import Path
from typing import Any, Iterator, Optional, Union

from ..enums import ExportType
from ..errors import ProfilerDataError
from ..events import EventTable, _release_free_memory, offset_corr
from ..fileio import forced_reading
from ..plugins.manager import get_plugin_host
from ..progress import ProgressCallback
from ..rawstore import RAW_DIR
from ..runinfo import read_info
from ..session import ClockAnchor, ParseContext
from ..validate import check_enum_list
from .analyzers import ANALYZERS, assign_steps
from .result import AnalysisResult

log = logging.getLogger("npuprof")
OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"


def is_run_dir(path: Path) -> bool:
    """True for a directory with profiler_info, or one a parser plugin claims."""
    if not path.is_dir():
        return False
    if any(path.glob("profiler_info*.json")):
        return True
    return any(bool(r) for _, r in get_plugin_host().call("npuprof_recognise_run", path=path))


def find_runs(path: Union[str, Path]) -> list[Path]:
    """The run directories at ``path``: itself, or its children (two levels)."""
    root = Path(path)
    if not root.exists():
        raise ProfilerDataError(root, "does not exist")
    if not root.is_dir():
        raise ProfilerDataError(root, "is not a directory")
    if is_run_dir(root):
        return [root]
    found: list[Path] = []
    for child in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        if is_run_dir(child):
            found.append(child)
        else:
            found.extend(g for g in sorted(child.iterdir()) if g.is_dir() and not g.is_symlink() and is_run_dir(g))
    return found


def _has_outputs(run_dir: Path) -> bool:
    out = run_dir / OUTPUT_DIR
    return out.is_dir() and any(out.iterdir())


def load_events(run_dir: Path) -> tuple[EventTable, dict, list[str]]:
    """Parse every plugin's data of one run into one time-sorted table.

    A damaged profiler_info is reported as a warning and the raw data is
    still parsed (its times then stay on the epoch base they were written in).
    """
    info_error = None
    try:
        info = read_info(run_dir)
    except ProfilerDataError as e:
        info, info_error = {}, str(e)
    clock_info = info.get("npuprof", {}).get("clock")
    clock = ClockAnchor(int(clock_info["monotonic_ns"]), int(clock_info["realtime_ns"])) if clock_info else None
    ctx = ParseContext(run_dir=run_dir, info=info, clock=clock)
    if info_error:
        ctx.warn(f"{info_error}; analysing the raw data without it")
    tables = []
    errors: list[str] = []
    host = get_plugin_host()
    for impl in host.impls("npuprof_parse_run"):
        try:
            res = impl.function(run_dir=run_dir, context=ctx)
        except ProfilerDataError as e:
            ctx.warn(str(e))
            errors.append(str(e))
            continue
        except Exception as e:  # a parser bug must not hide the other parsers' data
            ctx.warn(f"parser plugin {impl.plugin_name!r} failed on {run_dir}: {type(e).__name__}: {e}")
            continue
        if res is not None:
            tables.append(res)
    if not tables and not errors and _has_outputs(run_dir):
        # e.g. a copy made by `npuprof export ascend`: re-analysing would replace its outputs with empty ones
        raise ProfilerDataError(run_dir, f"holds no data to analyse (no {RAW_DIR}/ and no framework data any "
                                         f"plugin reads); its existing {OUTPUT_DIR}/ is left as it is")
    events = EventTable.concat(offset_corr(tables), consume=True)   # parsers' link ids kept apart
    del tables
    # the table is ours now: reorder it in place, one column at a time (bounded peak memory)
    events = events.sorted(release=True)
    _release_free_memory()
    return assign_steps(events), info, ctx.warnings


class _PhaseCounter:
    """Turns "phase starts"/"phase done" into ``progress(message, done, total)``
    calls, counting the phases of every run being analysed."""

    def __init__(self, progress: Optional[ProgressCallback], runs: int) -> None:
        self.progress = progress
        self.exporters = [i.plugin_name for i in get_plugin_host().impls("npuprof_export")]
        self.total = runs * self.phases_per_run()
        self.done = 0

    def phases_per_run(self) -> int:
        return 1 + len(ANALYZERS) + len(self.exporters)   # parse, each analyzer, each exporter

    @contextlib.contextmanager
    def phase(self, message: str) -> Iterator[None]:
        if self.progress:
            self.progress(message, self.done, self.total)
        yield
        self.done += 1
        if self.progress and self.done == self.total:
            self.progress("done", self.done, self.total)


def analyse_run(run_dir: Union[str, Path], export_type: Any = None, progress: Optional[ProgressCallback] = None,
                **options: Any) -> AnalysisResult:
    """Analyse one run directory and write its outputs.

    ``progress(message, done, total)`` is told each phase as it starts
    (parsing, each analyzer, each exporter plugin).
    """
    return _analyse_run(Path(run_dir), export_type, _PhaseCounter(progress, 1), options)


def _analyse_run(run_dir: Path, export_type: Any, phases: _PhaseCounter, options: dict) -> AnalysisResult:
    t0 = time.perf_counter()
    with phases.phase(f"parsing {run_dir.name}"), forced_reading(bool(options.get("force", False))):
        events, info, warnings = load_events(run_dir)
    kinds = check_enum_list("export_type", export_type if export_type is not None else
                            info.get("profiler_parameters", {}).get("export_type", ["text"]), ExportType)
    result = AnalysisResult(run_dir=run_dir, info=info, events=events, warnings=warnings,
                            config={"export_type": [k.value for k in kinds], **options})
    for name, analyzer in ANALYZERS.items():
        with phases.phase(f"{name} ({run_dir.name})"):
            result.tables[name] = analyzer(events)
    host = get_plugin_host()
    for exporter in phases.exporters:
        with phases.phase(f"writing {exporter} outputs ({run_dir.name})"):
            for _, paths in host.call("npuprof_export", only=[exporter], run_dir=run_dir, result=result):
                result.outputs.extend(Path(p) for p in paths)
    log.info("npuprof: analysed %s: %d events in %.2f s", run_dir, len(events), time.perf_counter() - t0)
    return result


def analyse_path(path: Union[str, Path], export_type: Any = None, progress: Optional[ProgressCallback] = None,
                 **options: Any) -> list[AnalysisResult]:
    """Analyse every run directory at ``path``; ``progress`` as in
    :func:`analyse_run`, counting the phases of all runs."""
    runs = find_runs(path)
    if not runs:
        raise ProfilerDataError(path, "holds no profiling run (no profiler_info_*.json or known raw data)")
    phases = _PhaseCounter(progress, len(runs))
    return [_analyse_run(r, export_type, phases, options) for r in runs]


def result_json(results: list[AnalysisResult]) -> str:
    return json.dumps([r.summary() for r in results], indent=2)
