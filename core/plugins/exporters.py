"""Built-in plugin: writes ``ASCEND_PROFILER_OUTPUT/`` for an analysed run.

text: trace_view.json (Kineto object form), kernel_details.csv,
op_statistic.csv, api_statistic.csv, step_trace_time.csv, plus npuprof's
range_statistic.csv and host_usage.csv; with recorded shapes also
operator_details.csv (MindSpore's layout) and npuprof's op_shape_statistic.csv;
with memory data operator_memory.csv, memory_record.csv, npu_module_mem.csv
(:mod:`npuprof.analysis.memory`);
db: the Ascend profiler database ``ascend_{pytorch|mindspore}_profiler_{rank}.db``
(:mod:`npuprof.export.ascend_db_writer`) and its ``analysis.db`` / ``communication_analyzer.db``
(:mod:`npuprof.export.analysis_db`).
``analyse.done`` is written last, as torch_npu does.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..analysis.result import AnalysisResult
from ..export.csvfiles import write_csv, write_if_rows
from ..export.analysis_db import write_analysis_db
from ..export.ascend_db_writer import write_ascend_db
from ..export.communication_json import write_communication_files
from ..export.trace_json import has_forked_trace, take_forked_trace, trace_settings, write_trace
from ..export.writer import ExportTarget
from ..fileio import atomic_write
from ..hookspecs import hookimpl

CSV_TABLES = ("kernel_details", "op_statistic", "api_statistic", "step_trace_time", "range_statistic", "host_usage")
SHAPE_TABLES = ("operator_details", "op_shape_statistic")   # written only when shapes were recorded
MEMORY_TABLES = ("operator_memory", "memory_record", "npu_module_mem")   # written only with memory data
ONLY_WITH_ROWS = SHAPE_TABLES + MEMORY_TABLES     # tables with no file at all where they have no rows


@hookimpl
def npuprof_export(result: AnalysisResult, target: ExportTarget) -> Optional[list[Path]]:
    out_dir = target.output_dir
    written = []
    if target.text:
        trace = out_dir / "trace_view.json"
        # analyse_and_export may have started it in a forked child while the analyzers ran: it is
        # taken once the CSVs are written (this process then renders what the child has not reached)
        forked = has_forked_trace(trace, result.events)
        if not forked:
            written.append(write_trace(result.events, trace, use_gzip=False, **trace_settings(result)))
        for name in CSV_TABLES:
            if name in result.tables:
                written.append(write_csv(result.tables[name], out_dir / f"{name}.csv"))
        for name in ONLY_WITH_ROWS:
            table = result.tables.get(name)
            if table is not None and write_if_rows(table, out_dir / f"{name}.csv"):
                written.append(out_dir / f"{name}.csv")
        written += write_communication_files(result, out_dir)
        if forked:
            written.insert(0, take_forked_trace(trace, result.events))
    if target.db:
        written.append(write_ascend_db(result, out_dir))
        written.append(write_analysis_db(result, out_dir))
    written.append(atomic_write(out_dir / "analyse.done", ""))
    return written
