"""Built-in exporter plugin: the text tables of ``ASCEND_PROFILER_OUTPUT/``.

kernel_details.csv, op_statistic.csv, api_statistic.csv, step_trace_time.csv,
plus npuprof's range_statistic.csv and host_usage.csv; with recorded shapes also
operator_details.csv (MindSpore's layout) and npuprof's op_shape_statistic.csv;
with memory data operator_memory.csv, memory_record.csv, npu_module_mem.csv
(:mod:`npuprof.analysis.memory`); the communication files. The trace is the
``trace_view`` plugin's (:mod:`npuprof.plugins.trace_view`), the Ascend
profiler database the ``database`` plugin's (:mod:`npuprof.plugins.database`):
the writer runs the three at once (:func:`npuprof.export.writer.write_outputs`),
and writes ``analyse.done`` after them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..analysis.result import AnalysisResult
from ..export.csvfiles import write_csv, write_if_rows
from ..export.communication_files import write_communication_files
from ..export.writer import ExportTarget
from ..hookspecs import hookimpl

CSV_TABLES = ("kernel_details", "op_statistic", "api_statistic", "step_trace_time", "range_statistic", "host_usage")
SHAPE_TABLES = ("operator_details", "op_shape_statistic")   # written only when shapes were recorded
MEMORY_TABLES = ("operator_memory", "memory_record", "npu_module_mem")   # written only with memory data
ONLY_WITH_ROWS = SHAPE_TABLES + MEMORY_TABLES     # tables with no file at all where they have no rows


@hookimpl
def npuprof_export(result: AnalysisResult, target: ExportTarget) -> Optional[list[Path]]:
    if not target.text:
        return None
    out_dir = target.output_dir
    written = []
    for name in CSV_TABLES:
        if name in result.tables:
            written.append(write_csv(result.tables[name], out_dir / f"{name}.csv"))
    for name in ONLY_WITH_ROWS:
        table = result.tables.get(name)
        if table is not None and write_if_rows(table, out_dir / f"{name}.csv"):
            written.append(out_dir / f"{name}.csv")
    written += write_communication_files(result, out_dir)
    return written
