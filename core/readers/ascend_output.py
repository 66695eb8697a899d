"""Read the text outputs of the Ascend profilers: the ``ASCEND_PROFILER_OUTPUT/``
of a torch_npu ``*_ascend_pt`` or a MindSpore ``*_ascend_ms`` run directory.

Both tools write the same file kinds (msprof's analysis underneath):

``trace_view.json``
    a Chrome trace as a JSON *array*, ``ts``/``dur`` as strings of
    microseconds with three decimals (exact ns), grouped in processes:
    the framework's host process (``Python`` for torch_npu, ``MindSpore``;
    ``ProfilerStep#N``, ``cpu_op``, ``python_function``), ``CPU OP``,
    ``CANN`` (``AscendCL@api``, ``Node@launch``, ``Hccl@...``; the API level
    is the ``level`` arg), ``Ascend Hardware`` (device tasks, threads
    ``Stream <id>``), ``HCCL``/``Communication`` (thread ``Group <n>
    Communication``: the ``hcom_*`` operators; threads ``Plane <n>``: their
    ``Notify_*``/``Memcpy``/``Reduce_*`` tasks with ``src rank``, ``dst
    rank``, ``size(Byte)``, ``transport type``, ``link type``, ``stream id``),
    mstx, counters (``AI Core Freq``, ``HBM`` ...) and the derived ``Scope
    Layer``/``Overlap Analysis``/``Step Trace`` (skipped: npuprof computes them).
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
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np
import orjson

from npuprof.events import KERNEL_TENSOR_COLUMNS, EventKind, EventTable
from npuprof.fileio import check_input_file
from npuprof.rawstore import RAW_DIR
from npuprof.traceflows import LAUNCH_FLOW_CATS, flow_ends_of_columns, hashable

from .trace_decode import ChunksRefused, NoTraceEvents, TraceDecodeError, TraceEvents, collector_paused, \
    decode_events, event_array_chunks, events_of_structs

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
TRACE_VIEW = "trace_view.json"
KERNEL_DETAILS = "kernel_details.csv"
MEMORY_RECORD = "memory_record.csv"
NPU_MODULE_MEM = "npu_module_mem.csv"
OPERATOR_MEMORY = "operator_memory.csv"
COMMUNICATION = "communication.json"
INFO_GLOB = "profiler_info*.json"

# process name -> how its complete ("X") events are read
_DERIVED = {"Scope Layer", "Overlap Analysis", "Step Trace"}
_MSTX_PROCESSES = {"python", "python3", "MsTx", "MsprofTx"}
_COMM_PROCESSES = {"HCCL", "Communication"}
_COMM_CORES = {"HCCL", "COMMUNICATION"}
_DIGITS_RE = re.compile(r"(\d+)")
_DEVICE_RE = re.compile(r"NPU\s*:?\s*(\d+)")
_STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)")
_OP_SUFFIX_RE = re.compile(r"-op\d+$")
_HCOM_INSTANCE_RE = re.compile(r"(_\d+)+$")         # hcom_allReduce__586_0_1 -> hcom_allReduce_
_GROUP_LANE_RE = re.compile(r"^Group\s+(\S+)\s+Communication")
INVALID_RANK = 4294967295                            # msprof's "no peer" (uint32 max)
_INT64 = (-(1 << 63), 1 << 63)
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


def us_text_to_ns(value: Any) -> int:
    """Microseconds as the Ascend tools write them -> integer ns, exactly.

    Strings keep their three decimals exactly (a float would lose the ns at
    epoch magnitudes); numbers are rounded; a trailing tab is ignored.

    Example::

        >>> us_text_to_ns("1795306209649981.618\\t")
        1795306209649981618
        >>> us_text_to_ns(12.5)
        12500
    """
    if isinstance(value, str):
        text = value.strip()
        neg = text.startswith("-")
        if neg:
            text = text[1:]
        whole, _, frac = text.partition(".")
        if not whole.isdigit() or (frac and not frac.isdigit()):
            # scientific notation and the like: fall back to float
            return int(round(float(value) * 1000))
        ns = int(whole) * 1000 + int((frac + "000")[:3])
        if len(frac) > 3 and frac[3] >= "5":
            ns += 1
        return -ns if neg else ns
    return int(round(float(value) * 1000))


def us_texts_to_ns(values: list) -> list:
    """:func:`us_text_to_ns` of every value, None where it raises; the tools' usual forms (texts of digits
    with three decimals, plain numbers) are converted in bulk, exactly as one by one.

    Example::

        >>> us_texts_to_ns(["1795306209649981.618", "12.5", None])
        [1795306209649981618, 12500, None]
    """
    ns, ok = us_texts_to_ns_array(values)
    out = ns.tolist()
    for i in np.flatnonzero(~ok).tolist():
        out[i] = _ts_or_none(values[i])
    return out


def us_texts_to_ns_array(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(ns, ok): :func:`us_text_to_ns` of every value as int64, ``ok`` False where it raises or its result
    is beyond int64 (those values are 0).

    Example::

        >>> ns, ok = us_texts_to_ns_array(["1.5", 2, None])
        >>> ns.tolist(), ok.tolist()
        ([1500, 2000, 0], [True, True, False])
    """
    n = len(values)
    kinds = set(map(type, values))
    if kinds == {str}:
        ns, ok = _digit_texts_to_ns(values)
    elif kinds <= {int, float} and n:
        with np.errstate(invalid="ignore", over="ignore"):
            x = np.array(values, dtype=np.float64) * 1000.0
            ok = np.abs(x) < 2.0 ** 62            # nan and inf compare False: done one by one below
        ns = np.where(ok, np.rint(np.where(ok, x, 0.0)), 0).astype(np.int64)
    else:
        ns, ok = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    lo, hi = _INT64
    for i in np.flatnonzero(~ok).tolist():
        v = _ts_or_none(values[i])
        if v is not None and lo <= v < hi:
            ns[i], ok[i] = v, True
    return ns, ok


