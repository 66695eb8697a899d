"""PyTorch Kineto / Chrome traces (``*.pt.trace.json[.gz]``, torch.profiler's and HTA's files, one per
rank) read into the event table, so every verb works on them.

==========================  ================================================================================
``cat``                      event
==========================  ================================================================================
``cpu_op``                   OP (type = the op's name, ``aten::mm``)
``user_annotation``          ``ProfilerStep#N`` -> STEP N; others (``record_function``) -> RANGE
``*_user_annotation``        (``gpu_user_annotation`` ...) RANGE on the device
``kernel``, ``mtia_ccp_events``, ``hpu_op``
                             KERNEL on ``args.device`` / ``args.stream`` (type: the kernel's function, without
                             template and parameters); a collective library's kernel (``nccl``, ``rccl``,
                             ``hccl`` in the name) -> COMM on the device, never compute
``*_memcpy``/``*_memset``    (``gpu_memcpy`` ...) KERNEL typed ``Memcpy``/``Memset``: memory activity, device
                             time but not "Computing"; so is an MTIA ``dma*`` event (HTA's MTIA memory)
``*_runtime``/``*_driver``   API (level = the cat: ``cuda_runtime``, ``mtia_runtime`` ...), on the host
``python_function``          STACK
any other ``cat``            on a device pid (a ``process_labels`` other than ``CPU``, a ``deviceProperties``
                             id, a pid with device events, or the event has ``args.stream``): KERNEL, device
                             time of a kind npuprof does not know, flagged (data quality); on the host: not read
==========================  ================================================================================

Host categories (``cpu_op``, ``user_annotation``, ``python_function``, ``*_runtime`` ...) never become
device events, whatever their pid. A trace without any device event is a host-only trace: its device
time is not measured (flagged, and the step-time columns it would fill are left empty, not filled from
host operators). Device waits (``cuda_sync``, ``cuda_event``) are not activity and are not read.

Launch links: ``args.correlation`` of a runtime call and of the kernel it launched. Times: µs, plus
``baseTimeNanoseconds`` where the file has it (newer Kineto writes times relative to it), else µs since
the epoch. The rank and world size are the file's ``distributedInfo``. Other events (flows, counters,
instant events, process metadata but ``process_labels``) carry nothing the tables use and are not read;
their count is said.

Example::

    read = read_kineto(Path("rank-0.pt.trace.json.gz"), warn=print)
    read.rank, len(read.events)
"""
from __future__ import annotations

import gzip
import math
import mmap
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Union

import numpy as np

from ..errors import ProfilerDataError
from ..events import MEMCPY_TYPE, MEMSET_TYPE, EventKind, EventTable, StringPool
from ..fileio import check_input_file
from ..quality import QualityIssue
from .event_rows import args_text
from . import trace_decode
from .trace_decode import (NoTraceEvents, ScannedTrace, TraceColumns, TraceDecodeError, collector_paused,
                           decode_gzip_trace, decode_trace, scan_gzip_chunks, scan_trace)

Warn = Callable[[str], None]
SOURCE = "kineto"
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
COLLECTIVE_KERNEL_RE = re.compile(r"nccl|rccl|hccl", re.IGNORECASE)
_PEEK_BYTES = 4096
# Kineto's device activity categories (libkineto ActivityType names; HTA's "GPU Kernels" pattern):
# CUDA/ROCm kernels, MTIA's device events, Habana's ops. ``*_memcpy``/``*_memset`` (gpu_, mlu_ ...) are memory.
DEVICE_CATS = frozenset({"kernel", "Kernel", "Memcpy", "Memset", "mtia_ccp_events", "hpu_op"})
# host activity: never device time, whatever pid it is on (``*_runtime``/``*_driver`` are API calls)
HOST_API_SUFFIXES = ("_runtime", "_driver")
HOST_CATS = frozenset({"cpu_op", "user_annotation", "python_function", "cpu_instant_event", "overhead",
                       "external_correlation", "Trace"})
