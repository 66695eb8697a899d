"""PyTorch Kineto / Chrome traces (``*.pt.trace.json[.gz]``, torch.profiler's and HTA's files, one per
rank) read into the event table, so every verb works on them.

==========================  ================================================================================
``cat``                      event
==========================  ================================================================================
``cpu_op``                   OP (type = the op's name, ``aten::mm``)
``user_annotation``          ``ProfilerStep#N`` -> STEP N; others (``record_function``) -> RANGE
``gpu_user_annotation``      RANGE on the device
``kernel``                   KERNEL on ``args.device`` / ``args.stream`` (type: the kernel's function, without
                             template and parameters); a collective library's kernel (``nccl``, ``rccl``,
                             ``hccl`` in the name) -> COMM on the device, never compute
``gpu_memcpy``/``gpu_memset``  KERNEL typed ``Memcpy``/``Memset``
``cuda_runtime``/``cuda_driver``  API (level ``cuda_runtime`` / ``cuda_driver``)
``python_function``          STACK
==========================  ================================================================================

Launch links: ``args.correlation`` of a runtime call and of the kernel it launched. Times: µs, plus
``baseTimeNanoseconds`` where the file has it (newer Kineto writes times relative to it), else µs since
the epoch. The rank and world size are the file's ``distributedInfo``. Other events (flows, counters,
instant events, process metadata) carry nothing the tables use and are not read; their count is said.

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
from ..events import EventKind, EventTable
from ..fileio import check_input_file
from .ascend_output import _Columns, _args_text

Warn = Callable[[str], None]
SOURCE = "kineto"
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
COLLECTIVE_KERNEL_RE = re.compile(r"nccl|rccl|hccl", re.IGNORECASE)
_PEEK_BYTES = 4096


@dataclass(frozen=True)
class KinetoRead:
    """One trace file's events and what it says about its rank."""

    events: EventTable
    rank: Optional[int]
    world_size: Optional[int]


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


def read_kineto(path: Path, warn: Warn) -> KinetoRead:
    """The events of one trace file (see the module doc); a file without any complete event is an error."""
    doc = _load(path)
    base = doc.get("baseTimeNanoseconds")
    base_ns = _int_in(base, (0, 2**62), 0)
    info = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    rank, world = info.get("rank"), info.get("world_size")
    cols = _Columns(SOURCE)
    other = bad = 0
    for ev in doc["traceEvents"]:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
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
        elif cat == "gpu_user_annotation":
            cols.add(t, d, EventKind.RANGE, name, "gpu_user_annotation", pid=pid, tid=tid, device=device,
                     stream=stream)
        elif cat == "kernel":
            if COLLECTIVE_KERNEL_RE.search(name):
                cols.add(t, d, EventKind.COMM, name, _kernel_type(name), pid=pid, tid=tid, device=device,
                         stream=stream, args=_args_text({"group": "default"}), corr=corr)
            else:
                cols.add(t, d, EventKind.KERNEL, name, _kernel_type(name), pid=pid, tid=tid, device=device,
                         stream=stream, corr=corr)
        elif cat in ("gpu_memcpy", "gpu_memset"):
            cols.add(t, d, EventKind.KERNEL, name, "Memcpy" if cat == "gpu_memcpy" else "Memset", pid=pid, tid=tid,
                     device=device, stream=stream, corr=corr)
        elif cat in ("cuda_runtime", "cuda_driver"):
            cols.add(t, d, EventKind.API, name, cat, pid=pid, tid=tid, corr=corr)
        elif cat == "python_function":
            cols.add(t, d, EventKind.STACK, name, "python_function", pid=pid, tid=tid)
        else:
            other += 1
    if bad:
        warn(f"{path}: {bad} complete event(s) without a usable ts/dur skipped")
    events = cols.table()
    if not len(events):
        raise ProfilerDataError(path, f"holds no event npuprof reads ({other} other entries)")
    return KinetoRead(events=events, rank=rank if isinstance(rank, int) and rank >= 0 else None,
                      world_size=world if isinstance(world, int) and world > 0 else None)


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
