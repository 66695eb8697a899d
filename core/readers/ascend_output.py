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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

import numpy as np
import orjson

from npuprof.events import KERNEL_TENSOR_COLUMNS, EventKind, EventTable
from npuprof.fileio import check_input_file
from npuprof.rawstore import RAW_DIR
from npuprof.traceflows import LAUNCH_FLOW_CATS, flow_ends, hashable

if TYPE_CHECKING:
    from .trace_decode import TraceEvents
# the trace decoder (msgspec's structs) is imported by the functions that read a trace: the layout's names
# here (OUTPUT_DIR, TRACE_VIEW, ...) are imported by every npuprof command's plugins

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
    n = len(values)
    kinds = set(map(type, values))
    if kinds == {str}:
        out = _digit_texts_to_ns(values)
    elif kinds <= {int, float} and n:
        with np.errstate(invalid="ignore", over="ignore"):
            x = np.array(values, dtype=np.float64) * 1000.0
            ok = np.abs(x) < 2.0 ** 62            # nan and inf compare False: done one by one below
        out = np.where(ok, np.rint(np.where(ok, x, 0.0)), 0).astype(np.int64).tolist()
        for i in np.flatnonzero(~ok).tolist():
            out[i] = None
    else:
        out = [None] * n
    for i, (v, ns) in enumerate(zip(values, out)):
        if ns is None:
            out[i] = _ts_or_none(v)
    return out


def _digit_texts_to_ns(texts: list) -> list:
    """``int(whole) * 1000 + int(three decimals)`` of each text of that form (up to 19 digits), else None."""
    n = len(texts)
    out: list = [None] * n
    try:
        arr = np.array(texts, dtype=np.bytes_)
    except UnicodeEncodeError:
        return out
    width = arr.dtype.itemsize
    if not n or not width:
        return out
    mat = arr.view(np.uint8).reshape(n, width)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    ns = np.zeros(n, dtype=np.int64)
    good = np.zeros(n, dtype=bool)
    for length in np.unique(lengths).tolist():
        if not 5 <= length <= 20:
            continue
        rows = np.flatnonzero(lengths == length)
        block = mat[rows, :length]
        digits = np.delete(block, length - 4, axis=1) - np.uint8(48)     # a non-digit wraps past 9
        ok = (block[:, length - 4] == ord(".")) & (digits <= 9).all(axis=1)
        value = np.zeros(len(rows), dtype=np.uint64)
        for col in digits.T:
            value = value * np.uint64(10) + col
        ok &= value < np.uint64(2 ** 63)
        ns[rows] = np.where(ok, value, 0).astype(np.int64)
        good[rows] = ok
    values = ns.tolist()
    for i in np.flatnonzero(good).tolist():
        out[i] = values[i]
    return out


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
    from .trace_decode import TraceEvents, collector_paused

    out_dir = Path(out_dir)
    problems: list[str] = []
    tv = out_dir / TRACE_VIEW
    trace = TraceEvents()
    if tv.is_file() and is_ascend_trace(tv):
        with collector_paused():
            trace = _load_trace(tv, problems)
    meta = _TraceMeta.of(trace.dicts(i for i, ph in enumerate(trace.ph) if ph == "M"))
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


def _load_trace(path: Path, problems: list[str]) -> TraceEvents:
    from .trace_decode import NoTraceEvents, TraceDecodeError, TraceEvents, decode_events

    check_input_file(path)
    try:
        return decode_events(path.read_bytes())
    except NoTraceEvents:
        problems.append(f"{path}: no event list; file skipped")
    except TraceDecodeError as e:
        problems.append(f"{path}: not valid JSON, cut short or damaged ({e}); file skipped")
    return TraceEvents()


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
_PLAIN = (int, str)       # pid/tid types that are their own flow key (traceflows.hashable)
_COUNTER, _MARK, _STEP, _API, _RANGE, _OP, _STACK, _KERNEL, _COMM = (
    int(k) for k in (EventKind.COUNTER, EventKind.MARK, EventKind.STEP, EventKind.API, EventKind.RANGE,
                     EventKind.OP, EventKind.STACK, EventKind.KERNEL, EventKind.COMM))
_STEPS: dict = {}
_ROWS_PER_BLOCK = 1 << 16
_ROW_FIELDS = ("ts", "dur", "kind", "name", "type", "tid", "device", "stream", "value", "step", "args", "corr")


def _into_columns(rows: list, columns: list[list]) -> None:
    """Move the row tuples ``rows`` onto the end of ``columns`` (one list per field); ``rows`` is left empty."""
    if rows:
        for column, values in zip(columns, zip(*rows)):
            column.extend(values)
        rows.clear()


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


