"""Built-in plugin: reads torch_npu's Ascend text outputs (``*_ascend_pt`` run
directories: ``ASCEND_PROFILER_OUTPUT/trace_view.json``, ``kernel_details.csv``
...) with :mod:`npuprof.readers.ascend_output`.

MindSpore's ``*_ascend_ms`` directories (same file formats, plus MindSpore's
``FRAMEWORK/``) are read by the MindSpore plugin; each run is read by exactly
one of the two (see :func:`npuprof.readers.ascend_output.writer_of`).

Example::

    from npuprof.analysis.pipeline import analyse_run
    result = analyse_run("rank0_ascend_pt")      # read here; nothing written into it
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..events import EventTable
from ..hookspecs import hookimpl
from ..events import EventKind
from ..readers.ascend_contract import layout_issues, problem_issue
from ..readers.ascend_output import OUTPUT_DIR, AscendWriter, read_ascend_output, writer_of


def _torch_npu_output(path: Path) -> Optional[Path]:
    """The ``ASCEND_PROFILER_OUTPUT`` of a torch_npu run directory, or None."""
    if writer_of(path) is not AscendWriter.TORCH_NPU:
        return None
    out = Path(path) / OUTPUT_DIR
    return out if out.is_dir() else None


@hookimpl
def npuprof_recognise_run(path: Path) -> Optional[bool]:
    return True if _torch_npu_output(Path(path)) is not None else None


@hookimpl
def npuprof_parse_run(run_dir: Path, context: Any) -> Optional[EventTable]:
    out = _torch_npu_output(Path(run_dir))
    if out is None:
        return None
    info = getattr(context, "info", None)
    table, problems = read_ascend_output(out, device=getattr(info, "device_id", None), pid=getattr(info, "pid", 0) or 0,
                                         writer=AscendWriter.TORCH_NPU)
    has_comm = bool(len(table)) and bool((table["kind"] == EventKind.COMM).any())
    for issue in [*layout_issues(out, dict(getattr(info, "raw", {}) or {}), has_comm), *map(problem_issue, problems)]:
        context.flag_issue(issue)
    return table
