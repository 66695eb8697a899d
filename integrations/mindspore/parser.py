"""Which MindSpore data a run directory holds, and turning it into events.

Two kinds of directories:

* an npuprof run directory (it has ``NPUPROF/``): the ``FRAMEWORK/`` the
  MindSpore backend moved to its top (CPU/GPU), and, on Ascend, MindSpore's
  whole ``MINDSPORE/*_ascend_ms`` directory, which MindSpore's own offline
  analysis turns into an ``ASCEND_PROFILER_OUTPUT`` there first (the
  ``ASCEND_PROFILER_OUTPUT/`` at the run's top is npuprof's own output);
* a ``*_ascend_ms`` directory written by ``mindspore.profiler`` itself:
  ``FRAMEWORK/`` host operators plus MindSpore's ``ASCEND_PROFILER_OUTPUT/``
  (kernel_details.csv, trace_view.json, memory_record.csv).

A MindSpore directory is read-only input: npuprof writes its outputs
elsewhere. Copies that earlier npuprof versions kept in
``MINDSPORE_PROFILER_OUTPUT/`` are still read. torch_npu's ``*_ascend_pt``
runs (same file formats) belong to the built-in ``ascend`` plugin; this one
never reads them. The file reader is :mod:`npuprof.readers.ascend_output`.

Example::

    if recognise(path):
        events = parse_run(path, context)
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional

from npuprof.events import EventKind, EventTable
from npuprof.readers.ascend_contract import layout_issues, problem_issue
from npuprof.readers.ascend_output import KERNEL_DETAILS, OUTPUT_DIR, TRACE_VIEW, AscendWriter, read_ascend_output, \
    writer_of

from .backend import NATIVE_DIR
from .framework_files import has_framework_data, read_framework_dir

RAW_DIR = "NPUPROF"            # npuprof's raw event store (npuprof.rawstore.RAW_DIR)
PRESERVED_DIR = "MINDSPORE_PROFILER_OUTPUT"
DONE_MARKER = "analyse.done"   # written last by npuprof's exporters; MindSpore writes none
_PID_RE = re.compile(r"_(\d+)_\d{17}_ascend_[a-z0-9]+$")


def framework_dirs(run_dir: Path) -> list[Path]:
    """``FRAMEWORK/`` of the run plus any left inside ``MINDSPORE/*_ascend_ms`` (move failed)."""
    dirs = [run_dir / "FRAMEWORK"]
    native = run_dir / NATIVE_DIR
    if native.is_dir():
        dirs.extend(sorted(native.glob("*_ascend_ms/FRAMEWORK")))
    return [d for d in dirs if has_framework_data(d)]


def nested_mindspore_dirs(run_dir: Path) -> list[Path]:
    """MindSpore's own ``*_ascend_ms`` directories the backend left under ``MINDSPORE/``."""
    native = run_dir / NATIVE_DIR
    return sorted(p for p in native.glob("*_ascend_ms") if p.is_dir() and not p.is_symlink()) \
        if native.is_dir() else []


def is_npuprof_run(run_dir: Path) -> bool:
    return (run_dir / RAW_DIR).is_dir()


def mindspore_output_dir(run_dir: Path) -> Optional[Path]:
    """The directory holding MindSpore's analysis output, if any: not npuprof's outputs of its own run
    (those are derived from its raw data), but npuprof's ``export ascend`` copy, which has no raw data."""
    from npuprof.readers.ascend_trace_view import is_ascend_trace    # the trace reader: only for such a folder

    out = run_dir / OUTPUT_DIR
    if out.is_dir() and (not (out / DONE_MARKER).exists() or not is_npuprof_run(run_dir)):
        tv = out / TRACE_VIEW
        if (tv.is_file() and is_ascend_trace(tv)) or (not tv.exists() and (out / KERNEL_DETAILS).is_file()):
            return out
    kept = run_dir / PRESERVED_DIR
    return kept if kept.is_dir() else None


def is_foreign_run(path: Path) -> bool:
    """True for a run another framework's profiler wrote (torch_npu's ``*_ascend_pt``): the built-in
    ``ascend`` reader plugin reads it, this one leaves it alone."""
    return writer_of(path) is AscendWriter.TORCH_NPU


def recognise(path: Path) -> bool:
    """True when ``path`` holds MindSpore profiling data this plugin reads."""
    if not path.is_dir() or is_foreign_run(path):
        return False
    if framework_dirs(path):
        return True
    return not is_npuprof_run(path) and mindspore_output_dir(path) is not None


def parse_run(run_dir: Path, context: Any) -> Optional[EventTable]:
    """All MindSpore events of ``run_dir`` (None when it holds none, or another framework wrote it)."""
    if is_foreign_run(run_dir):
        return None
    pid = _run_pid(run_dir, context)
    device = _device_id(context)
    tables = []
    fw_dirs = framework_dirs(run_dir)
    shapes = _record_shapes(run_dir, context)
    for fw in fw_dirs:
        table, problems = read_framework_dir(fw, default_pid=pid, record_shapes=shapes)
        for p in problems:
            context.flag_issue(problem_issue(p))
        tables.append(table)
    if is_npuprof_run(run_dir):
        # Ascend: MindSpore's directory stayed whole under MINDSPORE/ (see backend)
        for nested in nested_mindspore_dirs(run_dir):
            _analyse_cann_data(nested, context)
            out = mindspore_output_dir(nested)
            if out is not None:
                tables.append(_read_output(out, _own_device_id(nested, device), pid, bool(fw_dirs), True,
                                           context))
    else:
        out = mindspore_output_dir(run_dir)
        if out is not None:
            table = _read_output(out, device, pid, bool(fw_dirs), False, context)
            tables.append(table)
            has_comm = bool(len(table)) and bool((table["kind"] == EventKind.COMM).any())
            for issue in layout_issues(out, dict(context.info.raw or {}), has_comm):   # MindSpore's own layout
                context.flag_issue(issue)
    if not tables:
        return None
    return EventTable.concat(tables)


def _read_output(out: Path, device: Optional[int], pid: int, skip_cpu_ops: bool, skip_mstx: bool,
                 context: Any) -> EventTable:
    table, problems = read_ascend_output(out, device=device, pid=pid, skip_cpu_ops=skip_cpu_ops, skip_mstx=skip_mstx,
                                         writer=AscendWriter.MINDSPORE)
    for p in problems:
        context.flag_issue(problem_issue(p))
    return table


def _analyse_cann_data(ms_dir: Path, context: Any) -> None:
    """Have MindSpore analyse the CANN data (``PROF_*``) of ``ms_dir`` once.

    Needs MindSpore and CANN's msprof, i.e. an Ascend machine; unverified
    without one. Anything missing is reported and the CPU data is still read.
    """
    if (ms_dir / OUTPUT_DIR).is_dir() or not any(ms_dir.glob("PROF_*")):
        return
    try:
        from mindspore.profiler.profiler import analyse as ms_analyse
    except Exception as e:
        context.warn(f"{ms_dir}: holds CANN data (PROF_*) but MindSpore cannot be imported to analyse it ({e})")
        return
    try:
        ms_analyse(str(ms_dir), max_process_number=1)
    except Exception as e:  # MindSpore logs its own reasons; keep going with what exists
        context.warn(f"{ms_dir}: MindSpore's analysis of the CANN data failed ({type(e).__name__}: {e})")
    if not (ms_dir / OUTPUT_DIR).is_dir():
        context.warn(f"{ms_dir}: MindSpore's analysis wrote no {OUTPUT_DIR} (see {ms_dir / 'logs'}); "
                     "device data of this run is missing")


def _run_pid(run_dir: Path, context: Any) -> int:
    info = getattr(context, "info", None)
    if info is not None and info.pid:
        return info.pid
    m = _PID_RE.search(run_dir.name)
    return int(m.group(1)) if m else 0


def _record_shapes(run_dir: Path, context: Any) -> bool:
    """Whether the run asked for input shapes: ``profiler_parameters.record_shapes`` of
    npuprof's profiler_info, else of MindSpore's own (in ``run_dir`` or under ``MINDSPORE/``).

    MindSpore's CPU profiler writes shapes whatever the setting; a run that
    did not ask for them (or says nothing, like a CPU-only ``*_ascend_ms``
    directory, which has no profiler_info) gets none.
    """
    info = getattr(context, "info", None)
    if info is not None and "record_shapes" in info.parameters:
        return info.record_shapes is True
    for path in sorted(run_dir.glob("profiler_info*.json")) + sorted(run_dir.glob(f"{NATIVE_DIR}/*_ascend_ms/"
                                                                                  "profiler_info*.json")):
        try:
            value = json.loads(path.read_text(encoding="utf-8"))["profiler_parameters"]["record_shapes"]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            continue
        return value is True
    return False


def _own_device_id(ms_dir: Path, default: Optional[int]) -> Optional[int]:
    """The device id in MindSpore's own profiler_info_{rank}.json of ``ms_dir``."""
    for path in sorted(ms_dir.glob("profiler_info*.json")):
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            return int(info["ms_profiler_info"]["device_id"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return default


def _device_id(context: Any) -> Optional[int]:
    """The device id profiler_info names, or None (the reader then takes it from the data)."""
    info = getattr(context, "info", None)
    return info.device_id if info is not None else None
