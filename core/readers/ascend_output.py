"""Read the text outputs of the Ascend profilers: the ``ASCEND_PROFILER_OUTPUT/``
of a torch_npu ``*_ascend_pt`` or a MindSpore ``*_ascend_ms`` run directory.

Both tools write the same file kinds (msprof's analysis underneath):

``trace_view.json``
    a Chrome trace as a JSON *array* of the framework's host process, ``CPU OP``,
    ``CANN``, ``Ascend Hardware``, ``HCCL``/``Communication``, mstx and counters
    (:mod:`npuprof.readers.ascend_trace_view` describes and reads it).
``kernel_details.csv``
    one row per device operator: ``Step Id`` (torch_npu) or ``Step ID``,
    ``Model ID, Task ID, Stream ID, Name, Type, OP State, Accelerator Core,
    Start Time(us), Duration(us), Wait Time(us), Block Dim`` ... The HCCL
    rows (``Accelerator Core`` ``HCCL``/``COMMUNICATION``, ``hcom_*`` types)
    are communication operators, never compute.
``memory_record.csv``, ``npu_module_mem.csv``
    memory series; their ``Device Type``/``Device`` column (``NPU:1``) names
    the device.
``operator_memory.csv``
    one row per tensor allocation an operator made (``profile_memory``).

How each file becomes events (one source per fact, nothing counted twice):

* device operators come from ``kernel_details.csv`` when present (every
  column kept in the event's args under its own name, ``Stream ID`` in the
  ``stream`` column, ``Step Id`` in ``step``), else from the trace's
  ``Ascend Hardware`` tasks; hardware tasks on the streams HCCL's tasks name
  are those tasks and are read from the HCCL process only;
* communication operators come from the trace's HCCL operator lane, or from
  the HCCL rows of ``kernel_details.csv`` when present (then the lane's event
  of the same name only gives its group); their tasks (``"task_type"`` in
  args, plus ``src_rank``/``dst_rank``/``size``/``transport`` where they are
  transfers, see :mod:`npuprof.analysis.rank_communication`) take the group of the
  operator holding them;
* the group of an operator is the one the tool names it by in the run's own
  ``communication.json`` (``op@group``): the text outputs record a group's
  name nowhere else; without that file, the lane's ``Group <n>``;
* memory: ``memory_record.csv`` rows become COUNTER series
  ``<Component> <Device> Total ...(MB)`` (type ``memory``),
  ``npu_module_mem.csv`` rows series ``<Component> <Device> Total Reserved(MB)``
  (type ``npu_module_mem``), ``operator_memory.csv`` rows MEMORY events (one
  per allocation: ``ts`` the allocation, ``dur`` its lifetime, 0 when the file
  records no release; ``value`` the bytes; every other column kept in args
  as written; type ``operator_memory``);
* the device id is read from the data: a process label ``NPU <n>``, the
  memory files' ``NPU:<n>``, or msprof's device process ids (``host pid <<
  10 | sort index << 5 | device id``, used only where the sort index in the
  id equals the process's ``process_sort_index``).

The aggregate CSVs (``op_statistic``, ``api_statistic``, ``step_trace_time``)
are the tool's results from the same events; they are not read.

Example::

    >>> run = Path("rank0_ascend_pt")
    >>> events, problems = read_ascend_output(run / OUTPUT_DIR)  # doctest: +SKIP
"""
from __future__ import annotations

import csv
import io
import json
import re
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np
import orjson

from npuprof.events import EventKind, EventTable
from npuprof.fileio import check_input_file
from npuprof.rawstore import RAW_DIR

from .ascend_ops import COMM_CORES, int_or, op_type_of
from .event_rows import EventRows, args_text
from .time_text import us_text_to_ns

if TYPE_CHECKING:
    from .ascend_trace_view import TraceMeta, TraceReader
# the trace_view.json reader and its decoder (msgspec's structs) are imported by the function that reads a
# trace: the layout's names here (OUTPUT_DIR, TRACE_VIEW, ...) are imported by every npuprof command's plugins

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
TRACE_VIEW = "trace_view.json"
KERNEL_DETAILS = "kernel_details.csv"
MEMORY_RECORD = "memory_record.csv"
NPU_MODULE_MEM = "npu_module_mem.csv"
OPERATOR_MEMORY = "operator_memory.csv"
COMMUNICATION = "communication.json"
INFO_GLOB = "profiler_info*.json"

