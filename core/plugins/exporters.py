"""Built-in exporter plugin: the text tables of ``ASCEND_PROFILER_OUTPUT/``.

kernel_details.csv, op_statistic.csv, api_statistic.csv, step_trace_time.csv,
plus npuprof's range_statistic.csv and host_usage.csv; with recorded shapes also
operator_details.csv (MindSpore's layout) and npuprof's op_shape_statistic.csv;
with memory data operator_memory.csv, memory_record.csv, npu_module_mem.csv
(:mod:`npuprof.analysis.memory`); the table of every other registered analyzer
(``npuprof_analyzers``), as its ``csv`` declaration says; the communication files. The trace is the
``trace_view`` plugin's (:mod:`npuprof.plugins.trace_view`), the Ascend
profiler database the ``database`` plugin's (:mod:`npuprof.plugins.database`):
the writer runs the three at once on a large run, in turn on a smaller one
(:func:`npuprof.export.writer.write_outputs`), and writes ``analyse.done`` after them.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from ..analysis.result import AnalysisResult
    from ..export.writer import ExportTarget


@hookimpl
def npuprof_export(result: AnalysisResult, target: ExportTarget) -> Optional[list[Path]]:
    if not target.text:
        return None
    # the writers are imported by the export (the CSV cells' tables are built at import): every npuprof
    # command loads this plugin, only the commands that write text outputs export
    from ..analysis.analyzer import csv_tables
    from ..export.communication_json import write_communication_files
    from ..export.csvfiles import write_csv, write_if_rows

    out_dir = target.output_dir
    written: list[Path] = []
    try:
        # every registered analyzer's, as it declares, each as soon as its analyzer has made it
        for name, table, with_rows in csv_tables(result.tables):
            path = out_dir / f"{name}.csv"
            if not with_rows:
                written.append(write_csv(table, path))
            elif write_if_rows(table, path):
                written.append(path)
        written += write_communication_files(result, out_dir)
    except BaseException:
        if getattr(result.tables, "failed", False):   # no file of an analysis that did not complete
            for path in written:
                path.unlink(missing_ok=True)
        raise
    return written
