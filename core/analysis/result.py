"""What the analysis of one run produced (in memory; nothing is written)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..events import EventTable
from ..quality import DataQuality
from ..runinfo import RunInfo
from .table import Table


@dataclass
class AnalysisResult:
    """The parsed events of a run, its :class:`~npuprof.runinfo.RunInfo` and
    every analyzer's table.

    ``warnings`` are notes that change no number; ``skipped`` names the inputs
    a reader claimed but could not read (the rest of the run was analysed);
    ``quality`` is the run's data-quality contract: every input missing, cut,
    unreadable or not measured and the tables it affects (:mod:`npuprof.quality`).
    Writing files is :func:`npuprof.export.writer.export_result`'s job.
    """

    run_dir: Path
    info: RunInfo
    events: EventTable
    tables: dict[str, Table] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    quality: DataQuality = field(default_factory=DataQuality)

    @property
    def rank(self) -> int:
        return self.info.rank

    def table(self, name: str) -> Table:
        return self.tables[name]

    def summary(self) -> dict[str, Any]:
        return {"run_dir": str(self.run_dir), "origin": self.info.origin.value, "events": len(self.events),
                "tables": {k: len(v) for k, v in self.tables.items()}, "warnings": list(self.warnings),
                "skipped": list(self.skipped), "data_quality": self.quality.to_json()}