_DEVICE_RE = re.compile(r"NPU\s*:?\s*(\d+)")
# kernel_details columns carried by event columns, not args
_EVENT_COLUMNS = {"Name", "Type", "Start Time(us)", "Duration(us)", "Step Id", "Step ID", "Stream ID",
                  "Device_id"}


class AscendWriter(str, Enum):
    """Which framework's profiler wrote an Ascend run directory."""

    TORCH_NPU = "torch_npu"
    MINDSPORE = "mindspore"


def writer_of(run_dir: Path) -> Optional[AscendWriter]:
    """Who wrote the Ascend run directory ``run_dir`` (None: not such a run, or npuprof's own).

    Judged by the directory's name (``*_ascend_pt`` / ``*_ascend_ms``), else
    by its profiler_info: torch_npu's has ``config`` and ``start_info``,
    MindSpore's ``ms_profiler_info``.

    Example::

        >>> writer_of(Path("/nonexistent/rank0_ascend_pt")) is None    # not a directory
        True
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or (run_dir / RAW_DIR).is_dir():
        return None
    if run_dir.name.endswith("_ascend_pt"):
        return AscendWriter.TORCH_NPU
    if run_dir.name.endswith("_ascend_ms"):
        return AscendWriter.MINDSPORE
    for path in sorted(run_dir.glob(INFO_GLOB)):
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(info, dict) or "npuprof" in info:
            return None
        if "ms_profiler_info" in info:
            return AscendWriter.MINDSPORE
        if isinstance(info.get("config"), dict) and "start_info" in info:
            return AscendWriter.TORCH_NPU
    return None


def read_ascend_output(out_dir: Path, device: Optional[int] = None, pid: int = 0, skip_cpu_ops: bool = False,
                       skip_mstx: bool = False,
                       writer: AscendWriter = AscendWriter.MINDSPORE) -> tuple[EventTable, list[str]]:
    """Events from an Ascend profiler's output directory ``out_dir`` (its
    ``ASCEND_PROFILER_OUTPUT/``, see module doc).

    ``device``: the device id when the caller knows it (e.g. MindSpore's
    profiler_info), else read from the data (0 when the data says nothing).
    ``skip_cpu_ops``: the caller already read MindSpore's ``FRAMEWORK/``
    (exact ns), so the ``CPU OP`` process is not read again; ``skip_mstx``:
    npuprof recorded the user's ranges itself. ``writer`` names the source
    of the events. Returns the events and the problems met.
    """
    from .ascend_trace_view import CompactTrace, TraceMeta, TraceReader, is_ascend_trace, is_damaged_trace, \
        load_trace
    from .trace_decode import collector_paused

    out_dir = Path(out_dir)
    problems: list[str] = []
    tv = out_dir / TRACE_VIEW
    trace = CompactTrace()
    if tv.is_file() and is_ascend_trace(tv):
        with collector_paused():
            trace = load_trace(tv, problems)
    elif tv.is_file() and is_damaged_trace(tv):      # npuprof's own trace (an object) is left unread
        problems.append(f"{tv}: not a JSON event array (torch_npu and MindSpore write one): damaged; file skipped")
    meta = TraceMeta.of(trace.meta)
    run_device = device if device is not None else device_from_data(out_dir, meta)
    source = writer.value
    kd = out_dir / KERNEL_DETAILS
    kernels = _read_kernel_details(kd, run_device, pid, problems, source) if kd.is_file() else EventTable.empty()
    tables: list[EventTable] = []
    if len(trace):
        reader = TraceReader(meta, run_device, pid, source, skip_cpu_ops=skip_cpu_ops,
                              skip_hardware=len(kernels) > 0, skip_mstx=skip_mstx,
                              groups=_named_groups(out_dir / COMMUNICATION, problems))
        with collector_paused():
            tables.append(reader.read(trace, tv, problems))
        del trace
        if len(kernels):
            kernels = _with_trace_facts(kernels, reader)
    tables.insert(0, kernels)
    mem = out_dir / MEMORY_RECORD
    if mem.is_file():
        tables.append(_read_memory_record(mem, pid, problems, source))
    if (out_dir / NPU_MODULE_MEM).is_file():
        tables.append(_read_memory_record(out_dir / NPU_MODULE_MEM, pid, problems, source, device_col="Device",
                                          type_="npu_module_mem"))
    if (out_dir / OPERATOR_MEMORY).is_file():
        tables.append(_read_operator_memory(out_dir / OPERATOR_MEMORY, pid, problems, source))
    return EventTable.concat(tables), problems


# -- the device id --------------------------------------------------------------------------------------
def device_from_data(out_dir: Path, meta: "TraceMeta",
                     encoding_meta: Optional[Callable[[], "TraceMeta"]] = None) -> int:
    """The run's device id as its files record it (see module doc); 0 when none does.
    ``encoding_meta`` gives the trace metadata for the last resort (device ids encoded in process
    ids), when ``meta`` was read without it."""
    labelled = {d for d in meta.proc_device.values() if d >= 0}
    if len(labelled) == 1:
        return labelled.pop()
    for name, column in ((MEMORY_RECORD, "Device Type"), (NPU_MODULE_MEM, "Device")):
        found = _device_in_csv(out_dir / name, column)
        if found is not None:
            return found
    encoded = (encoding_meta() if encoding_meta is not None else meta).encoded_devices()
    if len(encoded) == 1:
        return encoded.pop()
    return 0


def _device_in_csv(path: Path, column: str) -> Optional[int]:
    """The ``NPU:<n>`` of the first data row's ``column`` (only the head of the file is read)."""
    if not path.is_file():
        return None
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            head = fh.read(65536)
    except OSError:
        return None
    for row in csv.DictReader(io.StringIO(head)):
        m = _DEVICE_RE.search(str(row.get(column) or ""))
        if m:
            return int(m.group(1))
    return None


