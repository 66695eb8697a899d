"""What one analysed run directory produced."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..events import EventTable
from .table import Table


@dataclass
class AnalysisResult:
    """The parsed events of a run, every analyzer's table and the files written.

    ``config`` holds the export settings (``export_type``, ``gzip``, ...).
    """

    run_dir: Path
    info: dict
    events: EventTable
    tables: dict = field(default_factory=dict)
    outputs: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    config: dict = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return int(self.info.get("rank_id", self.info.get("npuprof", {}).get("rank", 0)) or 0)

    def table(self, name: str) -> Table:
        return self.tables[name]

    def summary(self) -> dict[str, Any]:
        return {"run_dir": str(self.run_dir), "events": len(self.events),
                "tables": {k: len(v) for k, v in self.tables.items()},
                "outputs": [str(p) for p in self.outputs], "warnings": list(self.warnings)}
