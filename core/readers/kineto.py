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
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import ProfilerDataError
from ..events import MEMCPY_TYPE, MEMSET_TYPE, EventKind, EventTable
from ..fileio import check_input_file
from ..quality import QualityIssue
from .ascend_output import _Columns, _args_text

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


def _load(path: Path) -> dict:
    check_input_file(path)
    try:
        raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        doc = json.loads(raw)
    except (OSError, EOFError, ValueError, gzip.BadGzipFile) as e:
        raise ProfilerDataError(path, f"is not a readable trace ({type(e).__name__}: {e})") from None
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ProfilerDataError(path, "holds no traceEvents list")
    return doc


_INT64 = (-(2**63), 2**63 - 1)


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


def _add_device(cols: _Columns, t: int, d: int, cat: str, name: str, pid: int, tid: int, device: int, stream: int,
                corr: int) -> None:
    """One device event: communication (a collective library's kernel), memory activity (copies and fills,
    typed as :data:`~npuprof.events.MEMORY_ACTIVITY_TYPES`) or a compute kernel. Without ``args.device``
    the device is its pid (Kineto writes a device's events on the pid of its index)."""
    if device < 0 and 0 <= pid <= 32767:
        device = pid
    if COLLECTIVE_KERNEL_RE.search(name):
        cols.add(t, d, EventKind.COMM, name, _kernel_type(name), pid=pid, tid=tid, device=device, stream=stream,
                 args=_args_text({"group": "default"}), corr=corr)
        return
    low = cat.lower()
    if low.endswith("memcpy") or (cat == "mtia_ccp_events" and MTIA_MEMORY_RE.match(name)):
        typ = MEMCPY_TYPE
    elif low.endswith("memset"):
        typ = MEMSET_TYPE
    else:
        typ = _kernel_type(name)
    cols.add(t, d, EventKind.KERNEL, name, typ, pid=pid, tid=tid, device=device, stream=stream, corr=corr)


def _labelled_device_pid(meta: dict) -> Optional[int]:
    """The pid a ``process_labels`` metadata event names a device (``GPU 0``: any label but ``CPU``), else None."""
    args = meta.get("args") if isinstance(meta.get("args"), dict) else {}
    label = str(args.get("labels", "")).strip()
    pid = meta.get("pid")
    if label and not label.upper().startswith("CPU") and isinstance(pid, int) and not isinstance(pid, bool):
        return pid
    return None


def _device_property_ids(doc: dict) -> set[int]:
    """The device ids ``deviceProperties`` lists: Kineto writes each device's events on the pid of its id."""
    props = doc.get("deviceProperties")
    ids = (p.get("id") for p in props if isinstance(p, dict)) if isinstance(props, list) else ()
    return {i for i in ids if isinstance(i, int) and not isinstance(i, bool) and i >= 0}


def read_kineto(path: Path, warn: Warn) -> KinetoRead:
    """The events of one trace file (see the module doc); a file without any complete event is an error."""
    doc = _load(path)
    base = doc.get("baseTimeNanoseconds")
    base_ns = _int_in(base, (0, 2**62), 0)
    info = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    rank, world = info.get("rank"), info.get("world_size")
    cols = _Columns(SOURCE)
    other = bad = device_events = 0
    device_pids: set[int] = set()
    unknown: list[tuple] = []
    for ev in doc["traceEvents"]:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            if isinstance(ev, dict) and ev.get("ph") == "M" and ev.get("name") == "process_labels":
                labelled = _labelled_device_pid(ev)
                if labelled is not None:
                    device_pids.add(labelled)
            other += 1
            continue
        ts, dur = ev.get("ts"), ev.get("dur", 0)
        if isinstance(ts, str):
            try:
                ts = float(ts)
            except ValueError:
                ts = None
        if not _number(ts) or not _number(dur) or dur < 0:
            bad += 1
            continue
        t = base_ns + round(ts * 1000)
        d = round(dur * 1000)
        if not (_INT64[0] <= t <= _INT64[1] and d <= _INT64[1]):
            bad += 1
            continue
        cat = str(ev.get("cat", ""))
        name = str(ev.get("name", ""))
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        pid = _int_in(ev.get("pid"), _INT64, 0)
        tid = _int_in(ev.get("tid"), _INT64, 0)
        corr = _int_in(args.get("correlation"), (0, _INT64[1]), -1)
        device = _int_in(args.get("device"), (0, 32767), -1)
        stream = _int_in(args.get("stream"), (0, 2**31 - 1), -1)
        if cat == "cpu_op":
            cols.add(t, d, EventKind.OP, name, name, pid=pid, tid=tid)
        elif cat == "user_annotation":
            m = STEP_RE.match(name)
            if m:
                cols.add(t, d, EventKind.STEP, name, "ProfilerStep", pid=pid, tid=tid, step=int(m.group(1)))
            else:
                cols.add(t, d, EventKind.RANGE, name, "user_annotation", pid=pid, tid=tid)
        elif cat.endswith("_user_annotation"):
            cols.add(t, d, EventKind.RANGE, name, cat, pid=pid, tid=tid, device=device, stream=stream)
        elif cat in DEVICE_CATS or _is_memory_cat(cat):
            _add_device(cols, t, d, cat, name, pid, tid, device, stream, corr)
            device_pids.add(pid)
            device_events += 1
        elif cat.endswith(HOST_API_SUFFIXES):
            cols.add(t, d, EventKind.API, name, cat, pid=pid, tid=tid, corr=corr)
        elif cat == "python_function":
            cols.add(t, d, EventKind.STACK, name, "python_function", pid=pid, tid=tid)
        elif cat in HOST_CATS or cat in NOT_ACTIVITY_CATS:
            other += 1
        else:   # a category Kineto may write for a device we do not know: device time if on a device
            unknown.append((t, d, cat, name, pid, tid, device, stream, corr))
            if stream >= 0:
                device_pids.add(pid)
    device_pids |= _device_property_ids(doc)
    issues: list[QualityIssue] = []
    per_pid: dict[int, list] = {}
    for row in unknown:
        if row[4] in device_pids:
            per_pid.setdefault(row[4], []).append(row)
        else:
            other += 1
    for dev_pid, rows in sorted(per_pid.items()):
        for t, d, cat, name, pid, tid, device, stream, corr in rows:
            _add_device(cols, t, d, cat, name, pid, tid, device, stream, corr)
        device_events += len(rows)
        cats = ", ".join(sorted({r[2] for r in rows}))
        issues.append(QualityIssue(
            str(path), f"device kind unknown: {len(rows)} events on pid {dev_pid} (cat {cats}) counted as device time",
            affects=DEVICE_AFFECTS))
    if bad:
        warn(f"{path}: {bad} complete event(s) without a usable ts/dur skipped")
    events = cols.table()
    if not len(events):
        raise ProfilerDataError(path, f"holds no event npuprof reads ({other} other entries)")
    if not device_events:
        issues.append(QualityIssue(
            str(path), "no device activity in the trace (recorded without device activities, or a host-only run): "
                       "device time not measured, step times are the ProfilerStep ranges",
            affects=HOST_ONLY_UNMEASURED, not_measured=True))
    return KinetoRead(events=events, rank=rank if isinstance(rank, int) and rank >= 0 else None,
                      world_size=world if isinstance(world, int) and world > 0 else None, issues=tuple(issues))


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
