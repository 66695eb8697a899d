"""What plugins see of a collection window and of a run being parsed.

A :class:`CollectionSession` exists from the moment a window opens (warm-up
or record) until it is saved or discarded; its ``run_dir`` holds everything
that window collects. A :class:`ParseContext` is handed to parser plugins
with what profiler_info recorded about the run.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from .clock import ClockAnchor
from .errors import CARRIED_IN_RESULT
from .fileio import secure_mkdir
from .quality import QualityIssue

if TYPE_CHECKING:  # pragma: no cover
    from .runinfo import RunInfo
    from .config import ProfilerConfig
    from .events import EventTable
    from .rawstore import RawWriter

log = logging.getLogger("npuprof")


@dataclass
class CollectionSession:
    """One collection window: its run directory, config and raw-data writer."""

    config: "ProfilerConfig"
    run_dir: Path
    clock: ClockAnchor
    window: int
    writer: "RawWriter"
    step_num: int = 0
    saved: bool = True
    partial: bool = False
    steps: list = field(default_factory=list)
    warn_once: Callable[[str, str], None] = lambda key, msg: log.warning(msg)

    @property
    def rank(self) -> int:
        return self.config.rank

    def native_dir(self, name: str) -> Path:
        """A sub-directory of the run directory for a native profiler's files."""
        path = self.run_dir / name
        secure_mkdir(path)
        return path

    def record_events(self, table: "EventTable") -> None:
        """Append already-built events (epoch-ns time base) to the raw data."""
        self.writer.append(table)


@dataclass
class ParseContext:
    """What a parser plugin knows about the run it parses."""

    run_dir: Path
    info: "RunInfo"
    warnings: list = field(default_factory=list)
    issues: list[QualityIssue] = field(default_factory=list)
    tables: dict = field(default_factory=dict)   # name -> analysis Table a reader handed over (add_table)

    @property
    def rank(self) -> int:
        return self.info.rank

    @property
    def clock(self) -> Optional[ClockAnchor]:
        """The run's clock anchor (npuprof's runs), or None."""
        return self.info.clock

    def to_epoch_ns(self, monotonic_ns: Any) -> Any:
        """Convert CLOCK_MONOTONIC ns of this run to epoch ns."""
        if self.clock is None:
            return monotonic_ns
        return self.clock.to_epoch_ns(monotonic_ns)

    def warn(self, message: str) -> None:
        """Report something about the input that changes no number (a note)."""
        self.warnings.append(message)
        log.warning(message, extra={CARRIED_IN_RESULT: True})

    def flag(self, subject: str, problem: str, affects: tuple[str, ...] = (), not_measured: bool = False) -> None:
        """Report input that is missing, cut, unreadable or not measured: the
        run is analysed but not complete (see :mod:`npuprof.quality`).
        ``not_measured``: the ``table.column`` numbers in ``affects`` are left empty.

        Example::

            context.flag("trace_view.json", "not valid JSON (cut short?); file skipped",
                         affects=("api_statistic",))
        """
        self.flag_issue(QualityIssue(subject, problem, tuple(affects), not_measured))

    def flag_issue(self, issue: QualityIssue) -> None:
        """:meth:`flag` for an issue a reader built itself."""
        if issue not in self.issues:
            self.issues.append(issue)
            log.info("npuprof: %s", issue)     # shown once, in the data quality section

    def add_table(self, table: Any) -> None:
        """Hand over a table the tool itself measured and npuprof cannot recompute from
        events (an :class:`npuprof.analysis.table.Table`, e.g. the SS928 AA Core metrics of
        msprof.pyc's op_summary): it joins the analyzers' tables in the result, is shown by
        ``npuprof show`` and written by the exporters that know it. A second table of the
        same name is refused (ValueError); one with an analyzer's name is not kept (the
        result's warnings say so).

        Example::

            context.add_table(Table("aa_core_metrics", ["Layer Name", "Time(us)"], {...}))
        """
        if table.name in self.tables:
            raise ValueError(f"a table named {table.name!r} was already handed over for {self.run_dir}")
        self.tables[table.name] = table

    def flag_message(self, message: str) -> None:
        """:meth:`flag` for a reader's ``"<file>: <problem>"`` message (a callback readers take)."""
        self.flag_issue(QualityIssue.from_message(message))
