"""Memory answers from the event table: the allocations of each operator, and the peak.

Pure functions over :class:`~npuprof.events.EventTable` (they write nothing):

* :func:`operator_memory` - ``operator_memory.csv`` as torch_npu / MindSpore
  write it (its exact header), one row per allocation (MEMORY events of type
  ``operator_memory``), in allocation order;
* :func:`memory_summary` - the peak of allocated memory (when, in which step),
  the allocations alive at that instant (largest first, and per operator), and
  each memory series' range over the run (``memory_record`` components,
  ``npu_module_mem`` modules, a TF allocator's total, the process RSS and host
  memory use npuprof samples).

The peak is the largest ``Total Allocated(MB)`` the data records at an
allocation or a release (``operator_memory``'s ``Allocation/Release Total
Allocated(MB)``); an allocation is alive at instant ``t`` when it was made at or
before ``t`` and not released by then.

Example::

    >>> ev = EventTable.from_records(ts=[0, 10], dur=[50, 0], kind=[int(EventKind.MEMORY)] * 2,
    ...     name=["aten::empty", "aten::mm"], type=["operator_memory"] * 2, value=[2048.0, 1024.0],
    ...     args=['{"Allocation Total Allocated(MB)": "1.0"}', '{"Allocation Total Allocated(MB)": "1.5"}'])
    >>> s = memory_summary(ev)
    >>> s.peak_mb, [a.name for a in s.live]
    (1.5, ['aten::empty', 'aten::mm'])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..events import EventKind, EventTable
from .analyzers import step_spans
from .table import Table

OPERATOR_MEMORY_TYPE = "operator_memory"
OPERATOR_MEMORY_COLUMNS = [
    "Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Active Release Time(us)", "Duration(us)",
    "Active Duration(us)", "Allocation Total Allocated(MB)", "Allocation Total Reserved(MB)",
    "Allocation Total Active(MB)", "Release Total Allocated(MB)", "Release Total Reserved(MB)",
    "Release Total Active(MB)", "Stream Ptr", "Device Type"]
_MEMORY_SERIES_TYPES = ("memory", "npu_module_mem")
_HOST_MEMORY_SERIES = ("Process RSS(B)", "Memory Usage(%)")    # npuprof's host sampler (type host_sys)


@dataclass(frozen=True)
class LiveAllocation:
    """One allocation alive at the peak."""

    name: str
    size_bytes: float
    allocated_ns: int
    released_ns: Optional[int]      # None: the data records no release


@dataclass(frozen=True)
class SeriesRange:
    """One memory series over the run (MB unless the name says otherwise)."""

    name: str
    samples: int
    first: float
    peak: float
    last: float


@dataclass(frozen=True)
class MemorySummary:
    """What :func:`memory_summary` finds; ``peak_mb`` is None without allocation data."""

    peak_mb: Optional[float]
    peak_ns: Optional[int]
    peak_step: Optional[int]
    live: list[LiveAllocation] = field(default_factory=list)
    live_by_operator: list[tuple[str, int, float]] = field(default_factory=list)   # name, count, bytes
    allocations: int = 0
    series: list[SeriesRange] = field(default_factory=list)


def _allocation_rows(events: EventTable) -> np.ndarray:
    if not len(events):
        return np.zeros(0, np.int64)
    code = events.code_of(OPERATOR_MEMORY_TYPE)
    rows = np.flatnonzero((events["kind"] == np.uint8(EventKind.MEMORY)) & (events["type"] == code))
    return rows[np.argsort(events["ts"][rows], kind="stable")]


def _number(obj: dict, key: str) -> Optional[float]:
    try:
        return float(obj[key])
    except (KeyError, TypeError, ValueError):
        return None


def operator_memory(events: EventTable) -> Table:
    """``operator_memory.csv`` rows from the allocation events (empty without any)."""
    rows = _allocation_rows(events)
    out: dict[str, list] = {c: [] for c in OPERATOR_MEMORY_COLUMNS}
    for r in rows.tolist():
        args = events.args_object(int(events["args"][r]))
        out["Name"].append(events.strings[int(events["name"][r])])
        out["Size(KB)"].append(round(float(events["value"][r]) / 1024.0, 6))
        out["Allocation Time(us)"].append(args.get("Allocation Time(us)") or f"{int(events['ts'][r]) / 1000.0:.3f}")
        for col in OPERATOR_MEMORY_COLUMNS[3:]:
            out[col].append(args.get(col, ""))
    return Table("operator_memory", OPERATOR_MEMORY_COLUMNS, out)


def memory_summary(events: EventTable, top: int = 10) -> MemorySummary:
    """The peak of allocated memory, what was alive then, and every memory series' range."""
    series = _series_ranges(events)
    rows = _allocation_rows(events)
    if not len(rows):
        return MemorySummary(None, None, None, series=series)
    ts = events["ts"][rows].astype(np.int64)
    dur = events["dur"][rows].astype(np.int64)
    args = events.args_objects(events["args"][rows])
    peak_mb, peak_ns = -1.0, None
    for t, d, a in zip(ts.tolist(), dur.tolist(), args):
        for key, at in (("Allocation Total Allocated(MB)", t), ("Release Total Allocated(MB)", t + d if d else None)):
            v = _number(a, key)
            if v is not None and at is not None and v > peak_mb:
                peak_mb, peak_ns = v, at
    if peak_ns is None:
        return MemorySummary(None, None, None, allocations=len(rows), series=series)
    released = np.array(["Release Time(us)" in a for a in args], dtype=bool)
    alive = (ts <= peak_ns) & (~released | (ts + dur > peak_ns))
    live_rows = np.flatnonzero(alive)
    size = events["value"][rows]
    order = live_rows[np.argsort(-size[live_rows], kind="stable")]
    names = [events.strings[int(c)] for c in events["name"][rows].tolist()]
    live = [LiveAllocation(names[i], float(size[i]), int(ts[i]), int(ts[i] + dur[i]) if released[i] else None)
            for i in order[:top].tolist()]
    per_op: dict[str, list] = {}
    for i in live_rows.tolist():
        acc = per_op.setdefault(names[i], [0, 0.0])
        acc[0] += 1
        acc[1] += float(size[i])
    by_op = sorted(((n, c, b) for n, (c, b) in per_op.items()), key=lambda x: -x[2])[:top]
    return MemorySummary(peak_mb, peak_ns, _step_at(events, peak_ns), live, by_op, len(rows), series)


def _step_at(events: EventTable, t: int) -> Optional[int]:
    numbers, starts, ends = step_spans(events)
    hit = np.flatnonzero((starts <= t) & (t < ends))
    return int(numbers[hit[0]]) if len(hit) else None


def _series_ranges(events: EventTable) -> list[SeriesRange]:
    if not len(events):
        return []
    codes = [c for c in (events.code_of(t) for t in _MEMORY_SERIES_TYPES) if c >= 0]
    host = [c for c in (events.code_of(n) for n in _HOST_MEMORY_SERIES) if c >= 0]
    wanted = np.isin(events["type"], codes) | ((events["type"] == events.code_of("host_sys")) &
                                               np.isin(events["name"], host))
    rows = np.flatnonzero((events["kind"] == np.uint8(EventKind.COUNTER)) & wanted)
    if not len(rows):
        return []
    rows = rows[np.argsort(events["ts"][rows], kind="stable")]
    names, values = events["name"][rows], events["value"][rows]
    out = []
    for code in np.unique(names).tolist():
        v = values[names == code]
        out.append(SeriesRange(events.strings[code], len(v), float(v[0]), float(v.max()), float(v[-1])))
    return sorted(out, key=lambda s: -s.peak)