# -- kernel_details.csv ---------------------------------------------------------------------------------
def _read_kernel_details(path: Path, device: int, pid: int, problems: list[str], source: str) -> EventTable:
    check_input_file(path)
    cols = EventRows(source)
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    reader = csv.reader(io.StringIO(text))
    fields = [f.strip() for f in next(reader, [])]
    need = {"Name", "Start Time(us)", "Duration(us)"}
    if not need.issubset(fields):
        problems.append(f"{path}: missing columns {sorted(need - set(fields))}; file skipped")
        return EventTable.empty()
    at = {f: i for i, f in enumerate(fields)}
    step_col = at.get("Step Id", at.get("Step ID"))
    extra = [(i, f) for i, f in enumerate(fields) if f and f not in _EVENT_COLUMNS]
    for lineno, raw in enumerate(reader, 2):
        row = [v.strip() for v in raw]
        if len(row) < len(fields):
            row += [""] * (len(fields) - len(row))
        try:
            ts = us_text_to_ns(row[at["Start Time(us)"]])
            dur = us_text_to_ns(row[at["Duration(us)"]])
        except (ValueError, IndexError):
            problems.append(f"{path}:{lineno}: unreadable time, row skipped")
            continue
        name = row[at["Name"]]
        typ = row[at["Type"]] if "Type" in at and row[at["Type"]] else op_type_of(name)
        core = row[at["Accelerator Core"]] if "Accelerator Core" in at else ""
        kind = EventKind.COMM if core.upper() in COMM_CORES or typ.startswith("hcom_") else EventKind.KERNEL
        stream = int_or(row[at["Stream ID"]], -1) if "Stream ID" in at else -1
        args = {f: row[i] for i, f in extra if row[i] != ""}
        if "Block Num" in args and "Block Dim" not in args:   # MindSpore's older name of the column
            args["Block Dim"] = args.pop("Block Num")
        cols.add(ts, max(dur, 0), kind, name, typ, pid=pid, tid=max(stream, 0), device=device, stream=stream,
                 step=int_or(row[step_col], -1) if step_col is not None else -1, args=args_text(args))
    return cols.table()


