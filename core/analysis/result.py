"""What the analysis of one run produced (in memory; nothing is written)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..events import EventTable
from ..runinfo import RunInfo
from .table import Table


@dataclass
class AnalysisResult:
    """The parsed events of a run, its :class:`~npuprof.runinfo.RunInfo` and
    every analyzer's table.

    ``warnings`` are damaged-but-readable inputs; ``skipped`` names the inputs
    a reader claimed but could not read (the rest of the run was analysed).
    Writing files is :func:`npuprof.export.writer.export_result`'s job.
    """

    run_dir: Path
    info: RunInfo
    events: EventTable
    tables: dict[str, Table] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def rank(self) -> int:
        return self.info.rank

    def table(self, name: str) -> Table:
        return self.tables[name]

    def summary(self) -> dict[str, Any]:
        return {"run_dir": str(self.run_dir), "origin": self.info.origin.value, "events": len(self.events),
                "tables": {k: len(v) for k, v in self.tables.items()}, "warnings": list(self.warnings),
                "skipped": list(self.skipped)}