class _ArgsCache:
    """Each event's ``args`` as a dict (``{}`` where not an object) and as the event table's args text, parsed
    once per distinct JSON text (a trace repeats its args: the same call stacks, the same task fields)."""

    def __init__(self, events: TraceEvents) -> None:
        self.events = events
        self.raw = events.decoder == "msgspec"
        self.parsed: dict = {}
        self.texts: dict = {}

    def dict(self, i: int) -> dict:
        if not self.raw:
            args = self.events.args[i]
            return args if isinstance(args, dict) else {}
        key = bytes(self.events.args[i])
        args = self.parsed.get(key)
        if args is None:
            args = orjson.loads(key)
            if not isinstance(args, dict):
                args = {}
            self.parsed[key] = args
        return args

    def text(self, i: int) -> str:
        if not self.raw:
            return _args_text(self.dict(i))
        key = bytes(self.events.args[i])
        text = self.texts.get(key)
        if text is None:
            text = self.texts[key] = _args_text(self.dict(i))
        return text


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

    def read(self, events: TraceEvents, path: Path, problems: list[str]) -> EventTable:
        """The trace's events; launch links from its ``HostToDevice`` flows, else its ``async_npu`` ones.
        ``events`` is consumed (released once read).

        One pass over the events in file order, each event's fields taken from the decoded columns (times
        converted in bulk), its ``args`` parsed only where the event's kind uses them."""
        ph = events.ph
        flows = flow_ends(events.dicts((i for i, p in enumerate(ph) if p == "s" or p == "f"), with_args=False),
                          LAUNCH_FLOW_CATS, _ts_or_none)
        comm_streams = self._comm_streams(events)
        rows: list = []        # tuples of _ROW_FIELDS
        hardware: list = []
        bad = events.not_objects
        read = [i for i, p in enumerate(ph) if p in _READ_PHASES]
        ts_ns = us_texts_to_ns([events.ts[i] for i in read])
        dur_ns = us_texts_to_ns([events.dur[i] if ph[i] == "X" else 0 for i in read])
        events.ts = events.dur = events.id = []      # as ns now (ids: in the flows); the texts' memory freed
        args_of = _ArgsCache(events)
        pids, tids, names, cats = events.pid, events.tid, events.name, events.cat
        proc_name, thread_name = self.meta.proc_name, self.meta.thread_name
        skip_mstx, skip_hardware, skip_cpu_ops = self.skip_mstx, self.skip_hardware, self.skip_cpu_ops
        of_pid: dict = {}      # pid -> (process, device)
        add = rows.append
        columns: list[list] = [[] for _ in _ROW_FIELDS]
        for j, i in enumerate(read):
            if len(rows) >= _ROWS_PER_BLOCK:      # tuples into columns block by block: a tuple per row costs more
                _into_columns(rows, columns)
            try:
                epid, etid = pids[i], tids[i]
                known = of_pid.get(epid)
                if known is None:
                    known = of_pid[epid] = (proc_name.get(epid, ""), self._device_of(epid))
                process, device = known
                if process in _DERIVED:
                    continue
                cat = cats[i]
                is_mstx = process in _MSTX_PROCESSES or cat == "MsTx"
                if skip_mstx and is_mstx:
                    continue
                name = names[i]
                if type(name) is not str:
                    name = str(name)
                ts = ts_ns[j]
                if ts is None:
                    raise ValueError("ts")
                tid = etid if type(etid) is int else _as_int(etid)
                p = ph[i]
                if p == "C":
                    for series, value in args_of.dict(i).items():
                        try:
                            val = float(value)
                        except (TypeError, ValueError):
                            continue
                        add((ts, 0, _COUNTER, f"{name} {series}".strip(), process, tid, device, -1, val, -1, "", -1))
                    continue
                if p != "X":      # "i", "I"
                    add((ts, 0, _MARK, name, process, tid, device, -1, 0.0, -1, "", -1))
                    continue
                dur = dur_ns[j]
                if dur is None:
                    raise ValueError("dur")
                corr = -1
                if flows:
                    key = (epid if type(epid) in _PLAIN else hashable(epid),
                           etid if type(etid) in _PLAIN else hashable(etid), ts)
                    corr = flows.get(key, -1)
                step = _step_of(name)
                if step is not None:   # whatever process carries it: torch_npu's "Python", MindSpore's "MindSpore"
                    add((ts, dur, _STEP, name, "ProfilerStep", tid, -1, -1, 0.0, step, "", -1))
                elif process == "CANN":
                    args = args_of.dict(i)
                    level, _, api = name.partition("@")
                    level = str(args.get("level") or (level if api else "CANN"))
                    add((ts, dur, _API, api if api else name, level, tid, -1, -1, 0.0, -1, args_of.text(i), corr))
                elif process == "Ascend Hardware":
                    if skip_hardware:
                        if corr >= 0:
                            self.task_links[(ts, name)] = corr
                        continue
                    args = args_of.dict(i)
                    stream = _as_int(thread_name.get((epid, etid), etid))
                    task = {"Accelerator Core": str(args.get("Task Type", "")), "Task ID": args.get("Task Id"),
                            "Model ID": args.get("Model Id")}
                    task.update((k, args[k]) for k in KERNEL_TENSOR_COLUMNS if isinstance(args.get(k), str))
                    hardware.append((ts, dur, name, {k: v for k, v in task.items() if v not in (None, "")}, stream,
                                     device, corr))
                elif process in _COMM_PROCESSES:
                    lane = thread_name.get((epid, etid), "")
                    self.comm.append(_CommEvent(ts, dur, name, epid, tid, device, lane, args_of.dict(i), corr))
                elif is_mstx:
                    add((ts, dur, _RANGE if dur > 0 else _MARK, name, "mstx", tid, -1, -1, 0.0, -1, "", -1))
                elif process == "CPU OP":
                    if not skip_cpu_ops:
                        add((ts, dur, _OP, name, op_type_of(name), tid, -1, -1, 0.0, -1, "", -1))
                elif cat == "python_function":
                    add((ts, dur, _STACK, name, "python_function", tid, -1, -1, 0.0, -1, "", -1))
                elif cat == "cpu_op" or (process == "MindSpore" and "::" not in name):
                    op_type = name if cat == "cpu_op" else op_type_of(name)
                    add((ts, dur, _OP, name, op_type, tid, -1, -1, 0.0, -1, args_of.text(i), corr))
                elif process == "MindSpore":     # Kernel::KernelLaunch::... and the like
                    add((ts, dur, _API, name, name.split("::", 1)[0], tid, -1, -1, 0.0, -1, args_of.text(i), corr))
                else:
                    add((ts, dur, _RANGE, name, str(cat or process), tid, device, -1, 0.0, -1, args_of.text(i), -1))
            except (TypeError, ValueError, KeyError, AttributeError, OverflowError):
                bad += 1
        del ts_ns, dur_ns, args_of, pids, tids, names, cats
        events.release()      # read: the table's columns are built without the decoded ones beside them
        for ts, dur, name, args, stream, device, corr in hardware:
            if stream in comm_streams:
                continue        # HCCL's own tasks, read from the HCCL process
            if name.startswith("hcom_") or str(args.get("Accelerator Core", "")).upper() in _COMM_CORES:
                rows.append((ts, dur, _COMM, name, comm_op_type(name), stream, device, stream, 0.0, -1,
                             _args_text(args), corr))
                continue
            rows.append((ts, dur, _KERNEL, name, op_type_of(name), stream, device, stream, 0.0, -1, _args_text(args),
                         corr))
        self._add_comm(rows)
        if bad:
            problems.append(f"{path}: {bad} malformed event(s) skipped")
        _into_columns(rows, columns)
        if not columns[0]:
            return EventTable.empty()
        return EventTable.from_records(**dict(zip(_ROW_FIELDS, columns)), pid=[self.pid] * len(columns[0]),
                                       source=self.source)

    def _comm_streams(self, events: TraceEvents) -> set:
        """Streams named by the HCCL process's tasks (``stream id`` arg)."""
        comm_pids = {p for p, n in self.meta.proc_name.items() if n in _COMM_PROCESSES}
        streams = set()
        for i, (ph, pid) in enumerate(zip(events.ph, events.pid)):
            if ph == "X" and _is_key(pid) and pid in comm_pids:
                args = events.args_of(i)
                if isinstance(args, dict) and "stream id" in args:
                    streams.add(_int_or(args.get("stream id"), -1))
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
        for e, task in zip(self.comm, is_task):
            if not task:
                continue
            holder = None
            j = int(np.searchsorted(starts, e.ts, side="right")) - 1
            while j >= 0:
                o = ops[j]
                if o.epid == e.epid and o.ts + o.dur >= e.ts:
                    holder = o
                    break
                j -= 1
                if e.ts - ops[j + 1].ts > 10**10:
                    break
            group = op_group[id(holder)] if holder is not None else "default"
            rows.append((e.ts, e.dur, _COMM, e.name, comm_op_type(holder.name) if holder else e.name, e.tid,
                         e.device, _int_or(e.args.get("stream id"), -1), 0.0, -1,
                         _args_text(hccl_task_args(e.args, group)), -1))


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
