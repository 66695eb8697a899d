"""Built-in exporter plugin for ``export_type`` db: the Ascend profiler database
``ascend_{pytorch|mindspore}_profiler_{rank}.db`` (:mod:`npuprof.export.ascend_db_writer`) and its
``analysis.db`` / ``communication_analyzer.db`` (:mod:`npuprof.export.analysis_db`), written beside
the text outputs (sqlite runs its writes without Python's lock)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from ..analysis.result import AnalysisResult
    from ..export.writer import ExportTarget


@hookimpl
def npuprof_export(result: AnalysisResult, target: ExportTarget) -> Optional[list[Path]]:
    if not target.db:
        return None
    # the writers (sqlite3 and the table schemas) are imported for a run that asks for the database only
    from ..export.analysis_db import write_analysis_db
    from ..export.ascend_db_writer import write_ascend_db

    return [write_ascend_db(result, target.output_dir), write_analysis_db(result, target.output_dir)]
