"""Timelines for many ranks: per-rank Kineto traces in one directory (what
HTA's ``TraceAnalysis`` loads) and one merged, clock-aligned trace of chosen
ranks (Perfetto / chrome://tracing).

In the merged trace each rank is a process named ``Rank <r>`` (sorted by
rank); host threads keep their ids and each device becomes a process
``Rank <r> NPU <d>`` with one thread per stream. Timestamps are shifted by
the rank's clock correction (see :mod:`.alignment`), recorded in the file's
``clockAlignment`` key.

Example::

    write_rank_trace(task, Path("traces/rank0.pt.trace.json.gz"), steps=[3, 4])
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import IO, Optional

import numpy as np

from ..events import EventTable
from ..export.filters import filter_events
from ..export.trace_json import base_time_ns, event_lines, write_trace
from ..fileio import atomic_write
from .worker import RankTask, load_rank_events

RANK_PID_STRIDE = 1000


def write_rank_trace(task: RankTask, path: str, steps: Optional[list] = None, min_dur_ns: int = 0,
                     use_gzip: bool = False, world_size: int = 1) -> tuple:
    """Write one rank's (filtered) trace; runs on a worker. Returns (rank, path, bytes, events)."""
    events, info, _, _, _ = load_rank_events(task)
    events = filter_events(events, steps=steps, min_dur_ns=min_dur_ns)
    out = write_trace(events, Path(path), rank=task.rank, world_size=max(world_size, task.rank + 1),
                      metadata={"npuprof_version": info.version, "hostname": info.hostname},
                      use_gzip=use_gzip, host_pid=info.pid)
    return task.rank, str(out), out.stat().st_size, len(events)


def _relabel(rank: int, events: EventTable, offset_ns: int) -> tuple[EventTable, list[str]]:
    """Shift to the reference clock and give the rank its own pids."""
    base = RANK_PID_STRIDE * (rank + 1)
    dev = events["device"]
    host_pids = sorted(set(events["pid"][dev < 0].tolist())) if len(events) else []
    pid_map = {p: base + i for i, p in enumerate(host_pids[:RANK_PID_STRIDE // 2])}
    new_pid = np.array([pid_map.get(p, base) for p in events["pid"].tolist()], dtype=np.int64)
    is_dev = dev >= 0
    new_pid = np.where(is_dev, base + RANK_PID_STRIDE // 2 + dev.astype(np.int64), new_pid)
    tid = np.where(is_dev, np.maximum(events["stream"], 0).astype(np.int64), events["tid"])
    out = events.with_column("ts", events["ts"] + np.int64(offset_ns)).with_column("pid", new_pid)
    out = out.with_column("tid", tid).with_column("device", np.full(len(events), -1, dtype=np.int16))
    meta = []
    for orig, p in pid_map.items():
        meta.append(json.dumps({"ph": "M", "name": "process_name", "pid": p, "tid": 0,
                                "args": {"name": f"Rank {rank} (pid {orig})"}}))
        meta.append(json.dumps({"ph": "M", "name": "process_sort_index", "pid": p, "tid": 0,
                                "args": {"sort_index": p}}))
    for d in sorted(set(dev[is_dev].tolist())):
        p = base + RANK_PID_STRIDE // 2 + d
        meta.append(json.dumps({"ph": "M", "name": "process_name", "pid": p, "tid": 0,
                                "args": {"name": f"Rank {rank} NPU {d}"}}))
        meta.append(json.dumps({"ph": "M", "name": "process_sort_index", "pid": p, "tid": 0,
                                "args": {"sort_index": p}}))
    return out, meta


def write_merged(parts: list, alignment: dict, path: Path, use_gzip: bool = False) -> Path:
    """Write ranks' events (``[(rank, events, hostname)]``) as one aligned trace."""
    tables, meta = [], []
    offsets = alignment.get("ranks", {})
    for rank, events, _host, _issues in sorted(parts, key=lambda p: p[0]):
        t, m = _relabel(rank, events, int(offsets.get(rank, {}).get("offset_ns", 0)))
        tables.append(t)
        meta.extend(m)
    merged = EventTable.concat(tables).sorted()
    base = base_time_ns(merged)
    head = {"schemaVersion": 1, "displayTimeUnit": "ms", "baseTimeNanoseconds": base,
            "npuprofMergedRanks": [p[0] for p in sorted(parts, key=lambda p: p[0])],
            "clockAlignment": {str(r): v for r, v in offsets.items()
                               if r in {p[0] for p in parts}}}
    text_head = json.dumps(head)[:-1] + ', "traceEvents": [\n'

    def write(fh: IO[bytes]) -> None:
        sink = gzip.GzipFile(fileobj=fh, mode="wb", compresslevel=6, mtime=0) if use_gzip else fh
        sink.write(text_head.encode())
        first = True
        for line in meta:
            sink.write((("" if first else ",\n") + line).encode())
            first = False
        for block in event_lines(merged, base):
            if block:
                sink.write((("" if first else ",\n") + block).encode())
                first = False
        sink.write(b"\n]}\n")
        if use_gzip:
            sink.close()

    return atomic_write(path, write)
