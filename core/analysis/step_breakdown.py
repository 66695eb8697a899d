"""The steps family: which step each event belongs to, the window each step is measured over,
and the per-step time breakdown (``step_trace_time``).

Example::

    >>> from npuprof.events import EventTable, EventKind
    >>> ev = EventTable.from_records(ts=[0, 100], dur=[1000, 200],
    ...         kind=[EventKind.STEP, EventKind.OP], name=["ProfilerStep#0", "MatMul-op0"],
    ...         type=["ProfilerStep", "MatMul"])
    >>> step_trace(assign_steps(ev)).rows()[0][:2]
    [0, 0.2]
"""
from __future__ import annotations

import numpy as np

from ..events import EventKind, EventTable
from .analyzer import Analyzer, AnalyzerNeeds
from .intervals import BLOCK, bucket_index, covered_per_bucket, per_bucket_length
from .rows import comm_op_mask, computing_mask, is_sorted
from .steps import step_spans
from .table import Table

STEP_TRACE_COLUMNS = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                      "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]


def assign_steps(events: EventTable) -> EventTable:
    """Set the ``step`` column by containment of each event's start in a step range.

    Events that already carry a step (>= 0) keep it.
    """
    numbers, starts, ends = step_spans(events)
    if not len(numbers) or not len(events):
        return events
    ts = events["ts"]
    if is_sorted(ts):
        step = _steps_of_sorted(ts, numbers, starts, ends)
    else:
        idx = bucket_index(ts, starts)
        np.clip(idx, -1, len(ends) - 1, out=idx)
        safe = np.maximum(idx, 0)
        inside = (idx >= 0) & (ts < ends[safe])
        step = np.where(inside, numbers[safe], np.int32(-1)).astype(np.int32, copy=False)
        del idx, safe, inside
    old = events["step"]
    keep = old >= 0
    if keep.any():
        step = np.where(keep, old, step).astype(np.int32, copy=False)
    return events.with_column("step", step)