# device-side waits and markers, not activity (HTA leaves cuda_sync out of its kernels too)
NOT_ACTIVITY_CATS = frozenset({"cuda_sync", "cuda_event", "xpu_sync", "cuda_profiler_range"})
MTIA_MEMORY_RE = re.compile(r"^dma", re.IGNORECASE)       # HTA's "MTIA Memory" kernels
STEP_TIME_COLUMNS = ("Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                     "Communication(Not Overlapped and Exclude Receive)", "Preparing")
DEVICE_AFFECTS = ("step_trace_time.Computing", "op_statistic", "kernel_details")
HOST_ONLY_UNMEASURED = tuple(f"step_trace_time.{c}" for c in STEP_TIME_COLUMNS)


@dataclass(frozen=True)
class KinetoRead:
    """One trace file's events and what it says about its rank."""

    events: EventTable
    rank: Optional[int]
    world_size: Optional[int]
    issues: tuple[QualityIssue, ...] = ()


def is_kineto_trace(path: Path) -> bool:
    """A Kineto/Chrome trace file: named ``*.pt.trace.json[.gz]``, or a ``*.json[.gz]`` whose start
    holds ``traceEvents`` and Kineto's ``schemaVersion`` / ``distributedInfo`` / ``deviceProperties``."""
    if not path.is_file():
        return False
    if path.name.endswith(TRACE_SUFFIXES):
        return True
    if not (path.name.endswith(".json") or path.name.endswith(".json.gz")):
        return False
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as fh:
            head = fh.read(_PEEK_BYTES)
    except (OSError, EOFError):
        return False
    return b'"traceEvents"' in head and any(k in head for k in (b'"schemaVersion"', b'"distributedInfo"',
                                                                  b'"deviceProperties"'))


def _load(path: Path) -> Union[ScannedTrace, TraceColumns]:
    check_input_file(path)
    try:
        if path.name.endswith(".gz"):
            chunked_from = min(trace_decode.SCANNED_IN_CHUNKS_FROM_BYTES, trace_decode.CHUNKED_FROM_BYTES)
            if path.stat().st_size >= chunked_from:     # decompressed beside the scan, memory bounded
                scanned = scan_gzip_chunks(path)
                return scanned if scanned is not None and _base_fits(scanned) else decode_gzip_trace(path)
            return _scanned_or_decoded(gzip.decompress(path.read_bytes()))
        with open(path, "rb") as fh:
            if not os.fstat(fh.fileno()).st_size:
                return decode_trace(b"")
            # mapped, not read: the parser reads the page cache in place, no copy of the file in our heap
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as view:
                return _scanned_or_decoded(view)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise ProfilerDataError(path, f"is not a readable trace ({type(e).__name__}: {e})") from None
    except NoTraceEvents:
        raise ProfilerDataError(path, "holds no traceEvents list") from None
    except TraceDecodeError as e:
        raise ProfilerDataError(path, f"is not a readable trace ({e})") from None


def _scanned_or_decoded(raw: Union[bytes, memoryview]) -> Union[ScannedTrace, TraceColumns]:
    """The compiled scanner's columns, else (not in use, or the file is not one it takes) the decoder's."""
    scanned = scan_trace(raw)
    if scanned is not None and _base_fits(scanned):
        return scanned
    return decode_trace(raw)


def _base_fits(scanned: ScannedTrace) -> bool:
    """Whether every usable start stays within int64 once the base time is added (else decided per event)."""
    base_ns = _base_ns(scanned.doc)
    ok = scanned.usable
    return not (base_ns and ok.any() and int(scanned.ts_ns[ok].max()) > _INT64[1] - base_ns)


_INT64 = (-(2**63), 2**63 - 1)


def _base_ns(doc: dict) -> int:
    """The trace's ``baseTimeNanoseconds`` added to every start (0 where absent or not an int in [0, 2**62])."""
    return _int_in(doc.get("baseTimeNanoseconds"), (0, 2**62), 0)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < 9e15   # µs whose ns fit int64


def _int_in(v: Any, bounds: tuple[int, int], default: int) -> int:
    """``v`` when it is an int within ``bounds`` (the event table's column type), else ``default``."""
    return v if isinstance(v, int) and not isinstance(v, bool) and bounds[0] <= v <= bounds[1] else default


def _kernel_type(name: str) -> str:
    func = name.removeprefix("void ").split("<", 1)[0].split("(", 1)[0].strip()
    return func or name


def _is_memory_cat(cat: str) -> bool:
    low = cat.lower()
    return low.endswith("_memcpy") or low.endswith("_memset")


# event classes of a complete event, by its cat (see the module doc's table)
_C_OTHER, _C_OP, _C_ANNOTATION, _C_DEVICE_ANNOTATION, _C_DEVICE, _C_API, _C_STACK, _C_UNKNOWN = range(8)


def _cat_class(cat: str) -> int:
    if cat == "cpu_op":
        return _C_OP
    if cat == "user_annotation":
        return _C_ANNOTATION
    if cat.endswith("_user_annotation"):
        return _C_DEVICE_ANNOTATION
    if cat in DEVICE_CATS or _is_memory_cat(cat):
        return _C_DEVICE
    if cat.endswith(HOST_API_SUFFIXES):
        return _C_API
    if cat == "python_function":
        return _C_STACK
    if cat in HOST_CATS or cat in NOT_ACTIVITY_CATS:
        return _C_OTHER
    return _C_UNKNOWN     # a category Kineto may write for a device we do not know: device time if on a device


def _device_kind_type(cat: str, name: str) -> tuple[EventKind, str, str]:
    """(kind, type, args text) of one device event: communication (a collective library's kernel), memory
    activity (copies and fills, typed as :data:`~npuprof.events.MEMORY_ACTIVITY_TYPES`) or a compute kernel."""
    if COLLECTIVE_KERNEL_RE.search(name):
        return EventKind.COMM, _kernel_type(name), _COMM_ARGS
    low = cat.lower()
    if low.endswith("memcpy") or (cat == "mtia_ccp_events" and MTIA_MEMORY_RE.match(name)):
        return EventKind.KERNEL, MEMCPY_TYPE, ""
    if low.endswith("memset"):
        return EventKind.KERNEL, MEMSET_TYPE, ""
    return EventKind.KERNEL, _kernel_type(name), ""


_COMM_ARGS = args_text({"group": "default"})


def _labelled_device_pid(pid: Any, labels: Any) -> Optional[int]:
    """The pid a ``process_labels`` metadata event names a device (``GPU 0``: any label but ``CPU``), else None."""
    label = str(labels).strip()
    if label and not label.upper().startswith("CPU") and isinstance(pid, int) and not isinstance(pid, bool):
        return pid
    return None


def _device_property_ids(doc: dict) -> set[int]:
    """The device ids ``deviceProperties`` lists: Kineto writes each device's events on the pid of its id."""
    props = doc.get("deviceProperties")
    ids = (p.get("id") for p in props if isinstance(p, dict)) if isinstance(props, list) else ()
    return {i for i in ids if isinstance(i, int) and not isinstance(i, bool) and i >= 0}


def _int_column(values: list, bounds: tuple[int, int], default: int) -> np.ndarray:
    """:func:`_int_in` of every value, as an int64 array (one pass in C where the values are machine ints)."""
    types = set(map(type, values))
    if types <= {int, type(None)}:     # machine ints and absent values: converted in C
        with np.errstate(invalid="ignore"):
            f = np.array(values, dtype=np.float64)          # None -> nan
            if not np.any(np.abs(f) >= 2**53):              # (nan compares False) every int exact as a float
                ok = (f >= bounds[0]) & (f <= bounds[1])
                return np.where(ok, np.where(ok, f, 0).astype(np.int64), default)
    ints = [v if type(v) is int else default for v in values]     # bools and floats: default, as _int_in
    try:
        arr = np.array(ints, dtype=np.int64)
    except OverflowError:     # an integer past int64 somewhere: value by value
        return np.array([_int_in(v, bounds, default) for v in values], dtype=np.int64)
    return np.where((arr >= bounds[0]) & (arr <= bounds[1]), arr, default)


def _times(ts: list, dur: list, base_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start ns, duration ns, usable) of every complete event: ``base + round(ts * 1000)`` and
    ``round(dur * 1000)``, exactly as Python computes them; unusable where ts/dur is not a finite number
    below 9e15 µs, dur < 0, or the start leaves int64."""
    if {*map(type, ts), *map(type, dur)} <= {int, float}:
        try:
            fast = _times_numeric(ts, dur, base_ns)
        except OverflowError:      # an integer too large for a float: decided event by event
            fast = None
        if fast is not None:
            return fast
    n = len(ts)
    t, d, ok = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool)
    for i, (start, length) in enumerate(zip(ts, dur)):     # text times, bools, None ...: the rules one by one
        if isinstance(start, str):
            try:
                start = float(start)
            except ValueError:
                start = None
        if not _number(start) or not _number(length) or length < 0:
            continue
        tv, dv = base_ns + round(start * 1000), round(length * 1000)
        if _INT64[0] <= tv <= _INT64[1] and dv <= _INT64[1]:
            t[i], d[i], ok[i] = tv, dv, True
    return t, d, ok


def _ns_of_us(values: list, f: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """``round(v * 1000)`` of each usable value: exact for ints (all below 2**53 µs), float rounding for floats."""
    safe = np.where(ok, f, 0.0)
    if set(map(type, values)) <= {int}:
        return safe.astype(np.int64) * 1000
    is_int = np.array([type(v) is int for v in values], dtype=bool)
    return np.where(is_int, safe.astype(np.int64) * 1000, np.rint(safe * 1000.0).astype(np.int64))


def _times_numeric(ts: list, dur: list, base_ns: int) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    f_ts, f_dur = np.array(ts, dtype=np.float64), np.array(dur, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ok = (np.isfinite(f_ts) & (np.abs(f_ts) < 9e15) & np.isfinite(f_dur) & (np.abs(f_dur) < 9e15)
              & (f_dur >= 0))
    t, d = _ns_of_us(ts, f_ts, ok), _ns_of_us(dur, f_dur, ok)
    if base_ns and ok.any() and int(t[ok].max()) > _INT64[1] - base_ns:
        return None     # a start past int64 once the base is added: decided event by event
    return t + base_ns, d, ok


@dataclass
class _Complete:
    """The complete events of a file, column by column after the value rules: times in ns (``usable``
    where both are), ints in their columns' ranges (else the default), ``cat``/``name`` codes into ``texts``."""

    t: np.ndarray
    d: np.ndarray
    usable: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    corr: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    cat: np.ndarray
    name: np.ndarray
    texts: list
    labels: list
    other: int
    doc: dict


_PID, _TID, _CORR, _DEVICE, _STREAM = range(5)     # ScannedTrace.ints's columns


def _from_scanned(s: ScannedTrace) -> _Complete:
    base_ns = _base_ns(s.doc)

    def ints(k: int, bounds: tuple[int, int], default: int) -> np.ndarray:
        v = s.ints[:, k]
        ok = ((s.ints_ok >> k) & 1).astype(bool) & (v >= bounds[0]) & (v <= bounds[1])
        return np.where(ok, v, default)

    return _Complete(t=s.ts_ns + base_ns, d=s.dur_ns, usable=s.usable, pid=ints(_PID, _INT64, 0),
                     tid=ints(_TID, _INT64, 0), corr=ints(_CORR, (0, _INT64[1]), -1),
                     device=ints(_DEVICE, (0, 32767), -1), stream=ints(_STREAM, (0, 2**31 - 1), -1),
                     cat=s.cat, name=s.name, texts=s.texts, labels=s.labels, other=s.other, doc=s.doc)


def _from_columns(cols: TraceColumns) -> _Complete:
    base_ns = _base_ns(cols.doc)
    t, d, usable = _times(cols.ts, cols.dur, base_ns)
    texts: list = []
    index: dict = {}
    return _Complete(t=t, d=d, usable=usable, pid=_int_column(cols.pid, _INT64, 0),
                     tid=_int_column(cols.tid, _INT64, 0), corr=_int_column(cols.correlation, (0, _INT64[1]), -1),
                     device=_int_column(cols.device, (0, 32767), -1), stream=_int_column(cols.stream, (0, 2**31 - 1), -1),
                     cat=_text_codes(cols.cat, index, texts), name=_text_codes(cols.name, index, texts), texts=texts,
                     labels=cols.labels, other=cols.other, doc=cols.doc)


def _text_codes(values: list, index: dict, texts: list) -> np.ndarray:
    """The code of each value's text in ``texts`` (``str`` of it), new texts appended."""
    strings = values if set(map(type, values)) <= {str} else list(map(str, values))
    for text in dict.fromkeys(strings):
        if text not in index:
            index[text] = len(texts)
            texts.append(text)
    return np.fromiter(map(index.__getitem__, strings), dtype=np.int32, count=len(strings))


def read_kineto(path: Path, warn: Warn) -> KinetoRead:
    """The events of one trace file (see the module doc); a file without any complete event is an error."""
    with collector_paused():      # millions of acyclic objects: no collection walks them again and again
        return _read_kineto(path, warn)


def _read_kineto(path: Path, warn: Warn) -> KinetoRead:
    loaded = _load(path)
    c = _from_scanned(loaded) if isinstance(loaded, ScannedTrace) else _from_columns(loaded)
    del loaded
    doc, texts = c.doc, c.texts
    info = doc.get("distributedInfo")
    if not isinstance(info, dict):
        info = {}
    rank, world = info.get("rank"), info.get("world_size")
    usable, pid, stream = c.usable, c.pid, c.stream
    bad = int(len(usable) - usable.sum())
    class_of = np.zeros(len(texts), dtype=np.uint8)
    for code in np.unique(c.cat).tolist():
        class_of[code] = _cat_class(texts[code])
    cls = class_of[c.cat]
    cls[~usable] = _C_OTHER

    device_pids = {p for p in (_labelled_device_pid(p, lab) for p, lab in c.labels) if p is not None}
    device_pids.update(np.unique(pid[cls == _C_DEVICE]).tolist())
    device_pids.update(np.unique(pid[(cls == _C_UNKNOWN) & (stream >= 0)]).tolist())
    device_pids |= _device_property_ids(doc)
    read_here = np.flatnonzero((cls != _C_OTHER) & (cls != _C_UNKNOWN))
    unknown = np.flatnonzero(cls == _C_UNKNOWN)
    unknown = unknown[np.isin(pid[unknown], np.fromiter(device_pids, np.int64, len(device_pids)))]
    unknown = unknown[np.argsort(pid[unknown], kind="stable")]    # per device pid, as the issues name them
    other = c.other + int(np.count_nonzero(cls == _C_OTHER)) - bad + int(np.count_nonzero(cls == _C_UNKNOWN)) \
        - len(unknown)
    rows = np.concatenate([read_here, unknown])
    row_cls = cls[rows]
    row_cls[len(read_here):] = _C_DEVICE
    events = _table(rows, row_cls, c)

    issues: list[QualityIssue] = []
    unknown_pids = pid[unknown]
    for dev_pid in np.unique(unknown_pids).tolist():
        mine = unknown[unknown_pids == dev_pid]
        kinds = ", ".join(sorted({texts[k] for k in c.cat[mine].tolist()}))
        issues.append(QualityIssue(
            str(path), f"device kind unknown: {len(mine)} events on pid {dev_pid} (cat {kinds}) counted as device time",
            affects=DEVICE_AFFECTS))
    if bad:
        warn(f"{path}: {bad} complete event(s) without a usable ts/dur skipped")
    if not len(events):
        raise ProfilerDataError(path, f"holds no event npuprof reads ({other} other entries)")
    if not np.any(row_cls == _C_DEVICE):
        issues.append(QualityIssue(
            str(path), "no device activity in the trace (recorded without device activities, or a host-only run): "
                       "device time not measured, step times are the ProfilerStep ranges",
            affects=HOST_ONLY_UNMEASURED, not_measured=True))
    return KinetoRead(events=events, rank=rank if isinstance(rank, int) and rank >= 0 else None,
                      world_size=world if isinstance(world, int) and world > 0 else None, issues=tuple(issues))


def _pooled(pool: StringPool, codes: np.ndarray, texts: list) -> np.ndarray:
    """``pool.codes`` of the texts ``codes`` stand for: new texts added in order of first appearance."""
    found, first = np.unique(codes, return_index=True)
    remap = np.zeros(len(texts), dtype=np.int32)
    for code in found[np.argsort(first, kind="stable")].tolist():
        remap[code] = pool.code(texts[code])
    return remap[codes]


def _table(rows: np.ndarray, row_cls: np.ndarray, c: _Complete) -> EventTable:
    """The event table of the complete events ``rows`` (in that order), each read as its class says."""
    n = len(rows)
    if not n:
        return EventTable.empty()
    texts = StringPool(c.texts)     # the file's texts, and the types and args the rows add
    r_name, r_cat = c.name[rows], c.cat[rows]
    kind = np.full(n, int(EventKind.OP), dtype=np.uint8)
    r_type = r_name.copy()                   # an OP's type is its name; the other classes below
    r_args = np.full(n, texts.code(""), dtype=np.int32)
    step = np.full(n, -1, dtype=np.int32)
    r_device = np.full(n, -1, dtype=np.int64)
    r_stream = np.full(n, -1, dtype=np.int64)
    r_corr = np.full(n, -1, dtype=np.int64)

    sel = np.flatnonzero(row_cls == _C_ANNOTATION)
    names, which = np.unique(r_name[sel], return_inverse=True)
    steps = [STEP_RE.match(c.texts[code]) for code in names.tolist()]
    is_step = np.array([m is not None for m in steps], dtype=bool)[which]
    kind[sel] = np.where(is_step, EventKind.STEP, EventKind.RANGE)
    r_type[sel] = np.where(is_step, texts.code("ProfilerStep"), texts.code("user_annotation"))
    step[sel] = np.array([int(m.group(1)) if m else -1 for m in steps], dtype=np.int32)[which]
    sel = np.flatnonzero(row_cls == _C_DEVICE_ANNOTATION)
    kind[sel], r_type[sel] = EventKind.RANGE, r_cat[sel]
    r_device[sel], r_stream[sel] = c.device[rows[sel]], c.stream[rows[sel]]
    sel = np.flatnonzero(row_cls == _C_API)
    kind[sel], r_corr[sel], r_type[sel] = EventKind.API, c.corr[rows[sel]], r_cat[sel]
    sel = np.flatnonzero(row_cls == _C_STACK)
    kind[sel], r_type[sel] = EventKind.STACK, texts.code("python_function")
    sel = np.flatnonzero(row_cls == _C_DEVICE)
    src = rows[sel]
    dev, p = c.device[src], c.pid[src]
    # without args.device the device is the pid (Kineto writes a device's events on the pid of its index)
    r_device[sel] = np.where((dev < 0) & (p >= 0) & (p <= 32767), p, dev)
    r_stream[sel], r_corr[sel] = c.stream[src], c.corr[src]
    pairs, which = np.unique(r_cat[sel].astype(np.int64) * len(c.texts) + r_name[sel], return_inverse=True)
    how = [_device_kind_type(c.texts[pair // len(c.texts)], c.texts[pair % len(c.texts)]) for pair in pairs.tolist()]
    kind[sel] = np.array([int(k) for k, _, _ in how], dtype=np.uint8)[which]
    r_type[sel] = np.array([texts.code(t) for _, t, _ in how], dtype=np.int32)[which]
    r_args[sel] = np.array([texts.code(a) for _, _, a in how], dtype=np.int32)[which]

    pool = StringPool()      # the table's texts in the order the per-row lists gave them: name, type, source, args
    codes = {"name": _pooled(pool, r_name, c.texts), "type": _pooled(pool, r_type, texts.strings)}
    codes["source"] = np.full(n, pool.code(SOURCE), dtype=np.int32)
    codes["args"] = _pooled(pool, r_args, texts.strings)
    numeric = {"ts": c.t[rows], "dur": c.d[rows], "kind": kind, "pid": c.pid[rows], "tid": c.tid[rows],
               "device": r_device, "stream": r_stream, "step": step, "corr": r_corr}
    return EventTable.from_codes(numeric, codes, pool.strings)


def trace_distributed(path: Path) -> tuple[Optional[int], Optional[int]]:
    """(rank, world size) a trace file's ``distributedInfo`` records (read from its start), else None."""
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as fh:
            head = fh.read(1 << 16).decode("utf-8", "replace")
    except (OSError, EOFError):
        return None, None
    block = re.search(r'"distributedInfo"\s*:\s*\{(.*?)(?:"pg_config"|\})', head, re.S)
    if not block:
        return None, None
    rank = re.search(r'"rank"\s*:\s*(\d+)', block.group(1))
    world = re.search(r'"world_size"\s*:\s*(\d+)', block.group(1))
    return (int(rank.group(1)) if rank else None), (int(world.group(1)) if world else None)
