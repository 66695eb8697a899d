"""Memory answers from the event table: the allocations of each operator, and the peak.

Pure functions over :class:`~npuprof.events.EventTable` (they write nothing):

* :func:`operator_memory` - ``operator_memory.csv`` as torch_npu / MindSpore
  write it (its exact header), one row per allocation (MEMORY events of type
  ``operator_memory``), in allocation order;
* :func:`memory_samples` - the memory series' events grouped back into rows (one component at one
  instant), which the CSVs below and the database's memory tables are written from;
* :func:`memory_record` / :func:`npu_module_mem` - ``memory_record.csv`` and
  ``npu_module_mem.csv`` (exact headers): one row per component, device and
  instant of the memory series (COUNTER events of type ``memory`` /
  ``npu_module_mem``; a series in bytes, such as MindSpore's CPU record, is
  given in MB);
* :func:`memory_timeline` - memory over time: the bytes of the allocations
  alive at each allocation and release, stacked by operator, and every memory
  series in MB (what ``Profiler.export_memory_timeline`` and
  ``npuprof memory -o`` draw and write);
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

import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..clock import ns_to_us_text
from ..errors import ProfilerConfigError
from ..events import EventKind, EventTable
from ..readers.time_text import us_text_to_ns
from .analyzer import Analyzer, AnalyzerNeeds
from .steps import step_spans
from .table import Table

OPERATOR_MEMORY_TYPE = "operator_memory"
OPERATOR_MEMORY_COLUMNS = [
    "Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Active Release Time(us)", "Duration(us)",
    "Active Duration(us)", "Allocation Total Allocated(MB)", "Allocation Total Reserved(MB)",
    "Allocation Total Active(MB)", "Release Total Allocated(MB)", "Release Total Reserved(MB)",
    "Release Total Active(MB)", "Stream Ptr", "Device Type"]
MEMORY_RECORD_COLUMNS = ["Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)",
                         "Stream Ptr", "Device Type"]
NPU_MODULE_MEM_COLUMNS = ["Component", "Timestamp(us)", "Total Reserved(MB)", "Device"]
_MEMORY_SERIES_TYPES = ("memory", "npu_module_mem")
# "<component> [<device>] Total Allocated(MB)": how readers name one metric of a memory series
_NAMED_DEVICE_RE = re.compile(r"(?:^|\s)(NPU:\d+)$")    # a device a series' name ends with
_SERIES_NAME_RE = re.compile(r"^(?P<who>.*?)\s*(?P<metric>Total (?:Allocated|Reserved|Active))\((?P<unit>MB|Byte)\)$")
_MB = 1024.0 * 1024.0
_BYTE_UNITS = ("(Byte)", "(B)")
OTHER_OPERATORS = "other"
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
    """What :func:`memory_summary` finds; ``peak_mb`` is None without any allocated-memory data.

    ``peak_mb`` is the largest allocated memory any source records (operator_memory's running totals,
    each ``Total Allocated`` series of memory_record), ``peak_source`` names it; ``peak_step`` is the
    step the data places that moment in (None: no step recorded there).
    """

    peak_mb: Optional[float]
    peak_ns: Optional[int]
    peak_step: Optional[int]
    live: list[LiveAllocation] = field(default_factory=list)
    live_by_operator: list[tuple[str, int, float]] = field(default_factory=list)   # name, count, bytes
    allocations: int = 0
    series: list[SeriesRange] = field(default_factory=list)
    peak_source: str = ""


def _allocation_rows(events: EventTable) -> np.ndarray:
    if not len(events):
        return np.zeros(0, np.int64)
    code = events.code_of(OPERATOR_MEMORY_TYPE)
    if code < 0:        # no allocation data: no pass over the table (cluster summaries ask every rank)
        return np.zeros(0, np.int64)
    rows = np.flatnonzero((events["kind"] == np.uint8(EventKind.MEMORY)) & (events["type"] == code))
    return rows[np.argsort(events["ts"][rows], kind="stable")]


def _number(obj: dict, key: str) -> Optional[float]:
    try:
        return float(obj[key])
    except (KeyError, TypeError, ValueError):
        return None


def operator_memory(events: EventTable, base_ns: int = 0) -> Table:
    """``operator_memory.csv`` rows from the allocation events (empty without any).

    Times as the data wrote them; with ``base_ns``, relative to it (the base of a trace whose ``ts`` are
    relative, so a tool matching allocations to that trace's operators finds them)."""
    rows = _allocation_rows(events)
    out: dict[str, list] = {c: [] for c in OPERATOR_MEMORY_COLUMNS}
    for r in rows.tolist():
        args = events.args_object(int(events["args"][r]))
        out["Name"].append(events.strings[int(events["name"][r])])
        out["Size(KB)"].append(round(float(events["value"][r]) / 1024.0, 6))
        for col in OPERATOR_MEMORY_COLUMNS[2:]:
            out[col].append(args.get(col, ""))
        ts = int(events["ts"][r])
        if base_ns or not out["Allocation Time(us)"][-1]:
            out["Allocation Time(us)"][-1] = ns_to_us_text(ts - base_ns)
        if base_ns and out["Release Time(us)"][-1]:
            out["Release Time(us)"][-1] = ns_to_us_text(ts + int(events["dur"][r]) - base_ns)
        if base_ns and out["Active Release Time(us)"][-1]:
            out["Active Release Time(us)"][-1] = ns_to_us_text(us_text_to_ns(out["Active Release Time(us)"][-1])
                                                               - base_ns)
    return Table("operator_memory", OPERATOR_MEMORY_COLUMNS, out)


def memory_record(events: EventTable, base_ns: int = 0) -> Table:
    """``memory_record.csv`` rows from the ``memory`` series (empty without any); ``base_ns`` as for
    :func:`operator_memory`."""
    return _series_rows(events, "memory", "memory_record", MEMORY_RECORD_COLUMNS, "Device Type", base_ns)


def npu_module_mem(events: EventTable, base_ns: int = 0) -> Table:
    """``npu_module_mem.csv`` rows from the ``npu_module_mem`` series (empty without any)."""
    return _series_rows(events, "npu_module_mem", "npu_module_mem", NPU_MODULE_MEM_COLUMNS, "Device", base_ns)


def _series_rows(events: EventTable, series_type: str, table: str, columns: list[str], device_col: str,
                 base_ns: int) -> Table:
    out: dict[str, list] = {c: [] for c in columns}
    for sample in memory_samples(events, series_type, device_col):
        row = {"Component": sample.component, "Timestamp(us)": ns_to_us_text(sample.ts - base_ns),
               device_col: sample.device, "Stream Ptr": sample.stream}
        for metric, (value, unit) in sample.values.items():
            row[f"{metric}(MB)"] = value / _MB if unit == "Byte" else value
        for col in columns:
            out[col].append(row.get(col, ""))
    return Table(table, columns, out)


@dataclass(frozen=True)
class MemorySample:
    """One instant of one component of a memory series: a row of memory_record.csv / npu_module_mem.csv
    (and of the database's MEMORY_RECORD, NPU_MEM, NPU_MODULE_MEM)."""

    ts: int
    component: str
    device: str                          # as the data names it ("NPU:0", "CPU"), "" when it does not
    stream: str                          # "" when none is recorded
    row: int                             # the event row of its first metric
    values: dict[str, tuple[float, str]]  # metric ("Total Allocated", "ddr"...) -> (value, unit)


def memory_samples(events: EventTable, series_type: str, device_key: str = "Device Type",
                   pattern: re.Pattern = _SERIES_NAME_RE) -> list[MemorySample]:
    """The COUNTER events of ``series_type`` grouped back into samples, in time order: readers write one
    event per metric (named ``"<component> [<device>] <metric>(<unit>)"``, ``pattern`` parses it; the
    sample's identity from the event's args ``Component`` / ``device_key`` / ``Stream Ptr`` when there,
    else from the name). A metric seen twice for the same key starts a new sample."""
    code = events.code_of(series_type) if len(events) else -1
    if code < 0:
        return []
    rows = np.flatnonzero((events["kind"] == np.uint8(EventKind.COUNTER)) & (events["type"] == code))
    rows = rows[np.argsort(events["ts"][rows], kind="stable")]
    samples: list[MemorySample] = []
    open_samples: dict[tuple, int] = {}
    for r, a in zip(rows.tolist(), events.args_objects(events["args"][rows])):
        m = pattern.match(events.strings[int(events["name"][r])])
        if m is None:
            continue
        who = m.group("who")
        named = _NAMED_DEVICE_RE.search(who)
        key = (int(events["ts"][r]), str(a.get("Component") or _NAMED_DEVICE_RE.sub("", who).strip() or who),
               str(a.get(device_key) or (named.group(1) if named else "")), str(a.get("Stream Ptr") or ""))
        i = open_samples.get(key)
        if i is None or m.group("metric") in samples[i].values:
            i = open_samples[key] = len(samples)
            samples.append(MemorySample(*key, row=r, values={}))
        samples[i].values[m.group("metric")] = (float(events["value"][r]), m.groupdict().get("unit") or "")
    return samples


@dataclass(frozen=True)
class _Allocations:
    """The allocation events, in time order, parsed once for the summary and the timeline."""

    ts: np.ndarray           # int64 ns
    dur: np.ndarray          # int64 ns (0 without a release)
    size: np.ndarray         # float64 bytes
    names: np.ndarray        # name codes
    released: np.ndarray     # bool: the data records a release
    args: list


def _allocations(events: EventTable) -> Optional[_Allocations]:
    rows = _allocation_rows(events)
    if not len(rows):
        return None
    args = events.args_objects(events["args"][rows])
    return _Allocations(events["ts"][rows].astype(np.int64), events["dur"][rows].astype(np.int64),
                        events["value"][rows].astype(np.float64), events["name"][rows],
                        np.array(["Release Time(us)" in a for a in args], dtype=bool), args)


def memory_summary(events: EventTable, top: int = 10) -> MemorySummary:
    """The peak of allocated memory, what was alive then, and every memory series' range."""
    return _summarise(events, _allocations(events), top)


def _summarise(events: EventTable, allocs: Optional[_Allocations], top: int) -> MemorySummary:
    series = _series_ranges(events)
    peak_mb, peak_ns, source = -1.0, None, ""
    if allocs is not None:
        for t, d, a in zip(allocs.ts.tolist(), allocs.dur.tolist(), allocs.args):
            for key, at in (("Allocation Total Allocated(MB)", t),
                            ("Release Total Allocated(MB)", t + d if d else None)):
                v = _number(a, key)
                if v is not None and at is not None and v > peak_mb:
                    peak_mb, peak_ns, source = v, at, OPERATOR_MEMORY_TYPE
    for name, value, at in _allocated_series_peaks(events):     # the largest of every source is the headline
        if value > peak_mb:
            peak_mb, peak_ns, source = value, at, name
    if peak_ns is None:
        return MemorySummary(None, None, None, allocations=0 if allocs is None else len(allocs.ts), series=series)
    if allocs is None:
        return MemorySummary(peak_mb, peak_ns, _step_at(events, peak_ns), series=series, peak_source=source)
    ts, dur, size, released = allocs.ts, allocs.dur, allocs.size, allocs.released
    alive = (ts <= peak_ns) & (~released | (ts + dur > peak_ns))
    live_rows = np.flatnonzero(alive)
    order = live_rows[np.argsort(-size[live_rows], kind="stable")]
    names = [events.strings[int(c)] for c in allocs.names.tolist()]
    live = [LiveAllocation(names[i], float(size[i]), int(ts[i]), int(ts[i] + dur[i]) if released[i] else None)
            for i in order[:top].tolist()]
    per_op: dict[str, list] = {}
    for i in live_rows.tolist():
        acc = per_op.setdefault(names[i], [0, 0.0])
        acc[0] += 1
        acc[1] += float(size[i])
    by_op = sorted(((n, c, b) for n, (c, b) in per_op.items()), key=lambda x: -x[2])[:top]
    return MemorySummary(peak_mb, peak_ns, _step_at(events, peak_ns), live, by_op, len(ts), series, source)


def _allocated_series_peaks(events: EventTable) -> list[tuple[str, float, int]]:
    """(name, peak MB, when) of each ``Total Allocated`` memory series (memory_record's components)."""
    rows = _series_rows_of(events)
    if not len(rows):
        return []
    names, values, times = events["name"][rows], events["value"][rows], events["ts"][rows]
    out = []
    for code in np.unique(names).tolist():
        name = events.strings[code]
        m = _SERIES_NAME_RE.match(name)
        if not m or m.group("metric") != "Total Allocated":
            continue
        sel = np.flatnonzero(names == code)
        i = sel[int(np.argmax(values[sel]))]
        scale = 1.0 / _MB if m.group("unit") == "Byte" else 1.0
        out.append((name, float(values[i]) * scale, int(times[i])))
    return out


def _step_at(events: EventTable, t: int) -> Optional[int]:
    numbers, starts, ends = step_spans(events)
    hit = np.flatnonzero((starts <= t) & (t < ends))
    return int(numbers[hit[0]]) if len(hit) else None


def _series_rows_of(events: EventTable) -> np.ndarray:
    """The memory series' COUNTER rows (and npuprof's host memory samples), in time order."""
    if not len(events):
        return np.zeros(0, np.int64)
    codes = [c for c in (events.code_of(t) for t in _MEMORY_SERIES_TYPES) if c >= 0]
    host = [c for c in (events.code_of(n) for n in _HOST_MEMORY_SERIES) if c >= 0]
    if not codes and not host:
        return np.zeros(0, np.int64)
    wanted = np.isin(events["type"], codes) | ((events["type"] == events.code_of("host_sys")) &
                                               np.isin(events["name"], host))
    rows = np.flatnonzero((events["kind"] == np.uint8(EventKind.COUNTER)) & wanted)
    return rows[np.argsort(events["ts"][rows], kind="stable")]


def _series_ranges(events: EventTable) -> list[SeriesRange]:
    rows = _series_rows_of(events)
    if not len(rows):
        return []
    names, values = events["name"][rows], events["value"][rows]
    out = []
    for code in np.unique(names).tolist():
        v = values[names == code]
        out.append(SeriesRange(events.strings[code], len(v), float(v[0]), float(v.max()), float(v[-1])))
    return sorted(out, key=lambda s: -s.peak)


@dataclass(frozen=True)
class MemoryTimeline:
    """Memory over time (see :func:`memory_timeline`).

    ``live_bytes[category][i]`` is the bytes alive at ``times_ns[i]`` of the allocations of that operator
    (``other`` for the rest); ``series[name] = (times_ns, MB)`` for each memory series.
    """

    times_ns: np.ndarray
    live_bytes: dict[str, np.ndarray]
    series: dict[str, tuple[np.ndarray, np.ndarray]]
    summary: MemorySummary

    def to_json(self) -> dict:
        """Plain data: times in µs since the epoch, bytes per operator category, series in MB."""
        return {"times_us": (self.times_ns / 1000.0).tolist(),
                "live_bytes": {k: v.tolist() for k, v in self.live_bytes.items()},
                "series_mb": {k: {"times_us": (t / 1000.0).tolist(), "values": v.tolist()}
                              for k, (t, v) in self.series.items()},
                "peak": {"allocated_mb": self.summary.peak_mb, "time_us": None if self.summary.peak_ns is None
                         else self.summary.peak_ns / 1000.0, "step": self.summary.peak_step,
                         "live": [{"name": a.name, "bytes": a.size_bytes, "allocated_us": a.allocated_ns / 1000.0}
                                  for a in self.summary.live]}}


def memory_timeline(events: EventTable, top: int = 8) -> MemoryTimeline:
    """Memory over time: the allocations alive at each allocation and release, stacked by operator (the
    ``top`` operators holding most at the peak; the rest is ``other``), and each memory series in MB
    (bytes series such as ``Process RSS(B)`` converted).

    Example::

        >>> ev = EventTable.from_records(ts=[0, 10], dur=[50, 0], kind=int(EventKind.MEMORY), value=[2048.0, 1024.0],
        ...     name=["aten::empty", "aten::mm"], type="operator_memory",
        ...     args=['{"Release Time(us)": "0.050"}', ""])
        >>> t = memory_timeline(ev)
        >>> t.times_ns.tolist(), {k: v.tolist() for k, v in t.live_bytes.items()}
        ([0, 10, 50], {'aten::empty': [2048.0, 2048.0, 0.0], 'aten::mm': [0.0, 1024.0, 1024.0]})
    """
    allocs = _allocations(events)
    summary = _summarise(events, allocs, top)
    series = _memory_series(events)
    if allocs is None:
        return MemoryTimeline(np.zeros(0, np.int64), {}, series, summary)
    ts, size, released, names = allocs.ts, allocs.size, allocs.released, allocs.names
    end = ts + allocs.dur
    chosen = [n for n, _, _ in summary.live_by_operator][:top]
    if not chosen:      # nothing alive at the peak (or no peak): the operators that allocated most
        by_op: dict[int, float] = {}
        for code, b in zip(names.tolist(), size.tolist()):
            by_op[code] = by_op.get(code, 0.0) + b
        chosen = [events.strings[c] for c, _ in sorted(by_op.items(), key=lambda x: -x[1])[:top]]
    category = np.full(len(ts), len(chosen), np.int64)
    for i, name in enumerate(chosen):
        category[names == events.code_of(name)] = i
    # one +size at each allocation, one -size at each recorded release; releases first at equal times
    times = np.concatenate([end[released], ts])
    delta = np.concatenate([-size[released], size])
    cats = np.concatenate([category[released], category])
    order = np.argsort(times, kind="stable")
    times, delta, cats = times[order], delta[order], cats[order]
    last_of_time = np.append(times[1:] != times[:-1], True)
    labels = chosen + [OTHER_OPERATORS]
    live = {}
    for i, label in enumerate(labels):
        curve = np.cumsum(np.where(cats == i, delta, 0.0))[last_of_time]
        if label != OTHER_OPERATORS or curve.any():
            live[label] = curve
    return MemoryTimeline(times[last_of_time], live, series, summary)


def _memory_series(events: EventTable) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rows = _series_rows_of(events)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if not len(rows):
        return out
    names = events["name"][rows]
    for code in np.unique(names).tolist():
        name = events.strings[code]
        if name.endswith("(%)"):
            continue
        sel = rows[names == code]
        values = events["value"][sel].astype(np.float64)
        for unit in _BYTE_UNITS:
            if name.endswith(unit):
                name, values = name[: -len(unit)] + "(MB)", values / _MB
        out[name] = (events["ts"][sel].astype(np.int64), values)
    return out


_DEVICE_RE = re.compile(r"(cpu|npu)(?::(\d+))?")


def check_memory_device(device: Optional[str]) -> Optional[re.Match]:
    """``device`` checked: None (all devices) or its parts (``"cpu"``, ``"npu"``, ``"npu:N"``).

    Example::

        >>> check_memory_device("gpu:0")
        Traceback (most recent call last):
        ...
        npuprof.errors.ProfilerConfigError: invalid device='gpu:0': expected None, "cpu", "npu" or "npu:N"
    """
    m = _DEVICE_RE.fullmatch(device.strip().lower()) if isinstance(device, str) else None
    if device is not None and (m is None or (m.group(1) == "cpu" and m.group(2))):
        raise ProfilerConfigError("device", device, 'None, "cpu", "npu" or "npu:N"')
    return m


def memory_of_device(events: EventTable, device: Optional[str]) -> EventTable:
    """``events`` with only ``device``'s memory data (see :func:`check_memory_device`; None keeps all);
    the other events stay."""
    m = check_memory_device(device)
    if m is None:
        return events
    dev = events["device"]
    wanted = dev < 0 if m.group(1) == "cpu" else (dev >= 0 if m.group(2) is None else dev == int(m.group(2)))
    memory = np.isin(events["kind"], np.array([int(EventKind.MEMORY), int(EventKind.COUNTER)], np.uint8))
    return events.select(~memory | wanted)


OPERATOR_MEMORY = Analyzer(
    "operator_memory", tuple(OPERATOR_MEMORY_COLUMNS), operator_memory,
    AnalyzerNeeds(events=(EventKind.MEMORY,), columns=("ts", "dur", "kind", "type", "name", "value", "args"),
                  collected=("profile_memory=True",)),
    title="one row per allocation, in allocation order")
MEMORY_RECORD = Analyzer(
    "memory_record", tuple(MEMORY_RECORD_COLUMNS), memory_record,
    AnalyzerNeeds(events=(EventKind.COUNTER,), columns=("ts", "kind", "type", "name", "value", "args"),
                  collected=("profile_memory=True",)),
    title="the memory series: one row per component, device and instant")
NPU_MODULE_MEM = Analyzer(
    "npu_module_mem", tuple(NPU_MODULE_MEM_COLUMNS), npu_module_mem,
    AnalyzerNeeds(events=(EventKind.COUNTER,), columns=("ts", "kind", "type", "name", "value", "args"),
                  collected=("profile_memory=True",)),
    title="memory reserved per NPU module")
