"""Read a finished ``*_ascend_ms`` directory written by ``mindspore.profiler``.

MindSpore's own analysis leaves its results in ``ASCEND_PROFILER_OUTPUT/``:

``trace_view.json``
    a Chrome trace as a JSON *array*, ``ts``/``dur`` as strings of
    microseconds with three decimals (exact ns), grouped in processes named
    ``MindSpore`` (framework ops, ``ProfilerStep#N``, Python frames),
    ``CPU OP``, ``CANN`` (``AscendCL@api``), ``Ascend Hardware`` (device
    tasks, threads ``Stream <id>``), ``HCCL``/``Communication``, mstx
    (``python``), counters (``AI Core Freq``, ``HBM`` ...) and the derived
    ``Scope Layer``/``Overlap Analysis``/``Step Trace`` (skipped: npuprof
    recomputes them).
``kernel_details.csv``
    one row per device task (NPU runs): ``Name, Type, Accelerator Core,
    Start Time(us), Duration(us), Stream ID, Task ID, [Step ID] ...``.
``memory_record.csv``
    memory series (``profile_memory=True``).

The aggregate CSVs (``op_statistic``, ``api_statistic``,
``step_trace_time``) are derived from the same events and are not read.

Example::

    >>> run = Path("host_1_20250101000000000_ascend_ms")
    >>> events, problems = read_ascend_output(run / OUTPUT_DIR, device=0)  # doctest: +SKIP
"""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np
import orjson

from npuprof.analysis.analyzers import KERNEL_TENSOR_COLUMNS
from npuprof.events import EventKind, EventTable
from npuprof.fileio import check_input_file
from npuprof.traceflows import LAUNCH_FLOW_CATS, flow_ends, hashable

from .framework_files import SOURCE, op_type_of

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
TRACE_VIEW = "trace_view.json"
KERNEL_DETAILS = "kernel_details.csv"
MEMORY_RECORD = "memory_record.csv"

# process name -> how its complete ("X") events are read
_DERIVED = {"Scope Layer", "Overlap Analysis", "Step Trace"}
_MSTX_PROCESSES = {"python", "python3", "MsTx", "MsprofTx"}
_COMM_PROCESSES = {"HCCL", "Communication"}
_HCOM_RE = re.compile(r"^(hcom_[A-Za-z0-9]+)")
_DIGITS_RE = re.compile(r"(\d+)")


def us_text_to_ns(value: Any) -> int:
    """Microseconds as MindSpore/msprof write them -> integer ns, exactly.

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


def _ts_or_none(value: Any) -> Optional[int]:
    try:
        return us_text_to_ns(value)
    except (TypeError, ValueError, OverflowError):
        return None


def is_mindspore_trace(path: Path) -> bool:
    """True when ``path`` is a trace written by MindSpore (a JSON array), not by npuprof."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64).lstrip()
    except OSError:
        return False
    return head.startswith(b"[")


class _Columns:
    """Column lists for one EventTable, filled row by row while reading text formats."""

    def __init__(self) -> None:
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
                                       name=self.name, type=self.type, args=self.args, source=SOURCE,
                                       corr=self.corr)


def read_ascend_output(out_dir: Path, device: int = 0, pid: int = 0, skip_cpu_ops: bool = False,
                       skip_mstx: bool = False) -> tuple[EventTable, list[str]]:
    """Events from MindSpore's output directory ``out_dir`` (its
    ``ASCEND_PROFILER_OUTPUT/``, see module doc).

    ``skip_cpu_ops``: the caller already read ``FRAMEWORK/`` (exact ns), so
    the ``CPU OP`` process of the trace is not read again; ``skip_mstx``:
    npuprof recorded the user's ranges itself (they were forwarded to
    MindSpore's mstx), so the trace's copies are not read. Device tasks come
    from ``kernel_details.csv`` when present, else from the trace's
    ``Ascend Hardware`` process. Returns the events and the problems met.
    """
    problems: list[str] = []
    tables: list[EventTable] = []
    kernels = EventTable.empty()
    kd = out_dir / KERNEL_DETAILS
    if kd.is_file():
        kernels = _read_kernel_details(kd, device, pid, problems)
    tv = out_dir / TRACE_VIEW
    if tv.is_file() and is_mindspore_trace(tv):
        task_links: dict = {}
        tables.append(_read_trace_view(tv, device, pid, problems, skip_cpu_ops=skip_cpu_ops,
                                       skip_hardware=len(kernels) > 0, skip_mstx=skip_mstx, task_links=task_links))
        if task_links and len(kernels):
            kernels = _with_task_links(kernels, task_links)
    tables.insert(0, kernels)
    mem = out_dir / MEMORY_RECORD
    if mem.is_file():
        tables.append(_read_memory_record(mem, pid, problems))
    return EventTable.concat(tables), problems