def _steps_of_sorted(ts: np.ndarray, numbers: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The step of each start in sorted ``ts``, as runs: the rows of step k (last start <= ts)
    are ``lo[k]:lo[k+1]``, those before its end come first; one ``repeat`` writes the column.

    Example::

        >>> _steps_of_sorted(np.array([0, 5, 10, 12, 20, 30]), np.array([7, 8], np.int32),
        ...                  np.array([5, 12]), np.array([11, 21])).tolist()
        [-1, 7, 7, 8, 8, -1]
    """
    lo = np.searchsorted(ts, starts, side="left")
    nxt = np.append(lo[1:], len(ts))
    cut = np.clip(np.searchsorted(ts, ends, side="left"), lo, nxt)
    m = len(starts)
    values = np.full(2 * m + 1, -1, dtype=np.int32)
    values[1::2] = numbers
    lengths = np.empty(2 * m + 1, dtype=np.int64)
    lengths[0] = lo[0]
    lengths[1::2] = cut - lo
    lengths[2::2] = nxt - cut
    return np.repeat(values, lengths)



def _first_start(ts: np.ndarray, mask: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Earliest masked start inside each bucket (-1 when none), ``ts`` sorted; block by block."""
    best = np.full(len(starts), np.iinfo(np.int64).max)
    for lo in range(0, len(ts), BLOCK):
        s = ts[lo:lo + BLOCK][mask[lo:lo + BLOCK]]
        if not len(s):
            continue
        pos = np.searchsorted(s, starts, side="left")
        hit = pos < len(s)
        cand = s[np.minimum(pos, len(s) - 1)]
        hit &= cand < ends
        np.minimum(best, np.where(hit, cand, best), out=best)
    return np.where(best == np.iinfo(np.int64).max, -1, best)


def step_windows(events: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step numbers, starts, ends) of the time each step is measured over, sorted by start.

    On a device run (device kernels or device communication operators start
    in the step) a step's window is its activity, as the Ascend tools
    measure it: from the first start to the last end of the compute and
    communication events starting in its ProfilerStep range (work launched
    in the step may end after it; never past the next step's start).
    Otherwise the ProfilerStep range itself (see :func:`step_spans`).
    """
    numbers, starts, ends = step_spans(events)
    if not len(events) or not len(numbers):
        return numbers, starts, ends
    kind = events["kind"]
    comm = comm_op_mask(events)
    device = (kind == np.uint8(EventKind.KERNEL)) | (comm & (events["device"] >= 0))
    if not device.any():      # a host run: the ProfilerStep ranges themselves
        return numbers, starts, ends
    busy = computing_mask(events) | (kind == np.uint8(EventKind.KERNEL)) | comm    # memory copies are device time too
    rows = np.flatnonzero(busy)
    t = events["ts"][rows]
    e = t + events["dur"][rows]
    b = np.searchsorted(starts, t, side="right") - 1
    ok = (b >= 0) & (t < ends[np.clip(b, 0, len(ends) - 1)])
    b, t, e, on = b[ok], t[ok], e[ok], device[rows][ok]
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    first, last = np.full(len(starts), big), np.full(len(starts), small)
    np.minimum.at(first, b, t)
    np.maximum.at(last, b, e)
    on_device = np.zeros(len(starts), bool)
    on_device[b[on]] = True
    next_starts = np.append(starts[1:], big)
    win_starts = np.where(on_device, first, starts)
    win_ends = np.where(on_device, np.minimum(last, next_starts), ends)
    return numbers, win_starts, win_ends


def step_trace(events: EventTable) -> Table:
    """Per-step time breakdown (step_trace_time.csv), in µs, as the Ascend tools compute it.

    Each step is measured over its :func:`step_windows` window. Computing =
    union of compute events (device kernels but memory copies and fills,
    else host operators);
    Communication = union of communication *operators* (their tasks lie inside
    them); Overlapped = their intersection; Stage = the window; Free = the
    window covered by neither; Preparing = ProfilerStep start to the window's
    start on a device run, else to the first compute event (empty: not
    measured, where the data has no step range).
    """
    numbers, host_starts, host_ends = step_spans(events)
    _, starts, ends = step_windows(events)
    ts, dur = events["ts"], events["dur"]
    if len(events):
        comp_mask = computing_mask(events)
        comm_mask = comm_op_mask(events)
    else:
        comp_mask = comm_mask = np.zeros(0, bool)
    has_comm = bool(comm_mask.any())
    first = np.full(len(numbers), -1, dtype=np.int64)
    if is_sorted(ts):   # block by block, no per-event copies (the pipeline sorts every table)
        computing = covered_per_bucket(ts, dur, comp_mask, starts, ends)
        communication = covered_per_bucket(ts, dur, comm_mask, starts, ends) if has_comm else \
            np.zeros(len(numbers), np.int64)
        both = covered_per_bucket(ts, dur, comp_mask | comm_mask, starts, ends) if has_comm else computing
        if len(numbers):
            fs = _first_start(ts, comp_mask, host_starts, host_ends)
            first = np.where(fs >= 0, fs - host_starts, -1)
    else:
        cs, ms = ts[comp_mask], ts[comm_mask]
        ce, me = cs + dur[comp_mask], ms + dur[comm_mask]
        computing = per_bucket_length(cs, ce, starts, ends)
        communication = per_bucket_length(ms, me, starts, ends)
        both = per_bucket_length(np.concatenate([cs, ms]), np.concatenate([ce, me]), starts, ends) if has_comm \
            else computing
        if len(cs) and len(numbers):
            b = np.searchsorted(host_starts, cs, side="right") - 1
            ok = (b >= 0) & (cs < host_ends[np.clip(b, 0, len(host_ends) - 1)])
            first_start = np.full(len(numbers), np.iinfo(np.int64).max)
            np.minimum.at(first_start, b[ok], cs[ok])
            first = np.where(first_start == np.iinfo(np.int64).max, -1, first_start - host_starts)
    overlapped = computing + communication - both
    stage = ends - starts
    free = stage - both
    windowed = (starts != host_starts) | (ends != host_ends)
    preparing = np.where(windowed, starts - host_starts, np.where(first >= 0, first, host_ends - host_starts))
    if len(numbers) and not (events["kind"] == np.uint8(EventKind.STEP)).any():
        # no step range in the data (a trace missing, a run without steps): the step's start, so the time
        # before its first task, is not measured
        preparing = np.full(len(numbers), np.nan)
    us = lambda a: np.round(a / 1000.0, 3)  # noqa: E731
    comm_not_ov = communication - overlapped
    return Table("step_trace_time", STEP_TRACE_COLUMNS, {
        "Step": numbers.tolist(), "Computing": us(computing), "Communication(Not Overlapped)": us(comm_not_ov),
        "Overlapped": us(overlapped), "Communication": us(communication), "Free": us(free),
        "Stage": us(stage), "Bubble": us(np.zeros(len(numbers))),
        "Communication(Not Overlapped and Exclude Receive)": us(comm_not_ov), "Preparing": us(preparing)})


STEP_TRACE_TIME = Analyzer(
    "step_trace_time", tuple(STEP_TRACE_COLUMNS), step_trace,
    AnalyzerNeeds(events=(EventKind.STEP, EventKind.KERNEL, EventKind.OP, EventKind.COMM),
                  columns=("ts", "dur", "kind", "type", "device", "args", "step")),
    summary=True, csv="always", title="per-step time: computing, communication, overlap, free, preparing")
