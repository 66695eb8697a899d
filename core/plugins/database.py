"""Built-in exporter plugin for ``export_type`` db: the Ascend profiler database
``ascend_{pytorch|mindspore}_profiler_{rank}.db`` (:mod:`npuprof.export.ascend_db_writer`) and its
``analysis.db`` / ``communication_analyzer.db`` (:mod:`npuprof.export.analysis_db`), written beside
the text outputs (sqlite runs its writes without Python's lock)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..analysis.result import AnalysisResult
from ..export.analysis_db import write_analysis_db
from ..export.ascend_db_writer import write_ascend_db
from ..export.writer import ExportTarget
from ..hookspecs import hookimpl


@hookimpl
def npuprof_export(result: AnalysisResult, target: ExportTarget) -> Optional[list[Path]]:
    if not target.db:
        return None
    return [write_ascend_db(result, target.output_dir), write_analysis_db(result, target.output_dir)]