def _digit_texts_to_ns(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(ns, ok): ``int(whole) * 1000 + int(three decimals)`` of each text of that form (up to 19 digits);
    ``ok`` False (ns 0) for any other text."""
    n = len(texts)
    ns = np.zeros(n, dtype=np.int64)
    good = np.zeros(n, dtype=bool)
    try:
        arr = np.array(texts, dtype=np.bytes_)
    except UnicodeEncodeError:
        return ns, good
    width = arr.dtype.itemsize
    if not n or not width:
        return ns, good
    mat = arr.view(np.uint8).reshape(n, width)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    shortest, longest = int(lengths.min()), int(lengths.max())
    for length in [shortest] if shortest == longest else np.unique(lengths).tolist():
        if not 5 <= length <= 20:
            continue
        rows = slice(None) if shortest == longest else np.flatnonzero(lengths == length)
        block = mat[rows, :length]
        digits = np.delete(block, length - 4, axis=1) - np.uint8(48)     # a non-digit wraps past 9
        ok = (block[:, length - 4] == ord(".")) & (digits <= 9).all(axis=1)
        # sum of digit * 10**k in uint64: wraps only past 2**64, which 19 digits never reach
        value = digits.astype(np.uint64) @ _POWERS_OF_TEN[length - 2::-1]
        ok &= value < np.uint64(2 ** 63)
        ns[rows] = np.where(ok, value, 0).astype(np.int64)
        good[rows] = ok
    return ns, good


_POWERS_OF_TEN = np.array([10 ** k for k in range(20)], dtype=np.uint64)


def _ts_or_none(value: Any) -> Optional[int]:
    try:
        return us_text_to_ns(value)
    except (TypeError, ValueError, OverflowError):
        return None


def op_type_of(full_name: str) -> str:
    """The op type of a device task named without a type: the leaf of a
    scoped name without its ``-opN`` suffix (MindSpore's naming).

    Example::

        >>> op_type_of("Gradients/Default/fc1-Dense/gradMatMul/MatMul-op12")
        'MatMul'
    """
    leaf = full_name.rsplit("/", 1)[-1]
    return _OP_SUFFIX_RE.sub("", leaf) or leaf


def comm_op_type(name: str) -> str:
    """The op type of an HCCL operator instance, as kernel_details names it.

    Example::

        >>> comm_op_type("hcom_allReduce__586_0_1")
        'hcom_allReduce_'
    """
    return _HCOM_INSTANCE_RE.sub("", name) or name


def is_ascend_trace(path: Path) -> bool:
    """True when ``path`` is a trace written by torch_npu/MindSpore (a JSON array), not by npuprof."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64).lstrip()
    except OSError:
        return False
    return head.startswith(b"[")


is_mindspore_trace = is_ascend_trace


class _Columns:
    """Column lists for one EventTable, filled row by row while reading text formats."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.ts: list[int] = []
        self.dur: list[int] = []
        self.kind: list[int] = []
        self.pid: list[int] = []
        self.tid: list[int] = []
        self.device: list[int] = []
        self.stream: list[int] = []
        self.value: list[float] = []
        self.step: list[int] = []
        self.name: list[str] = []
        self.type: list[str] = []
        self.args: list[str] = []
        self.corr: list[int] = []

    def add(self, ts: int, dur: int, kind: EventKind, name: str, type_: str = "", pid: int = 0, tid: int = 0,
            device: int = -1, stream: int = -1, value: float = 0.0, step: int = -1, args: str = "",
            corr: int = -1) -> None:
        self.ts.append(ts)
        self.dur.append(dur)
        self.kind.append(int(kind))
        self.pid.append(pid)
        self.tid.append(tid)
        self.device.append(device)
        self.stream.append(stream)
        self.value.append(value)
        self.step.append(step)
        self.name.append(name)
        self.type.append(type_)
        self.args.append(args)
        self.corr.append(corr)

    def table(self) -> EventTable:
        if not self.ts:
            return EventTable.empty()
        return EventTable.from_records(ts=self.ts, dur=self.dur, kind=self.kind, pid=self.pid, tid=self.tid,
                                       device=self.device, stream=self.stream, value=self.value, step=self.step,
                                       name=self.name, type=self.type, args=self.args, source=self.source,
                                       corr=self.corr)


def _args_text(args: dict) -> str:
    return orjson.dumps(args, default=str).decode() if args else ""


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
    out_dir = Path(out_dir)
    problems: list[str] = []
    tv = out_dir / TRACE_VIEW
    trace = _CompactTrace()
    if tv.is_file() and is_ascend_trace(tv):
        with collector_paused():
            trace = _load_trace(tv, problems)
    meta = _TraceMeta.of(trace.meta)
    run_device = device if device is not None else device_from_data(out_dir, meta)
    source = writer.value
    kd = out_dir / KERNEL_DETAILS
    kernels = _read_kernel_details(kd, run_device, pid, problems, source) if kd.is_file() else EventTable.empty()
    tables: list[EventTable] = []
    if len(trace):
        reader = _TraceReader(meta, run_device, pid, source, skip_cpu_ops=skip_cpu_ops,
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


def _load_trace(path: Path, problems: list[str]) -> "_CompactTrace":
    """The trace's events, compact: decoded chunk by chunk (msgspec), else whole (orjson, or a file that
    does not split into event chunks)."""
    check_input_file(path)
    try:
        trace = _CompactTrace()
        for chunk in event_array_chunks(path, as_structs=True):
            trace.add_structs(chunk)
        return trace.finish()
    except ChunksRefused:
        pass
    try:
        events = decode_events(path.read_bytes())
    except NoTraceEvents:
        problems.append(f"{path}: no event list; file skipped")
    except TraceDecodeError as e:
        problems.append(f"{path}: not valid JSON, cut short or damaged ({e}); file skipped")
    else:
        trace = _CompactTrace()
        trace.add(events)
        return trace.finish()
    return _CompactTrace()


# -- the device id --------------------------------------------------------------------------------------
def device_from_data(out_dir: Path, meta: "_TraceMeta",
                     encoding_meta: Optional[Callable[[], "_TraceMeta"]] = None) -> int:
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


@dataclass
class _TraceMeta:
    """The trace's metadata events: process and thread names, labels, sort indexes."""

    proc_name: dict = field(default_factory=dict)
    proc_device: dict = field(default_factory=dict)     # pid -> device id from its label (-2: "NPU", no id)
    proc_sort: dict = field(default_factory=dict)
    thread_name: dict = field(default_factory=dict)

    @classmethod
    def of(cls, events: Iterable[Any]) -> "_TraceMeta":
        meta = cls()
        for ev in events:
            if not isinstance(ev, dict) or ev.get("ph") != "M":
                continue
            args = ev.get("args")
            if not isinstance(args, dict) or not _is_key(ev.get("pid")) or not _is_key(ev.get("tid")):
                continue
            what, epid = ev.get("name"), ev.get("pid")
            if what == "process_name":
                meta.proc_name[epid] = str(args.get("name", ""))
            elif what == "process_labels":
                label = str(args.get("labels", ""))
                if label.startswith("NPU"):
                    m = _DIGITS_RE.search(label)
                    meta.proc_device[epid] = int(m.group(1)) if m else -2
            elif what == "process_sort_index":
                meta.proc_sort[epid] = args.get("sort_index")
            elif what == "thread_name":
                meta.thread_name[(epid, ev.get("tid"))] = str(args.get("name", ""))
        return meta

    def encoded_devices(self) -> set:
        """Device ids of msprof's device process ids whose encoding the sort index confirms."""
        found = set()
        for epid, label_device in self.proc_device.items():
            sort = self.proc_sort.get(epid)
            if label_device != -2 or not isinstance(epid, int) or not isinstance(sort, int):
                continue
            if epid > 1023 and (epid >> 5) & 31 == sort:
                found.add(epid & 31)
        return found


def _is_key(value: Any) -> bool:
    """pid/tid values usable as dict keys (JSON gives lists/objects in damaged files)."""
    return value is None or isinstance(value, (int, str, float))


def _as_int(value: Any) -> int:
    if isinstance(value, int):
        return value
    m = _DIGITS_RE.search(str(value))
    return int(m.group(1)) if m else 0


def _int_or(text: Any, default: int) -> int:
    if text is None:
        return default
    if isinstance(text, int):
        return text
    try:
        return int(str(text).strip())
    except ValueError:
        return default


# -- kernel_details.csv ---------------------------------------------------------------------------------
def _read_kernel_details(path: Path, device: int, pid: int, problems: list[str], source: str) -> EventTable:
    check_input_file(path)
    cols = _Columns(source)
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
        kind = EventKind.COMM if core.upper() in _COMM_CORES or typ.startswith("hcom_") else EventKind.KERNEL
        stream = _int_or(row[at["Stream ID"]], -1) if "Stream ID" in at else -1
        args = {f: row[i] for i, f in extra if row[i] != ""}
        if "Block Num" in args and "Block Dim" not in args:   # MindSpore's older name of the column
            args["Block Dim"] = args.pop("Block Num")
        cols.add(ts, max(dur, 0), kind, name, typ, pid=pid, tid=max(stream, 0), device=device, stream=stream,
                 step=_int_or(row[step_col], -1) if step_col is not None else -1, args=_args_text(args))
    return cols.table()


def _with_trace_facts(kernels: EventTable, reader: "_TraceReader") -> EventTable:
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
            args[i] = _args_text(obj)
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


# -- trace_view.json ----------------------------------------------------------------------------------
@dataclass
class _CommEvent:
    ts: int
    dur: int
    name: str
    epid: Any
    tid: int
    device: int
    lane: str
    args: dict
    corr: int


_READ_PHASES = ("X", "C", "i", "I")
_PHASE = {"X": 0, "C": 1, "i": 2, "I": 2}      # read events' phases: complete, counter, instant
_PH_X, _PH_C, _PH_I = 0, 1, 2
_PLAIN = (int, str)       # pid/tid types that are their own flow key (traceflows.hashable)
_COUNTER, _MARK, _STEP, _API, _RANGE, _OP, _STACK, _KERNEL, _COMM = (
    int(k) for k in (EventKind.COUNTER, EventKind.MARK, EventKind.STEP, EventKind.API, EventKind.RANGE,
                     EventKind.OP, EventKind.STACK, EventKind.KERNEL, EventKind.COMM))
_STEPS: dict = {}
_ROW_FIELDS = ("ts", "dur", "kind", "name", "type", "tid", "device", "stream", "value", "step", "args", "corr")
# what an event becomes (decided once per distinct process, category, name and phase)
_SKIP, _ROW, _MSTX_SPAN, _CANN_API, _COUNTERS, _HARDWARE, _HCCL = range(7)
# every event through the per-event rules (tests: the reference the bulk rules must equal)
_PER_EVENT_ONLY = False
_READ_FIELDS = ("ph", "ts", "dur", "pid", "tid", "name", "cat", "args")


def _step_of(name: str) -> Optional[int]:
    """The N of a ``ProfilerStep#N`` name, else None (remembered per name: a trace repeats its names)."""
    try:
        return _STEPS[name]
    except KeyError:
        m = _STEP_RE.match(name)
        step = int(m.group(1)) if m else None
        if len(_STEPS) < 1 << 16:
            _STEPS[name] = step
        return step


def _codes(values: list, index: dict, table: list) -> np.ndarray:
    """The code of each value in ``table`` (``index``: value -> code), new values added in order."""
    found = list(map(index.get, values))
    if None in found:
        for v in values:
            if v not in index:
                index[v] = len(table)
                table.append(v)
        found = list(map(index.__getitem__, values))
    return np.array(found, dtype=np.int64)


def _distinct(codes: np.ndarray, size: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` of non-negative codes; without a sort where the codes are
    dense enough (below ``size``, or a few times the number of codes)."""
    top = size if size is not None else (int(codes.max()) + 1 if len(codes) else 0)
    if top > 4 * len(codes) + (1 << 20):
        uniq, at = np.unique(codes, return_inverse=True)
        return uniq, at.reshape(-1)
    seen = np.zeros(top, dtype=bool)
    seen[codes] = True
    uniq = np.flatnonzero(seen)
    where = np.zeros(top, dtype=np.int64)
    where[uniq] = np.arange(len(uniq))
    return uniq, where[codes]


def _pairs(a: np.ndarray, b: np.ndarray) -> tuple[list, np.ndarray]:
    """The distinct (a, b) pairs of two columns of non-negative codes, and each row's pair."""
    base = int(b.max()) + 1 if len(b) else 1
    if len(a) and int(a.max()) >= (1 << 62) // base:
        pairs, at = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)
        return pairs.tolist(), at.reshape(-1)
    keys, at = _distinct(a * base + b)
    return [(k // base, k % base) for k in keys.tolist()], at


def _only(values: list, *types: type) -> bool:
    return set(map(type, values)) <= set(types)


@dataclass
class _CompactTrace:
    """A trace_view.json's events, compact (one chunk of decoded events at a time goes in, see
    :meth:`add`): the metadata events as dicts, the flow events' fields as lists; every event read (phase ``X``, ``C``, ``i``,
    ``I``) as one array entry per column, in file order, names, categories and args as codes into the
    distinct values (args: each distinct JSON text, or orjson's objects). An event whose values are not
    of the usual types (pid/tid not integers, a name not a string, an unreadable time ...) is ``odd``:
    its values are kept as the file has them and read by the per-event rules."""

    raw_args: bool = True
    meta: list = field(default_factory=list)
    flows: dict = field(default_factory=dict)     # the flow events (s/f): cat, pid, tid, ts, id as lists
    names: list = field(default_factory=list)
    cats: list = field(default_factory=list)
    args: list = field(default_factory=list)
    odd: dict = field(default_factory=dict)       # position -> (ph, cat, name, pid, tid, ts ns, dur ns)
    not_objects: int = 0
    columns: dict = field(default_factory=dict)   # phase, plain, ts, dur, pid, tid, name, cat, arg
    _parts: list = field(default_factory=list)
    pids: list = field(default_factory=list)
    _index: dict = field(default_factory=lambda: {"names": {}, "cats": {}, "args": {}, "pids": {}})
    _count: int = 0
    _entries: int = 0

    def __len__(self) -> int:
        return self._entries

    def add(self, events: TraceEvents) -> None:
        """Take one chunk of decoded events (``events`` is left empty)."""
        self.raw_args = events.decoder == "msgspec"
        self.not_objects += events.not_objects
        self._entries += len(events)
        ph = events.ph
        self.meta += events.dicts(i for i, p in enumerate(ph) if p == "M")
        flows = [i for i, p in enumerate(ph) if p == "s" or p == "f"]
        for key, values in (("cat", events.cat), ("pid", events.pid), ("tid", events.tid), ("ts", events.ts),
                            ("id", events.id)):
            self.flows.setdefault(key, []).extend([values[i] for i in flows])
        read = [i for i, p in enumerate(ph) if p in _READ_PHASES]
        if read:
            take = itemgetter(*read) if len(read) > 1 else (lambda values: (values[read[0]],))
            self._add_read(*(take(getattr(events, k)) for k in _READ_FIELDS))
        events.release()

    def add_structs(self, structs: list) -> None:
        """Take one chunk of msgspec's event structs (:func:`event_array_chunks` ``as_structs``): only the
        fields used are taken, each from the events that use it."""
        self.raw_args = True
        self._entries += len(structs)
        ph = list(map(attrgetter("ph"), structs))
        meta = [e for e, p in zip(structs, ph) if p == "M"]
        if meta:
            self.meta += events_of_structs(meta).dicts(range(len(meta)))
        flows = [e for e, p in zip(structs, ph) if p == "s" or p == "f"]
        for key in ("cat", "pid", "tid", "ts", "id"):
            self.flows.setdefault(key, []).extend(map(attrgetter(key), flows))
        read = [e for e, p in zip(structs, ph) if p in _READ_PHASES]
        del structs[:], ph, meta, flows
        if read:
            self._add_read(*(list(map(attrgetter(k), read)) for k in _READ_FIELDS))

    def _add_read(self, phases: Sequence[Any], ts_in: Sequence[Any], dur_in: Sequence[Any], pids: Sequence[Any],
                  tids: Sequence[Any], names: Sequence[Any], cats: Sequence[Any], args: Sequence[Any]) -> None:
        n = len(phases)
        phase = np.fromiter(map(_PHASE.__getitem__, phases), dtype=np.uint8, count=n)
        ts, ts_ok = us_texts_to_ns_array(ts_in)
        spans = phase == _PH_X
        if spans.all():
            dur, dur_ok = us_texts_to_ns_array(dur_in)
        else:      # a duration only for complete events
            dur, dur_ok = np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool)
            x = np.flatnonzero(spans)
            if len(x):
                dur[x], dur_ok[x] = us_texts_to_ns_array([dur_in[i] for i in x.tolist()])
        if self.raw_args:
            arg = _codes(list(map(bytes, args)), self._index["args"], self.args)
        else:      # orjson's objects: one code each
            arg = np.arange(len(self.args), len(self.args) + n, dtype=np.int64)
            self.args += list(args)
        cols = None
        plain_all = (not _PER_EVENT_ONLY and _only(pids, int) and _only(tids, int) and _only(names, str)
                     and _only(cats, str, type(None)) and bool(ts_ok.all()) and bool(dur_ok.all()))
        if plain_all:
            try:
                cols = {"pid": np.array(pids, dtype=np.int64), "tid": np.array(tids, dtype=np.int64)}
            except OverflowError:
                plain_all = False
            plain = np.ones(n, dtype=bool)
        if cols is None:     # some odd events: each one looked at
            lo, hi = _INT64
            ok = [type(p) is int and type(t) is int and type(nm) is str and (c is None or type(c) is str)
                  and lo <= p < hi and lo <= t < hi and not _PER_EVENT_ONLY
                  for p, t, nm, c in zip(pids, tids, names, cats)]
            plain = np.array(ok, dtype=bool) & ts_ok & dur_ok
            for j in np.flatnonzero(~plain).tolist():
                self.odd[self._count + j] = (phases[j], cats[j], names[j], pids[j], tids[j], _ts_or_none(ts_in[j]),
                                             _ts_or_none(dur_in[j]) if phases[j] == "X" else 0)
            good = plain.tolist()
            cols = {"pid": np.array([v if g else 0 for v, g in zip(pids, good)], dtype=np.int64),
                    "tid": np.array([v if g else 0 for v, g in zip(tids, good)], dtype=np.int64)}
            names = [v if g else "" for v, g in zip(names, good)]
            cats = [v if g else None for v, g in zip(cats, good)]
        cols["ts"], cols["dur"] = ts, dur
        cols["phase"] = phase
        cols["plain"] = plain
        cols["pidc"] = _codes(pids if plain_all else cols["pid"].tolist(), self._index["pids"], self.pids)
        cols["name"] = _codes(names, self._index["names"], self.names)
        cols["cat"] = _codes(cats, self._index["cats"], self.cats)
        cols["arg"] = arg
        self._parts.append(cols)
        self._count += n

    def finish(self) -> "_CompactTrace":
        """The columns of every chunk added, joined."""
        if self._parts:
            self.columns = {k: np.concatenate([p[k] for p in self._parts]) for k in self._parts[0]}
        self._parts = []
        self._index = {}
        return self


class _ArgsTable:
    """Each distinct ``args`` of a trace as a dict (``{}`` where not an object) and as the event table's args
    text, parsed once (a trace repeats its args: the same call stacks, the same task fields)."""

    def __init__(self, values: list, raw: bool) -> None:
        self.values, self.raw = values, raw
        self.parsed: dict = {}
        self.texts: dict = {}

    def dict(self, code: int) -> dict:
        """Raises ValueError where orjson does not read the args."""
        got = self.parsed.get(code)
        if got is None:
            v = self.values[code]
            if self.raw:
                v = orjson.loads(v)
            got = self.parsed[code] = v if isinstance(v, dict) else {}
        return got

    def text(self, code: int) -> str:
        got = self.texts.get(code)
        if got is None:
            got = self.texts[code] = _args_text(self.dict(code))
        return got

    def readable(self, codes: np.ndarray) -> np.ndarray:
        """Whether each code's args parse (orjson reads every args of a trace that msgspec decoded but
        integers beyond 64 bits)."""
        uniq, inverse = _distinct(codes, len(self.values))
        ok = np.ones(len(uniq), dtype=bool)
        for k, c in enumerate(uniq.tolist()):
            try:
                self.dict(c)
            except ValueError:
                ok[k] = False
        return ok[inverse]


class _Strings:
    """Local string codes of the rows being built (the table's pool is laid out from them at the end)."""

    def __init__(self) -> None:
        self.index: dict = {"": 0}
        self.strings: list = [""]

    def code(self, s: str) -> int:
        c = self.index.get(s)
        if c is None:
            c = self.index[s] = len(self.strings)
            self.strings.append(s)
        return c


def _text_codes(codes: np.ndarray, args: _ArgsTable, strings: _Strings) -> np.ndarray:
    """The local string code of the args text of each args code."""
    uniq, at = _distinct(codes, len(args.values))
    return np.array([strings.code(args.text(a)) for a in uniq.tolist()], dtype=np.int64)[at]


def _hardware_task(args: dict) -> dict:
    """A hardware task's args in the table (kernel_details' names)."""
    task = {"Accelerator Core": str(args.get("Task Type", "")), "Task ID": args.get("Task Id"),
            "Model ID": args.get("Model Id")}
    task.update((k, args[k]) for k in KERNEL_TENSOR_COLUMNS if isinstance(args.get(k), str))
    return {k: v for k, v in task.items() if v not in (None, "")}


def _hardware_kind(name: str, task: dict) -> int:
    return _COMM if name.startswith("hcom_") or str(task.get("Accelerator Core", "")).upper() in _COMM_CORES \
        else _KERNEL


class _Rows:
    """Rows being built, as column arrays per part (``pos``/``sub``: the event and its row's place)."""

    def __init__(self) -> None:
        self.parts: list[dict] = []

    def add(self, **cols: Any) -> None:
        n = len(cols["ts"])
        if n:
            self.parts.append({k: np.broadcast_to(np.asarray(v), (n,)) if np.ndim(v) == 0 else np.asarray(v)
                               for k, v in cols.items()})

    def add_tuples(self, rows: list, strings: _Strings, pos: Optional[list] = None) -> None:
        """Rows as tuples of :data:`_ROW_FIELDS` (strings as text)."""
        if not rows:
            return
        cols = dict(zip(_ROW_FIELDS, map(list, zip(*rows))))
        for k in ("name", "type", "args"):
            cols[k] = [strings.code(s) for s in cols[k]]
        if pos is not None:
            cols["pos"], cols["sub"] = [p for p, _ in pos], [s for _, s in pos]
        self.add(**cols)

    def joined(self, order_by_pos: bool) -> dict:
        """Every part's rows, column by column (each part's column released once copied); in event order
        (``pos``, then ``sub``) when asked."""
        if not self.parts:
            return {}
        keys = [k for k in (*_ROW_FIELDS, "pos", "sub") if k in self.parts[0]]
        out = {k: np.concatenate([p.pop(k).astype(_ROW_DTYPES.get(k, np.int64), copy=False) for p in self.parts])
               for k in keys}
        self.parts = []
        if order_by_pos:
            order = np.lexsort((out.pop("sub"), out.pop("pos")))
            for k in list(out):
                out[k] = out[k][order]
        return out


_ROW_DTYPES = {"value": np.float64, "kind": np.uint8}


def _table(cols: dict, strings: list, pid: int, source: str) -> EventTable:
    """The event table of the rows ``cols`` (strings as codes into ``strings``, ``""`` first), its string pool
    laid out as :meth:`EventTable.from_records` lays it out: ``""``, then each new text in order of first
    appearance in the name, type, source and args columns."""
    n = len(cols["ts"])
    if source in strings:
        source_code = strings.index(source)
    else:
        source_code = len(strings)
        strings = strings + [source]
    seq = np.concatenate([cols["name"], cols["type"], np.array([source_code], dtype=np.int64), cols["args"]])
    first = np.full(len(strings), len(seq), dtype=np.int64)
    np.minimum.at(first, seq, np.arange(len(seq), dtype=np.int64))
    used = np.flatnonzero(first < len(seq))
    order = used[np.argsort(first[used], kind="stable")]
    order = np.concatenate([[0], order[order != 0]])
    remap = np.zeros(len(strings), dtype=np.int64)
    remap[order] = np.arange(len(order))
    numeric = {k: cols[k] for k in ("ts", "dur", "kind", "tid", "device", "stream", "value", "step", "corr")}
    numeric["pid"] = np.full(n, pid, dtype=np.int64)
    codes = {k: remap[cols[k]] for k in ("name", "type", "args")}
    codes["source"] = int(remap[source_code])
    return EventTable.from_codes(numeric, codes, [strings[k] for k in order.tolist()])


class _TraceReader:
    """Turns a trace's events into an event table (see module doc for the rules)."""

    def __init__(self, meta: _TraceMeta, device: int, pid: int, source: str, skip_cpu_ops: bool,
                 skip_hardware: bool, skip_mstx: bool, groups: dict[str, str]) -> None:
        self.meta, self.device, self.pid, self.source = meta, device, pid, source
        self.skip_cpu_ops, self.skip_hardware, self.skip_mstx = skip_cpu_ops, skip_hardware, skip_mstx
        self.groups = groups
        self.task_links: dict = {}        # (start ns, name) -> link of hardware tasks not read
        self.op_groups: dict = {}         # (op name, occurrence) -> group, of HCCL operators not read
        self.comm: list[_CommEvent] = []

    def read(self, trace: _CompactTrace, path: Path, problems: list[str]) -> EventTable:
        """The trace's events; launch links from its ``HostToDevice`` flows, else its ``async_npu`` ones.
        ``trace`` is consumed (released once read).

        What each event becomes is decided once per distinct (process, category, name, phase) and applied
        to every event in bulk; the args are parsed once per distinct text, only where the event's kind
        uses them. The odd events (see :class:`_CompactTrace`) go through the same rules one by one."""
        f = trace.flows
        flows = flow_ends_of_columns(f["cat"], f["pid"], f["tid"], us_texts_to_ns(f["ts"]), f["id"],
                                     LAUNCH_FLOW_CATS) if f else {}
        trace.flows = {}
        args = _ArgsTable(trace.args, trace.raw_args)
        strings = _Strings()
        comm_streams = self._comm_streams(trace, args)
        main, hardware = _Rows(), _Rows()
        comm: list = []          # (position, _CommEvent)
        links: list = []         # (position, (ts, name), link) of hardware tasks not read
        bad = trace.not_objects
        c = trace.columns
        if c:
            bad += self._plain(trace, args, flows, strings, comm_streams, main, hardware, comm, links)
            bad += self._odd(trace, args, flows, strings, comm_streams, main, hardware, comm, links)
        trace.columns, trace.odd, trace.args = {}, {}, []
        for _, key, link in sorted(links, key=lambda x: x[0]):
            self.task_links[key] = link
        self.comm = [e for _, e in sorted(comm, key=lambda x: x[0])]
        tail: list = []
        self._add_comm(tail)
        if bad:
            problems.append(f"{path}: {bad} malformed event(s) skipped")
        parts = [p for p in (main.joined(True), hardware.joined(True)) if p]
        tail_rows = _Rows()
        tail_rows.add_tuples(tail, strings)
        parts += [p for p in (tail_rows.joined(False),) if p]
        if not parts:
            return EventTable.empty()
        cols = {k: np.concatenate([p.pop(k) for p in parts]) for k in _ROW_FIELDS}
        del parts
        return _table(cols, strings.strings, self.pid, self.source)

    def _plain(self, trace: _CompactTrace, args: _ArgsTable, flows: dict, strings: _Strings, comm_streams: set,
               main: _Rows, hardware: _Rows, comm: list, links: list) -> int:
        """The rows of the plain events, in bulk; returns how many were malformed."""
        c = trace.columns
        rows = np.flatnonzero(c["plain"])
        if not len(rows):
            return 0
        pid, tid, phase = c["pid"][rows], c["tid"][rows], c["phase"][rows]
        name, cat, arg = c["name"][rows], c["cat"][rows], c["arg"][rows]
        pid_at = c["pidc"][rows]
        process = [self.meta.proc_name.get(v, "") for v in trace.pids]
        device = [self._device_of(v) for v in trace.pids]
        n_cat, n_name = len(trace.cats) + 1, len(trace.names) + 1
        if len(trace.pids) * n_cat * n_name * 3 < 1 << 62:
            key = ((pid_at * n_cat + cat) * n_name + name) * 3 + phase
            combos, at = _distinct(key)
            ph_of, rest = combos % 3, combos // 3
            name_of, rest = rest % n_name, rest // n_name
            cat_of, pid_of = rest % n_cat, rest // n_cat
        else:
            stacked = np.stack([pid_at, cat, name, phase.astype(np.int64)], axis=1)
            combos, at = np.unique(stacked, axis=0, return_inverse=True)
            pid_of, cat_of, name_of, ph_of = combos.T
        at = at.reshape(-1)
        rule = [self._rule(process[p], device[p], trace.cats[ct], trace.names[nm], ph, strings)
                for p, ct, nm, ph in zip(pid_of.tolist(), cat_of.tolist(), name_of.tolist(), ph_of.tolist())]
        action = np.array([r[0] for r in rule], dtype=np.int8)[at]
        kind = np.array([r[1] for r in rule], dtype=np.int64)[at]
        out_name = np.array([r[2] for r in rule], dtype=np.int64)[at]
        out_type = np.array([r[3] for r in rule], dtype=np.int64)[at]
        out_device = np.array([r[4] for r in rule], dtype=np.int64)[at]
        step = np.array([r[5] for r in rule], dtype=np.int64)[at]
        with_args = np.array([r[6] for r in rule], dtype=bool)[at]
        with_corr = np.array([r[7] for r in rule], dtype=bool)[at]
        del rule, at
        ts, dur = c["ts"][rows], c["dur"][rows]
        needs_args = with_args | (action == _COUNTERS) | (action == _HCCL)
        if not self.skip_hardware:      # tasks not read: only their links are kept
            needs_args |= action == _HARDWARE
        bad = np.zeros(len(rows), dtype=bool)
        if needs_args.any():
            sel = np.flatnonzero(needs_args)
            bad[sel] = ~args.readable(arg[sel])
        corr = np.full(len(rows), -1, dtype=np.int64)
        linked = (with_corr | (action == _HARDWARE) | (action == _HCCL)) & ~bad
        if flows and linked.any():
            sel = np.flatnonzero(linked)
            get = flows.get
            corr[sel] = [get(k, -1) for k in zip(pid[sel].tolist(), tid[sel].tolist(), ts[sel].tolist())]
        pos = rows
        # one row per event
        one = np.flatnonzero(((action == _ROW) | (action == _MSTX_SPAN) | (action == _CANN_API)) & ~bad)
        if len(one):
            k = kind[one]
            span = action[one] == _MSTX_SPAN
            if span.any():
                k = np.where(span, np.where(dur[one] > 0, _RANGE, _MARK), k)
            typ = out_type[one]
            cann = np.flatnonzero(action[one] == _CANN_API)
            if len(cann):
                typ = typ.copy()
                typ[cann] = self._cann_levels(arg[one][cann], name[one][cann], trace.names, args, strings)
            a = np.zeros(len(one), dtype=np.int64)
            wa = np.flatnonzero(with_args[one])
            if len(wa):
                a[wa] = _text_codes(arg[one][wa], args, strings)
            main.add(pos=pos[one], sub=0, ts=ts[one], dur=dur[one], kind=k, name=out_name[one], type=typ,
                     tid=tid[one], device=out_device[one], stream=-1, value=0.0, step=step[one], args=a,
                     corr=np.where(with_corr[one], corr[one], -1))
        counters = np.flatnonzero((action == _COUNTERS) & ~bad)
        if len(counters):
            self._counters(counters, pos, ts, tid, name, arg, out_type, out_device, trace.names, args, strings, main)
        tasks = np.flatnonzero((action == _HARDWARE) & ~bad)
        if len(tasks):
            if self.skip_hardware:
                names = trace.names
                links += [(p, (t, names[nm]), link) for p, t, nm, link in
                          zip(pos[tasks].tolist(), ts[tasks].tolist(), name[tasks].tolist(), corr[tasks].tolist())
                          if link >= 0]
            else:
                self._hardware(tasks, pos, ts, dur, pid, tid, name, arg, out_device, corr, trace.names, args,
                               strings, comm_streams, hardware)
        for j in np.flatnonzero((action == _HCCL) & ~bad).tolist():
            epid, etid = int(pid[j]), int(tid[j])
            comm.append((int(pos[j]), _CommEvent(int(ts[j]), int(dur[j]), trace.names[name[j]], epid, etid,
                                                 int(out_device[j]), self.meta.thread_name.get((epid, etid), ""),
                                                 args.dict(int(arg[j])), int(corr[j]))))
        return int(bad.sum())

    def _rule(self, process: str, device: int, cat: Any, name: str, phase: int, strings: _Strings) -> tuple:
        """(action, kind, name, type, device, step, with args, with link) of the events of one process,
        category, name and phase (the module doc's rules)."""
        code = strings.code
        skip = (_SKIP, 0, 0, 0, -1, -1, False, False)
        if process in _DERIVED:
            return skip
        is_mstx = process in _MSTX_PROCESSES or cat == "MsTx"
        if self.skip_mstx and is_mstx:
            return skip
        if phase == _PH_C:
            return (_COUNTERS, _COUNTER, 0, code(process), device, -1, False, False)
        if phase == _PH_I:
            return (_ROW, _MARK, code(name), code(process), device, -1, False, False)
        step = _step_of(name)
        if step is not None:   # whatever process carries it: torch_npu's "Python", MindSpore's "MindSpore"
            return (_ROW, _STEP, code(name), code("ProfilerStep"), -1, step, False, False)
        if process == "CANN":
            level, _, api = name.partition("@")
            return (_CANN_API, _API, code(api if api else name), -1, -1, -1, True, True)
        if process == "Ascend Hardware":
            return (_HARDWARE, _KERNEL, 0, 0, device, -1, False, True)
        if process in _COMM_PROCESSES:
            return (_HCCL, _COMM, 0, 0, device, -1, False, True)
        if is_mstx:
            return (_MSTX_SPAN, _RANGE, code(name), code("mstx"), -1, -1, False, False)
        if process == "CPU OP":
            if self.skip_cpu_ops:
                return skip
            return (_ROW, _OP, code(name), code(op_type_of(name)), -1, -1, False, False)
        if cat == "python_function":
            return (_ROW, _STACK, code(name), code("python_function"), -1, -1, False, False)
        if cat == "cpu_op" or (process == "MindSpore" and "::" not in name):
            op_type = name if cat == "cpu_op" else op_type_of(name)
            return (_ROW, _OP, code(name), code(op_type), -1, -1, True, True)
        if process == "MindSpore":     # Kernel::KernelLaunch::... and the like
            return (_ROW, _API, code(name), code(name.split("::", 1)[0]), -1, -1, True, True)
        return (_ROW, _RANGE, code(name), code(str(cat or process)), device, -1, True, False)

    @staticmethod
    def _cann_levels(arg: np.ndarray, name: np.ndarray, names: list, args: _ArgsTable,
                     strings: _Strings) -> np.ndarray:
        """The API level of CANN events: their ``level`` arg, else the name's ``<level>@``, else CANN."""
        pairs, at = _pairs(arg, name)
        out = []
        for a, nm in pairs:
            level, _, api = names[nm].partition("@")
            out.append(strings.code(str(args.dict(a).get("level") or (level if api else "CANN"))))
        return np.array(out, dtype=np.int64)[at]

    @staticmethod
    def _counters(rows: np.ndarray, pos: np.ndarray, ts: np.ndarray, tid: np.ndarray, name: np.ndarray,
                  arg: np.ndarray, out_type: np.ndarray, out_device: np.ndarray, names: list, args: _ArgsTable,
                  strings: _Strings, main: _Rows) -> None:
        """One row per numeric series of each counter event's args, named ``<event name> <series>``."""
        uniq, at = _distinct(arg[rows], len(args.values))
        series_text: list = []
        series_index: dict = {}
        count = np.zeros(len(uniq), dtype=np.int64)
        flat_series: list = []
        flat_value: list = []
        for k, a in enumerate(uniq.tolist()):
            for series, value in args.dict(a).items():
                try:
                    val = float(value)
                except (TypeError, ValueError):
                    continue
                s = series_index.get(series)
                if s is None:
                    s = series_index[series] = len(series_text)
                    series_text.append(series)
                flat_series.append(s)
                flat_value.append(val)
                count[k] += 1
        per_event = count[at]
        if not per_event.sum():
            return
        start = np.zeros(len(uniq), dtype=np.int64)
        np.cumsum(count[:-1], out=start[1:])
        event = np.repeat(np.arange(len(rows)), per_event)
        first = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(per_event[:-1], out=first[1:])
        sub = np.arange(len(event)) - first[event]
        flat = start[at[event]] + sub
        series = np.array(flat_series, dtype=np.int64)[flat]
        ev = rows[event]
        pairs, pair_at = _pairs(name[ev], series)
        row_name = np.array([strings.code(f"{names[nm]} {series_text[s]}".strip()) for nm, s in pairs],
                            dtype=np.int64)[pair_at]
        main.add(pos=pos[ev], sub=sub, ts=ts[ev], dur=0, kind=_COUNTER, name=row_name, type=out_type[ev],
                 tid=tid[ev], device=out_device[ev], stream=-1, value=np.array(flat_value, dtype=np.float64)[flat],
                 step=-1, args=0, corr=-1)

    def _hardware(self, rows: np.ndarray, pos: np.ndarray, ts: np.ndarray, dur: np.ndarray, pid: np.ndarray,
                  tid: np.ndarray, name: np.ndarray, arg: np.ndarray, out_device: np.ndarray, corr: np.ndarray,
                  names: list, args: _ArgsTable, strings: _Strings, comm_streams: set, hardware: _Rows) -> None:
        """Device tasks: kernels, or communication where HCCL's (not on HCCL's own streams)."""
        threads, thread_at = np.unique(np.stack([pid[rows], tid[rows]], axis=1), axis=0, return_inverse=True)
        stream = np.array([_as_int(self.meta.thread_name.get((p, t), t)) for p, t in threads.tolist()],
                          dtype=np.int64)[thread_at.reshape(-1)]     # pids and tids: any int64, few pairs
        keep = ~np.isin(stream, np.array(sorted(comm_streams), dtype=np.int64)) if comm_streams else \
            np.ones(len(rows), dtype=bool)
        rows, stream = rows[keep], stream[keep]
        if not len(rows):
            return
        pairs, at = _pairs(name[rows], arg[rows])
        kinds, types, texts = [], [], []
        for nm, a in pairs:
            task = _hardware_task(args.dict(a))
            kind = _hardware_kind(names[nm], task)
            kinds.append(kind)
            types.append(strings.code(comm_op_type(names[nm]) if kind == _COMM else op_type_of(names[nm])))
            texts.append(strings.code(_args_text(task)))
        hardware.add(pos=pos[rows], sub=0, ts=ts[rows], dur=dur[rows], kind=np.array(kinds, dtype=np.int64)[at],
                     name=np.array([strings.code(names[nm]) for nm, _ in pairs], dtype=np.int64)[at],
                     type=np.array(types, dtype=np.int64)[at], tid=stream, device=out_device[rows], stream=stream,
                     value=0.0, step=-1, args=np.array(texts, dtype=np.int64)[at], corr=corr[rows])

    def _odd(self, trace: _CompactTrace, args: _ArgsTable, flows: dict, strings: _Strings, comm_streams: set,
             main: _Rows, hardware: _Rows, comm: list, links: list) -> int:
        """The odd events, one by one, by the same rules; returns how many were malformed."""
        if not trace.odd:
            return 0
        proc_name, thread_name = self.meta.proc_name, self.meta.thread_name
        arg_of = trace.columns["arg"]
        rows: list = []
        at: list = []
        tasks: list = []
        task_at: list = []
        bad = 0
        for i, (p, cat, name, epid, etid, ts, dur) in trace.odd.items():
            a = int(arg_of[i])
            try:
                process, device = proc_name.get(epid, ""), self._device_of(epid)
                if process in _DERIVED:
                    continue
                is_mstx = process in _MSTX_PROCESSES or cat == "MsTx"
                if self.skip_mstx and is_mstx:
                    continue
                if type(name) is not str:
                    name = str(name)
                if ts is None:
                    raise ValueError("ts")
                tid = etid if type(etid) is int else _as_int(etid)
                if p == "C":
                    sub = 0
                    for series, value in args.dict(a).items():
                        try:
                            val = float(value)
                        except (TypeError, ValueError):
                            continue
                        rows.append((ts, 0, _COUNTER, f"{name} {series}".strip(), process, tid, device, -1, val, -1,
                                     "", -1))
                        at.append((i, sub))
                        sub += 1
                    continue
                if p != "X":      # "i", "I"
                    rows.append((ts, 0, _MARK, name, process, tid, device, -1, 0.0, -1, "", -1))
                    at.append((i, 0))
                    continue
                if dur is None:
                    raise ValueError("dur")
                corr = -1
                if flows:
                    key = (epid if type(epid) in _PLAIN else hashable(epid),
                           etid if type(etid) in _PLAIN else hashable(etid), ts)
                    corr = flows.get(key, -1)
                row = None
                step = _step_of(name)
                if step is not None:
                    row = (ts, dur, _STEP, name, "ProfilerStep", tid, -1, -1, 0.0, step, "", -1)
                elif process == "CANN":
                    level, _, api = name.partition("@")
                    level = str(args.dict(a).get("level") or (level if api else "CANN"))
                    row = (ts, dur, _API, api if api else name, level, tid, -1, -1, 0.0, -1, args.text(a), corr)
                elif process == "Ascend Hardware":
                    if self.skip_hardware:
                        if corr >= 0:
                            links.append((i, (ts, name), corr))
                        continue
                    task = _hardware_task(args.dict(a))
                    stream = _as_int(thread_name.get((epid, etid), etid))
                    tasks.append((ts, dur, name, task, stream, device, corr))
                    task_at.append((i, 0))
                elif process in _COMM_PROCESSES:
                    lane = thread_name.get((epid, etid), "")
                    comm.append((i, _CommEvent(ts, dur, name, epid, tid, device, lane, args.dict(a), corr)))
                elif is_mstx:
                    row = (ts, dur, _RANGE if dur > 0 else _MARK, name, "mstx", tid, -1, -1, 0.0, -1, "", -1)
                elif process == "CPU OP":
                    if not self.skip_cpu_ops:
                        row = (ts, dur, _OP, name, op_type_of(name), tid, -1, -1, 0.0, -1, "", -1)
                elif cat == "python_function":
                    row = (ts, dur, _STACK, name, "python_function", tid, -1, -1, 0.0, -1, "", -1)
                elif cat == "cpu_op" or (process == "MindSpore" and "::" not in name):
                    op_type = name if cat == "cpu_op" else op_type_of(name)
                    row = (ts, dur, _OP, name, op_type, tid, -1, -1, 0.0, -1, args.text(a), corr)
                elif process == "MindSpore":
                    row = (ts, dur, _API, name, name.split("::", 1)[0], tid, -1, -1, 0.0, -1, args.text(a), corr)
                else:
                    row = (ts, dur, _RANGE, name, str(cat or process), tid, device, -1, 0.0, -1, args.text(a), -1)
                if row is not None:
                    rows.append(row)
                    at.append((i, 0))
            except (TypeError, ValueError, KeyError, AttributeError, OverflowError):
                bad += 1
        main.add_tuples(rows, strings, at)
        kept = [(t, where) for t, where in zip(tasks, task_at) if t[4] not in comm_streams]
        hardware.add_tuples([(ts, dur, _hardware_kind(name, task), name,
                              comm_op_type(name) if _hardware_kind(name, task) == _COMM else op_type_of(name),
                              stream, device, stream, 0.0, -1, _args_text(task), corr)
                             for (ts, dur, name, task, stream, device, corr), _ in kept],
                            strings, [where for _, where in kept])
        return bad

    def _comm_streams(self, trace: _CompactTrace, args: _ArgsTable) -> set:
        """Streams named by the HCCL process's tasks (``stream id`` arg)."""
        comm_pids = {p for p, n in self.meta.proc_name.items() if n in _COMM_PROCESSES}
        c = trace.columns
        if not comm_pids or not c:
            return set()
        codes: set = set()
        x = c["plain"] & (c["phase"] == _PH_X)
        pids = np.unique(c["pid"][x])
        mine = np.array([p in comm_pids for p in pids.tolist()], dtype=bool)
        if mine.any():
            codes.update(np.unique(c["arg"][x & np.isin(c["pid"], pids[mine])]).tolist())
        codes.update(int(c["arg"][i]) for i, v in trace.odd.items()
                     if v[0] == "X" and _is_key(v[3]) and v[3] in comm_pids)
        streams = set()
        for a in codes:
            try:
                got = args.dict(a)
            except ValueError:
                continue
            if "stream id" in got:
                streams.add(_int_or(got.get("stream id"), -1))
        return streams

    def _device_of(self, epid: Any) -> int:
        dev = self.meta.proc_device.get(epid)
        return -1 if dev is None else (self.device if dev == -2 else dev)

    def _add_comm(self, rows: list) -> None:
        """HCCL operators and their tasks; a task takes the group of the operator holding it."""
        is_task = [_is_comm_task(e.args) for e in self.comm]
        ops = sorted((e for e, t in zip(self.comm, is_task) if not t), key=lambda e: e.ts)
        op_group: dict[int, str] = {}
        seen: dict[str, int] = {}
        for e in ops:
            m = _GROUP_LANE_RE.match(e.lane)
            group = self.groups.get(e.name) or (m.group(1) if m else str(e.args.get("group", "default")))
            op_group[id(e)] = group
            if self.skip_hardware:     # kernel_details.csv has these operators; keep their group for it
                nth = seen.get(e.name, 0)
                seen[e.name] = nth + 1
                self.op_groups[(e.name, nth)] = group
                continue
            args = {k: v for k, v in e.args.items() if k in ("alg_type", "count", "data_type", "connection_id")}
            args["group"] = group
            args["Accelerator Core"] = "HCCL"
            rows.append((e.ts, e.dur, _COMM, e.name, comm_op_type(e.name), e.tid, e.device, -1, 0.0, -1,
                         _args_text(args), e.corr))
        starts = np.array([e.ts for e in ops], dtype=np.int64)
        tasks = [e for e, task in zip(self.comm, is_task) if task]
        before = (np.searchsorted(starts, np.array([e.ts for e in tasks], dtype=np.int64), side="right") - 1).tolist()
        texts: dict = {}       # (args, group) -> text: the tasks share their args dicts (one per distinct text)
        op_types: dict = {}
        for e, j in zip(tasks, before):
            holder = None
            while j >= 0:
                o = ops[j]
                if o.epid == e.epid and o.ts + o.dur >= e.ts:
                    holder = o
                    break
                j -= 1
                if e.ts - ops[j + 1].ts > 10**10:
                    break
            group = op_group[id(holder)] if holder is not None else "default"
            text = texts.get((id(e.args), group))
            if text is None:
                text = texts[(id(e.args), group)] = _args_text(hccl_task_args(e.args, group))
            if holder is not None:
                op_type = op_types.get(holder.name)
                if op_type is None:
                    op_type = op_types[holder.name] = comm_op_type(holder.name)
            else:
                op_type = e.name
            rows.append((e.ts, e.dur, _COMM, e.name, op_type, e.tid, e.device, _int_or(e.args.get("stream id"), -1),
                         0.0, -1, text, -1))


def _is_comm_task(args: dict) -> bool:
    """An HCCL task (Notify, Memcpy, Reduce ...) rather than an operator."""
    return "task type" in args or "src rank" in args or "dst rank" in args


def hccl_task_args(raw: dict, group: str) -> dict:
    """An HCCL task's args in :mod:`npuprof.analysis.rank_communication`'s convention (plus the tool's own keys)."""
    src, dst = _int_or(raw.get("src rank"), -1), _int_or(raw.get("dst rank"), -1)
    out: dict = {"group": group, "task_type": str(raw.get("task type", "")),
                 "Task ID": raw.get("task id"), "notify_id": raw.get("notify_id")}
    transport = str(raw.get("transport type", ""))
    link = str(raw.get("link type", ""))
    if src >= 0:      # kept as recorded, 0xFFFFFFFF ("no peer") included: the analysis needs every transfer
        out.update({"src_rank": src, "dst_rank": dst, "size": _int_or(raw.get("size(Byte)"), 0),
                    "link_type": link, "transport_type": transport})
        if 0 <= src < INVALID_RANK and 0 <= dst < INVALID_RANK:
            out["transport"] = "RDMA" if transport == "RDMA" else ("LOCAL" if src == dst else (link or transport))
    if raw.get("rdma type"):
        out["rdma_type"] = str(raw["rdma type"])
    return {k: v for k, v in out.items() if v is not None}


# -- memory_record.csv --------------------------------------------------------------------------------
def _read_memory_record(path: Path, pid: int, problems: list[str], source: str, device_col: str = "Device Type",
                        type_: str = "memory") -> EventTable:
    check_input_file(path)
    cols = _Columns(source)
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
        args = _args_text({k: (row.get(k) or "").strip() for k in ("Component", device_col, "Stream Ptr")
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
    cols = _Columns(source)
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
                 device=int(m.group(1)) if m else -1, value=size_kb * 1024.0, args=_args_text(args))
    return cols.table()
