"""Analyzers: pure functions from the event table to output tables.

Every number comes from the events; nothing is a constant. Times in the
tables are microseconds (float, 3 decimals in files), as the Ascend tools.

Example::

    >>> from npuprof.events import EventTable, EventKind
    >>> ev = EventTable.from_records(ts=[0, 100], dur=[1000, 200],
    ...         kind=[EventKind.STEP, EventKind.OP], name=["ProfilerStep#0", "MatMul-op0"],
    ...         type=["ProfilerStep", "MatMul"])
    >>> step_trace(assign_steps(ev)).rows()[0][:2]
    [0, 0.2]
"""
from __future__ import annotations

import re

import numpy as np

from ..events import EventKind, EventTable
from .intervals import per_bucket_length
from .table import Table

STEP_RE = re.compile(r"ProfilerStep\s*#\s*(\d+)")
STEP_TRACE_COLUMNS = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                      "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
OP_STATISTIC_COLUMNS = ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)",
                        "Avg Time(us)", "Max Time(us)", "Ratio(%)"]
API_STATISTIC_COLUMNS = ["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)",
                         "Variance"]
KERNEL_DETAILS_COLUMNS = ["Step ID", "Device_id", "Name", "Type", "Accelerator Core", "Start Time(us)",
                          "Duration(us)", "Wait Time(us)", "Block Num"]
RANGE_STATISTIC_COLUMNS = ["Name", "Domain", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                           "Max Time(us)"]
HOST_USAGE_COLUMNS = ["Series", "Samples", "Min", "Avg", "Max"]