# -- kernel_details.csv ---------------------------------------------------------------------------------
def _read_kernel_details(path: Path, device: int, pid: int, problems: list[str]) -> EventTable:
    check_input_file(path)
    cols = _Columns()
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    reader = csv.DictReader(io.StringIO(text))
    fields = [f.strip() for f in (reader.fieldnames or [])]
    need = {"Name", "Start Time(us)", "Duration(us)"}
    if not need.issubset(fields):
        problems.append(f"{path}: missing columns {sorted(need - set(fields))}; file skipped")
        return EventTable.empty()
    extra_keys = [k for k in ("Accelerator Core", "Task ID", "Model ID", "Block Num", "Wait Time(us)",
                              *KERNEL_TENSOR_COLUMNS)
                  if k in fields]
    for lineno, raw in enumerate(reader, 2):
        row = {(k or "").strip(): (v or "").strip() for k, v in raw.items() if k is not None}
        try:
            ts = us_text_to_ns(row["Start Time(us)"])
            dur = us_text_to_ns(row["Duration(us)"])
        except (ValueError, KeyError):
            problems.append(f"{path}:{lineno}: unreadable time, row skipped")
            continue
        name = row.get("Name", "")
        typ = row.get("Type", "") or op_type_of(name)
        core = row.get("Accelerator Core", "")
        kind = EventKind.COMM if core.upper() == "COMMUNICATION" or typ.startswith("hcom_") else EventKind.KERNEL
        stream = _int_or(row.get("Stream ID"), -1)
        cols.add(ts, max(dur, 0), kind, name, typ, pid=pid, tid=max(stream, 0), device=device, stream=stream,
                 step=_int_or(row.get("Step ID"), -1),
                 args=json.dumps({k: row[k] for k in extra_keys if row.get(k) not in (None, "", "N/A")}))
    return cols.table()


def _with_task_links(kernels: EventTable, task_links: dict) -> EventTable:
    """``kernels`` (from kernel_details.csv, which has no ids) with the launch link of the trace's hardware task
    of the same start and name: both files come from one source, with the same µs text."""
    names = [kernels.strings[c] for c in kernels["name"].tolist()]
    corr = np.array([task_links.get((ts, name), -1) for ts, name in zip(kernels["ts"].tolist(), names)],
                    dtype=np.int64)
    return kernels.with_column("corr", corr) if (corr >= 0).any() else kernels


def _int_or(text: Optional[str], default: int) -> int:
    if text is None:
        return default
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return default


# -- trace_view.json ----------------------------------------------------------------------------------
def _read_trace_view(path: Path, device: int, pid: int, problems: list[str], skip_cpu_ops: bool,
                     skip_hardware: bool, skip_mstx: bool = False, task_links: Optional[dict] = None) -> EventTable:
    """The trace's events; launch links from its ``HostToDevice`` flows, else its ``async_npu`` ones
    (:func:`npuprof.traceflows.flow_ends`). With ``skip_hardware`` the hardware tasks are not read, but
    ``task_links`` receives (start ns, name) -> link of every linked one."""
    check_input_file(path)
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as e:
        problems.append(f"{path}: not valid JSON ({e}); file skipped")
        return EventTable.empty()
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    if not isinstance(events, list):
        problems.append(f"{path}: no event list; file skipped")
        return EventTable.empty()
    proc_name, proc_device, thread_name = _metadata(events)
    flows = flow_ends(events, LAUNCH_FLOW_CATS, _ts_or_none)
    cols = _Columns()
    bad = 0
    for ev in events:
        if not isinstance(ev, dict):
            bad += 1
            continue
        ph = ev.get("ph")
        if ph not in ("X", "C", "i", "I"):
            continue
        try:
            _add_trace_event(cols, ev, ph, proc_name, proc_device, thread_name, device, pid,
                             skip_cpu_ops, skip_hardware, skip_mstx, flows, task_links)
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError):
            bad += 1
    if bad:
        problems.append(f"{path}: {bad} malformed event(s) skipped")
    return cols.table()


def _metadata(events: Iterable[Any]) -> tuple[dict, dict, dict]:
    proc_name: dict[Any, str] = {}
    proc_device: dict[Any, int] = {}
    thread_name: dict[tuple, str] = {}
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "M":
            continue
        args = ev.get("args")
        if not isinstance(args, dict) or not _is_key(ev.get("pid")) or not _is_key(ev.get("tid")):
            continue
        what = ev.get("name")
        if what == "process_name":
            proc_name[ev.get("pid")] = str(args.get("name", ""))
        elif what == "process_labels":
            label = str(args.get("labels", ""))
            m = _DIGITS_RE.search(label)
            if label.startswith("NPU"):
                proc_device[ev.get("pid")] = int(m.group(1)) if m else -2
        elif what == "thread_name":
            thread_name[(ev.get("pid"), ev.get("tid"))] = str(args.get("name", ""))
    return proc_name, proc_device, thread_name


def _is_key(value: Any) -> bool:
    """pid/tid values usable as dict keys (JSON gives lists/objects in damaged files)."""
    return value is None or isinstance(value, (int, str, float))