def _with_trace_facts(kernels: EventTable, reader: "TraceReader") -> EventTable:
    """``kernels`` (from kernel_details.csv, which has no ids) with the launch link of the trace's hardware
    task of the same start and name (both files come from one source, with the same µs text), and its HCCL
    rows with the group of the trace's operator of the same name."""
    names = [kernels.strings[c] for c in kernels["name"].tolist()]
    out = kernels
    if reader.task_links:
        corr = np.array([reader.task_links.get((ts, name), -1) for ts, name in zip(kernels["ts"].tolist(), names)],
                        dtype=np.int64)
        if (corr >= 0).any():
            out = out.with_column("corr", corr)
    if reader.op_groups:
        seen: dict[str, int] = {}
        args = list(out.column_strings("args"))
        changed = False
        for i, (kind, name) in enumerate(zip(out["kind"].tolist(), names)):
            if kind != int(EventKind.COMM):
                continue
            nth = seen.get(name, 0)
            seen[name] = nth + 1
            group = reader.op_groups.get((name, nth))
            if group is None:
                continue
            obj = json.loads(args[i]) if args[i] else {}
            obj["group"] = group
            args[i] = args_text(obj)
            changed = True
        if changed:
            table = EventTable.from_records(**{k: out[k] for k in ("ts", "dur", "kind", "pid", "tid", "device",
                                                                   "stream", "value", "step", "corr")},
                                            name=names, type=out.column_strings("type"), args=args,
                                            source=out.column_strings("source"))
            out = table
    return out


def _named_groups(path: Path, problems: list[str]) -> dict[str, str]:
    """op instance name -> group name, from the tool's communication.json keys (``op@group``)."""
    if not path.is_file():
        return {}
    try:
        check_input_file(path)
        data = orjson.loads(path.read_bytes())
    except (orjson.JSONDecodeError, OSError) as e:
        problems.append(f"{path}: not readable ({e}); communication groups named by the trace's lanes")
        return {}
    names: dict[str, str] = {}
    for step in data.values() if isinstance(data, dict) else ():
        for ops in step.values() if isinstance(step, dict) else ():
            for key in ops if isinstance(ops, dict) else ():
                op, sep, group = str(key).rpartition("@")
                if sep and op:
                    names.setdefault(op, group)
    return names


# -- memory_record.csv --------------------------------------------------------------------------------
def _read_memory_record(path: Path, pid: int, problems: list[str], source: str, device_col: str = "Device Type",
                        type_: str = "memory") -> EventTable:
    check_input_file(path)
    cols = EventRows(source)
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig", errors="replace")))
    series = [f for f in (reader.fieldnames or []) if f and f.endswith("(MB)")]
    for lineno, row in enumerate(reader, 2):
        try:
            ts = us_text_to_ns(row["Timestamp(us)"])
        except (KeyError, ValueError, TypeError):
            problems.append(f"{path}:{lineno}: unreadable timestamp, row skipped")
            continue
        who = f"{row.get('Component', '')} {row.get(device_col, '')}".strip()
        # the row's identity, so memory_record.csv / npu_module_mem.csv can be given back row for row
        args = args_text({k: (row.get(k) or "").strip() for k in ("Component", device_col, "Stream Ptr")
                           if (row.get(k) or "").strip()})
        for s in series:
            try:
                val = float(row[s])
            except (TypeError, ValueError):
                continue
            cols.add(ts, 0, EventKind.COUNTER, f"{who} {s}".strip(), type_, pid=pid, value=val, args=args)
    return cols.table()


def _read_operator_memory(path: Path, pid: int, problems: list[str], source: str) -> EventTable:
    """operator_memory.csv -> one MEMORY event per allocation (see module doc)."""
    check_input_file(path)
    cols = EventRows(source)
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig", errors="replace")))
    for lineno, row in enumerate(reader, 2):
        row = {k.strip(): (v or "").strip() for k, v in row.items() if k}
        try:
            ts = us_text_to_ns(row["Allocation Time(us)"])
            size_kb = float(row["Size(KB)"])
        except (KeyError, ValueError, TypeError):
            problems.append(f"{path}:{lineno}: unreadable Allocation Time(us) or Size(KB), row skipped")
            continue
        released = row.get("Release Time(us)", "")
        try:
            dur = us_text_to_ns(released) - ts if released else 0
        except (ValueError, TypeError):
            dur = 0
        m = _DEVICE_RE.search(row.get("Device Type", ""))
        args = {k: v for k, v in row.items() if k != "Name" and v != ""}   # times as written (float64 µs lose them)
        cols.add(ts, max(dur, 0), EventKind.MEMORY, row.get("Name", ""), "operator_memory", pid=pid,
                 device=int(m.group(1)) if m else -1, value=size_kb * 1024.0, args=args_text(args))
    return cols.table()