def step_spans(events: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step numbers, starts, ends) of the ProfilerStep ranges, sorted by start.

    With no step ranges the whole run is one step numbered 0.
    """
    steps = events.of_kind(EventKind.STEP)
    if len(steps):
        numbers = np.array([int(m.group(1)) if (m := STEP_RE.search(s)) else -1
                            for s in steps.string_array("name")], dtype=np.int32)
        order = np.argsort(steps["ts"], kind="stable")
        return numbers[order], steps["ts"][order], (steps["ts"] + steps["dur"])[order]
    if not len(events):
        return np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = int(events["ts"].min())
    end = int((events["ts"] + events["dur"]).max())
    return np.zeros(1, np.int32), np.array([start]), np.array([max(end, start + 1)])


def assign_steps(events: EventTable) -> EventTable:
    """Set the ``step`` column by containment of each event's start in a step range.

    Events that already carry a step (>= 0) keep it.
    """
    numbers, starts, ends = step_spans(events)
    if not len(numbers) or not len(events):
        return events
    ts = events["ts"]
    idx = np.searchsorted(starts, ts, side="right") - 1
    inside = (idx >= 0) & (ts < ends[np.clip(idx, 0, len(ends) - 1)])
    step = np.where(inside, numbers[np.clip(idx, 0, len(numbers) - 1)], -1).astype(np.int32)
    step = np.where(events["step"] >= 0, events["step"], step)
    return events.with_column("step", step)


def compute_events(events: EventTable) -> EventTable:
    """Device kernels when there are any, else host framework operators."""
    kernels = events.of_kind(EventKind.KERNEL)
    return kernels if len(kernels) else events.of_kind(EventKind.OP)


def step_trace(events: EventTable) -> Table:
    """Per-step time breakdown (step_trace_time.csv), in µs.

    Computing = union of compute events; Communication = union of
    communication ops; Overlapped = their intersection; Free = step time
    covered by neither; Preparing = step start to its first compute event.
    """
    numbers, starts, ends = step_spans(events)
    comp = compute_events(events)
    comm = events.of_kind(EventKind.COMM)
    cs, ce = comp["ts"], comp["ts"] + comp["dur"]
    ms, me = comm["ts"], comm["ts"] + comm["dur"]
    computing = per_bucket_length(cs, ce, starts, ends)
    communication = per_bucket_length(ms, me, starts, ends)
    both = per_bucket_length(np.concatenate([cs, ms]), np.concatenate([ce, me]), starts, ends)
    overlapped = computing + communication - both
    free = (ends - starts) - both
    first = np.full(len(numbers), -1, dtype=np.int64)
    if len(cs) and len(numbers):
        b = np.searchsorted(starts, cs, side="right") - 1
        ok = (b >= 0) & (cs < ends[np.clip(b, 0, len(ends) - 1)])
        first_start = np.full(len(numbers), np.iinfo(np.int64).max)
        np.minimum.at(first_start, b[ok], cs[ok])
        first = np.where(first_start == np.iinfo(np.int64).max, -1, first_start - starts)
    preparing = np.where(first >= 0, first, ends - starts)
    us = lambda a: np.round(a / 1000.0, 3)  # noqa: E731
    comm_not_ov = communication - overlapped
    return Table("step_trace_time", STEP_TRACE_COLUMNS, {
        "Step": numbers.tolist(), "Computing": us(computing), "Communication(Not Overlapped)": us(comm_not_ov),
        "Overlapped": us(overlapped), "Communication": us(communication), "Free": us(free),
        "Stage": us(ends - starts), "Bubble": us(np.zeros(len(numbers))),
        "Communication(Not Overlapped and Exclude Receive)": us(comm_not_ov), "Preparing": us(preparing)})


def _group_stats(keys: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, ...]:
    """unique keys, count, total, min, max, sum of squares (vectorised)."""
    uniq, inv = np.unique(keys, return_inverse=True, axis=0)
    n = len(uniq)
    count = np.bincount(inv, minlength=n)
    d = dur.astype(np.float64)
    total = np.bincount(inv, weights=d, minlength=n)
    sq = np.bincount(inv, weights=d * d, minlength=n)
    mn = np.full(n, np.inf)
    mx = np.full(n, -np.inf)
    np.minimum.at(mn, inv, d)
    np.maximum.at(mx, inv, d)
    return uniq, count, total, mn, mx, sq


def op_statistic(events: EventTable) -> Table:
    """Per operator type: count and time statistics (op_statistic.csv)."""
    ops = events.of_kind(EventKind.KERNEL, EventKind.OP)
    if not len(ops):
        return Table("op_statistic", OP_STATISTIC_COLUMNS, {c: [] for c in OP_STATISTIC_COLUMNS})
    keys = np.stack([ops["type"].astype(np.int64), ops["kind"].astype(np.int64), ops["device"].astype(np.int64)], 1)
    uniq, count, total, mn, mx, _ = _group_stats(keys, ops["dur"])
    order = np.argsort(-total, kind="stable")
    uniq, count, total, mn, mx = uniq[order], count[order], total[order], mn[order], mx[order]
    pool = np.asarray(ops.strings, dtype=object)
    is_kernel = uniq[:, 1] == int(EventKind.KERNEL)
    grand = total.sum() or 1.0
    return Table("op_statistic", OP_STATISTIC_COLUMNS, {
        "Device_id": [str(d) if k else "host" for d, k in zip(uniq[:, 2].tolist(), is_kernel.tolist())],
        "OP Type": pool[uniq[:, 0]].tolist(),
        "Core Type": ["AI_CORE" if k else "HOST_CPU" for k in is_kernel.tolist()],
        "Count": count.tolist(),
        "Total Time(us)": np.round(total / 1e3, 3), "Min Time(us)": np.round(mn / 1e3, 3),
        "Avg Time(us)": np.round(total / count / 1e3, 3), "Max Time(us)": np.round(mx / 1e3, 3),
        "Ratio(%)": np.round(100.0 * total / grand, 3)})


def api_statistic(events: EventTable) -> Table:
    """Per API (level, name): time statistics and variance (api_statistic.csv)."""
    api = events.of_kind(EventKind.API)
    if not len(api):
        return Table("api_statistic", API_STATISTIC_COLUMNS, {c: [] for c in API_STATISTIC_COLUMNS})
    keys = np.stack([api["type"].astype(np.int64), api["name"].astype(np.int64), api["device"].astype(np.int64)], 1)
    uniq, count, total, mn, mx, sq = _group_stats(keys, api["dur"])
    order = np.argsort(-total, kind="stable")
    uniq, count, total, mn, mx, sq = (a[order] for a in (uniq, count, total, mn, mx, sq))
    pool = np.asarray(api.strings, dtype=object)
    mean = total / count
    var = np.maximum(sq / count - mean * mean, 0.0) / 1e6  # us^2
    return Table("api_statistic", API_STATISTIC_COLUMNS, {
        "Device_id": ["host" if d < 0 else str(d) for d in uniq[:, 2].tolist()],
        "Level": pool[uniq[:, 0]].tolist(), "API Name": pool[uniq[:, 1]].tolist(),
        "Time(us)": np.round(total / 1e3, 3), "Count": count.tolist(), "Avg(us)": np.round(mean / 1e3, 3),
        "Min(us)": np.round(mn / 1e3, 3), "Max(us)": np.round(mx / 1e3, 3), "Variance": np.round(var, 3)})


def kernel_details(events: EventTable) -> Table:
    """One row per compute event (device kernels, else host operators)."""
    comp = compute_events(events).sorted()
    n = len(comp)
    if not n:
        return Table("kernel_details", KERNEL_DETAILS_COLUMNS, {c: [] for c in KERNEL_DETAILS_COLUMNS})
    ts, dur = comp["ts"], comp["dur"]
    # wait = gap since the previous event on the same device queue (stream, else thread)
    queue = np.where(comp["stream"] >= 0, comp["stream"].astype(np.int64), comp["tid"])
    order = np.lexsort((ts, queue))
    wait = np.zeros(n, dtype=np.int64)
    q, t, end = queue[order], ts[order], (ts + dur)[order]
    same = np.empty(n, dtype=bool)
    same[0] = False
    same[1:] = q[1:] == q[:-1]
    gaps = np.zeros(n, dtype=np.int64)
    gaps[1:] = np.maximum(t[1:] - end[:-1], 0)
    wait[order] = np.where(same, gaps, 0)
    is_kernel = comp["kind"] == int(EventKind.KERNEL)
    return Table("kernel_details", KERNEL_DETAILS_COLUMNS, {
        "Step ID": comp["step"].tolist(),
        "Device_id": np.where(is_kernel, comp["device"], -1).tolist(),
        "Name": comp.column_strings("name"), "Type": comp.column_strings("type"),
        "Accelerator Core": np.where(is_kernel, "AI_CORE", "HOST_CPU").tolist(),
        "Start Time(us)": [f"{x / 1e3:.3f}" for x in ts.tolist()],
        "Duration(us)": np.round(dur / 1e3, 3), "Wait Time(us)": np.round(wait / 1e3, 3),
        "Block Num": ["N/A"] * n})


def range_statistic(events: EventTable) -> Table:
    """User ranges (record_function, mstx) grouped by name and domain."""
    rng = events.of_kind(EventKind.RANGE)
    if not len(rng):
        return Table("range_statistic", RANGE_STATISTIC_COLUMNS, {c: [] for c in RANGE_STATISTIC_COLUMNS})
    keys = np.stack([rng["name"].astype(np.int64), rng["type"].astype(np.int64)], 1)
    uniq, count, total, mn, mx, _ = _group_stats(keys, rng["dur"])
    order = np.argsort(-total, kind="stable")
    uniq, count, total, mn, mx = (a[order] for a in (uniq, count, total, mn, mx))
    pool = np.asarray(rng.strings, dtype=object)
    return Table("range_statistic", RANGE_STATISTIC_COLUMNS, {
        "Name": pool[uniq[:, 0]].tolist(), "Domain": [d or "default" for d in pool[uniq[:, 1]].tolist()],
        "Count": count.tolist(), "Total Time(us)": np.round(total / 1e3, 3), "Min Time(us)": np.round(mn / 1e3, 3),
        "Avg Time(us)": np.round(total / count / 1e3, 3), "Max Time(us)": np.round(mx / 1e3, 3)})


def host_usage(events: EventTable) -> Table:
    """Summary of each sampled host series (CPU %, memory %, disk/network B/s)."""
    ctr = events.of_kind(EventKind.COUNTER)
    if not len(ctr):
        return Table("host_usage", HOST_USAGE_COLUMNS, {c: [] for c in HOST_USAGE_COLUMNS})
    names = ctr["name"]
    uniq, inv = np.unique(names, return_inverse=True)
    val = ctr["value"]
    count = np.bincount(inv)
    total = np.bincount(inv, weights=val)
    mn = np.full(len(uniq), np.inf)
    mx = np.full(len(uniq), -np.inf)
    np.minimum.at(mn, inv, val)
    np.maximum.at(mx, inv, val)
    pool = np.asarray(ctr.strings, dtype=object)
    return Table("host_usage", HOST_USAGE_COLUMNS, {
        "Series": pool[uniq].tolist(), "Samples": count.tolist(), "Min": np.round(mn, 3),
        "Avg": np.round(total / count, 3), "Max": np.round(mx, 3)})


ANALYZERS = {
    "step_trace_time": step_trace,
    "op_statistic": op_statistic,
    "api_statistic": api_statistic,
    "kernel_details": kernel_details,
    "range_statistic": range_statistic,
    "host_usage": host_usage,
}