def _as_int(value: Any) -> int:
    if isinstance(value, int):
        return value
    m = _DIGITS_RE.search(str(value))
    return int(m.group(1)) if m else 0


def _add_trace_event(cols: _Columns, ev: dict, ph: str, proc_name: dict, proc_device: dict, thread_name: dict,
                     default_device: int, pid: int, skip_cpu_ops: bool, skip_hardware: bool,
                     skip_mstx: bool, flows: Optional[dict] = None, task_links: Optional[dict] = None) -> None:
    epid, etid = ev.get("pid"), ev.get("tid")
    process = proc_name.get(epid, "")
    if process in _DERIVED:
        return
    is_mstx = process in _MSTX_PROCESSES or ev.get("cat") == "MsTx"
    if skip_mstx and is_mstx:
        return
    dev = proc_device.get(epid)
    device = -1 if dev is None else (default_device if dev == -2 else dev)
    name = str(ev.get("name", ""))
    ts = us_text_to_ns(ev["ts"])
    tid = _as_int(etid)
    args = ev.get("args")
    if not isinstance(args, dict):
        args = {}
    if ph == "C":
        for series, value in args.items():
            try:
                val = float(value)
            except (TypeError, ValueError):
                continue
            cols.add(ts, 0, EventKind.COUNTER, f"{name} {series}".strip(), process, pid=pid, tid=tid,
                     device=device, value=val)
        return
    if ph in ("i", "I"):
        cols.add(ts, 0, EventKind.MARK, name, process, pid=pid, tid=tid, device=device)
        return
    dur = us_text_to_ns(ev.get("dur", 0))
    extra = json.dumps(args, default=str) if args else ""
    corr = flows.get((hashable(epid), hashable(etid), ts), -1) if flows else -1
    if process == "MindSpore":
        if name.startswith("ProfilerStep#"):
            step = _as_int(name)
            cols.add(ts, dur, EventKind.STEP, name, "ProfilerStep", pid=pid, tid=tid, step=step)
        elif ev.get("cat") == "python_function":
            cols.add(ts, dur, EventKind.STACK, name, "python_function", pid=pid, tid=tid)
        elif "::" in name:
            cols.add(ts, dur, EventKind.API, name, name.split("::", 1)[0], pid=pid, tid=tid, args=extra, corr=corr)
        else:
            cols.add(ts, dur, EventKind.OP, name, op_type_of(name), pid=pid, tid=tid, args=extra, corr=corr)
    elif process == "CPU OP":
        if not skip_cpu_ops:
            cols.add(ts, dur, EventKind.OP, name, op_type_of(name), pid=pid, tid=tid)
    elif process == "CANN":
        level, _, api = name.partition("@")
        cols.add(ts, dur, EventKind.API, api if api else name, level if api else "CANN", pid=pid, tid=tid,
                 args=extra, corr=corr)
    elif process == "Ascend Hardware":
        if skip_hardware:
            if corr >= 0 and task_links is not None:
                task_links[(ts, name)] = corr
            return
        stream = _as_int(thread_name.get((epid, etid), etid))
        task_type = str(args.get("Task Type", ""))
        kind = EventKind.COMM if task_type.upper() == "COMMUNICATION" or name.startswith("hcom_") \
            else EventKind.KERNEL
        cols.add(ts, dur, kind, name, op_type_of(name), pid=pid, tid=stream, device=device, stream=stream,
                 args=extra, corr=corr)
    elif process in _COMM_PROCESSES:
        m = _HCOM_RE.match(name)
        cols.add(ts, dur, EventKind.COMM, name, m.group(1) if m else name, pid=pid, tid=tid, device=device,
                 args=extra)
    elif is_mstx:
        cols.add(ts, dur, EventKind.RANGE if dur > 0 else EventKind.MARK, name, "mstx", pid=pid, tid=tid)
    else:
        cols.add(ts, dur, EventKind.RANGE, name, process, pid=pid, tid=tid, device=device, args=extra)


# -- memory_record.csv --------------------------------------------------------------------------------
def _read_memory_record(path: Path, pid: int, problems: list[str]) -> EventTable:
    check_input_file(path)
    cols = _Columns()
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig", errors="replace")))
    series = [f for f in (reader.fieldnames or []) if f and f.endswith("(MB)")]
    for lineno, row in enumerate(reader, 2):
        try:
            ts = us_text_to_ns(row["Timestamp(us)"])
        except (KeyError, ValueError, TypeError):
            problems.append(f"{path}:{lineno}: unreadable timestamp, row skipped")
            continue
        who = f"{row.get('Component', '')} {row.get('Device Type', '')}".strip()
        for s in series:
            try:
                val = float(row[s])
            except (TypeError, ValueError):
                continue
            cols.add(ts, 0, EventKind.COUNTER, f"{who} {s}".strip(), "memory", pid=pid, value=val)
    return cols.table()

