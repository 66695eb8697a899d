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
from typing import TYPE_CHECKING, Optional, Union

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
    from ..export.csvfiles import start_csv, write_csv
    from ..export.forked import ForkedFile
    from ..export.writer import fork_is_safe

    out_dir = target.output_dir
    # every registered analyzer's, as it declares, each as soon as its analyzer has made it; a long one
    # by a forked child while this thread goes on to the next (collected in order at the end)
    written: list[Union[Path, ForkedFile]] = []
    try:
        for name, table, with_rows in csv_tables(result.tables):
            if with_rows and not len(table):
                continue
            path = out_dir / f"{name}.csv"
            written.append(start_csv(table, path, fork_is_safe) or write_csv(table, path))
        written += write_communication_files(result, out_dir)
        for i, item in enumerate(written):
            if isinstance(item, ForkedFile):
                written[i] = item.finish()
    except BaseException:
        failed = getattr(result.tables, "failed", False)
        for item in written:
            if isinstance(item, ForkedFile):
                item.discard()
            elif failed:   # no file of an analysis that did not complete
                item.unlink(missing_ok=True)
        raise
    return [p for p in written if isinstance(p, Path)]
