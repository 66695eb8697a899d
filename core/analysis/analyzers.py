"""Analyzers: pure functions from the event table to output tables.

Every number comes from the events; nothing is a constant. Times in the
tables are microseconds (float, 3 decimals in files), as the Ascend tools.

They read only the columns they need, through row masks (no copy of the
whole table per event kind), group with linear-time dense keys
(:mod:`.grouping`), and leave per-event tables (kernel_details) lazy: rows
are produced block by block when written.

Example::

    >>> from npuprof.events import EventTable, EventKind
    >>> ev = EventTable.from_records(ts=[0, 100], dur=[1000, 200],
    ...         kind=[EventKind.STEP, EventKind.OP], name=["ProfilerStep#0", "MatMul-op0"],
    ...         type=["ProfilerStep", "MatMul"])
    >>> step_trace(assign_steps(ev)).rows()[0][:2]
    [0, 0.2]
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..events import (KERNEL_TENSOR_COLUMNS, MEMORY_ACTIVITY_TYPES, EventKind, EventTable, _is_constant,
                      parse_args_text, take_rows)
from . import memory
from .grouping import group_by, small_unique
from .steps import STEP_RE, step_spans
from .intervals import BLOCK, bucket_index, covered_per_bucket, per_bucket_length
from .table import EventRowsTable, Table

STEP_TRACE_COLUMNS = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                      "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
OP_STATISTIC_COLUMNS = ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)",
                        "Avg Time(us)", "Max Time(us)", "Ratio(%)"]
API_STATISTIC_COLUMNS = ["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)",
                         "Variance"]
KERNEL_DETAILS_COLUMNS = ["Step ID", "Device_id", "Model ID", "Task ID", "Stream ID", "Name", "Type",
                          "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim"]
# kernel_details columns read from a kernel's args (the reader keeps the tool's own columns there)
_ARG_COLUMNS = ("Model ID", "Task ID", "Accelerator Core", "Wait Time(us)", "Block Dim")
# args keys of communication events that are npuprof's convention, not the tool's columns (see analysis.communication)
_NOT_COLUMNS = frozenset({"group", "group_name", "src_rank", "dst_rank", "size", "transport", "wait_ns", "task_type",
                          "device_task_type", "connection_ids",
                          "link_type", "transport_type", "notify_id", "alg_type", "count", "data_type",
                          "connection_id"})
# where a kernel's core type is (kernel_details "Accelerator Core"; CANN's task type in traces and op_summary)
CORE_TYPE_KEYS = ("Accelerator Core", "Task Type", "task_type")
RANGE_STATISTIC_COLUMNS = ["Name", "Domain", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                           "Max Time(us)"]
HOST_USAGE_COLUMNS = ["Series", "Samples", "Min", "Avg", "Max"]
OPERATOR_DETAILS_COLUMNS = ["Name", "Input Shapes"]   # MindSpore's operator_details.csv
OP_SHAPE_STATISTIC_COLUMNS = ["Device_id", "OP Type", "Input Shapes", "Core Type", "Count", "Total Time(us)",
                              "Min Time(us)", "Avg Time(us)", "Max Time(us)", "Type Share(%)"]
FEW_QUEUES = 16
DENSE_STATS = 1 << 21     # composite key spaces up to this size are aggregated block by block
_OP, _KERNEL, _COMM, _STEP = int(EventKind.OP), int(EventKind.KERNEL), int(EventKind.COMM), int(EventKind.STEP)


def _rows_of(events: EventTable, *kinds: EventKind) -> np.ndarray:
    """Indices of the rows of the given kinds."""
    kind = events["kind"]
    if len(kinds) == 1:
        return np.flatnonzero(kind == np.uint8(kinds[0]))
    return np.flatnonzero(_kind_mask(kind, kinds))


def _kind_mask(kind: np.ndarray, kinds: Any) -> np.ndarray:
    """Rows whose uint8 ``kind`` is one of ``kinds``: one lookup per row (``np.isin`` makes a pass per kind)."""
    lut = np.zeros(256, dtype=bool)
    lut[[int(k) for k in kinds]] = True
    return lut[kind]


def _is_sorted(a: np.ndarray) -> bool:
    return len(a) < 2 or bool((a[1:] >= a[:-1]).all())


def _parsed_args(events: EventTable, rows: np.ndarray) -> tuple[np.ndarray, list[dict]]:
    """``(which, parsed)``: ``parsed[which[i]]`` is the args object of ``rows[i]`` ({} when none).

    Each distinct args text is parsed once (kernels read from files carry one
    text per task; without a sort: O(rows + pool)).
    """
    codes = events["args"][rows]
    if not len(codes):
        return np.zeros(0, np.int32), []
    low = int(codes.min())
    if low == int(codes.max()):   # one args text for every row (host operators): no per-row index, no bincount
        return np.broadcast_to(np.int32(0), (len(codes),)), events.args_objects(np.array([low], dtype=np.int64))
    uniq = np.flatnonzero(np.bincount(codes))
    lut = np.zeros(int(uniq[-1]) + 1, dtype=np.int32)    # int32: one per row, and pools stay far below 2**31
    lut[uniq] = np.arange(len(uniq))
    parsed = events.args_objects(uniq)
    return lut[codes], parsed


def _first_of(obj: dict, keys: tuple) -> Optional[str]:
    """The first of ``keys`` that ``obj`` has with a usable value, as text."""
    for k in keys:
        v = obj.get(k)
        if v is not None and v != "" and not isinstance(v, (dict, list)):
            return str(v)
    return None


def _text_codes(parsed: list[dict], keys: tuple, default: str) -> tuple[np.ndarray, list]:
    """Per parsed args object, the text of the first of ``keys`` (``default`` when none), as
    codes into a pool; ``codes[which]`` gives them per row (see :func:`_parsed_args`)."""
    pool, index = [default], {default: 0}
    per_args = np.zeros(len(parsed), dtype=np.int32)
    for i, obj in enumerate(parsed):
        text = _first_of(obj, keys)
        if text is not None:
            per_args[i] = index.setdefault(text, len(pool))
            if per_args[i] == len(pool):
                pool.append(text)
    return per_args, pool


def core_types(events: EventTable, rows: np.ndarray,
               parsed_args: Optional[tuple[np.ndarray, list[dict]]] = None) -> tuple[np.ndarray, list]:
    """The core type of each of ``rows`` as codes into a pool: what the data names
    (kernel_details' ``Accelerator Core``, CANN's ``Task Type``); ``HOST_CPU`` for
    host operators, ``HCCL`` for communication without one, ``N/A`` for kernels
    whose data names none (never assumed).

    Example::

        >>> ev = EventTable.from_records(ts=[0, 1, 2], kind=[EventKind.KERNEL, EventKind.KERNEL, EventKind.OP],
        ...     args=['{"Accelerator Core": "AI_VECTOR_CORE"}', "", ""])
        >>> codes, pool = core_types(ev, np.arange(3))
        >>> [pool[c] for c in codes.tolist()]
        ['AI_VECTOR_CORE', 'N/A', 'HOST_CPU']

    ``parsed_args``: the rows' ``_parsed_args`` when the caller has them already.
    """
    which, parsed = parsed_args if parsed_args is not None else _parsed_args(events, rows)
    per_args, pool = _text_codes(parsed, CORE_TYPE_KEYS, "N/A")
    codes = per_args[which]
    kind = events["kind"][rows]
    for fixed_kind, text in ((_OP, "HOST_CPU"), (_COMM, "HCCL")):
        sel = (kind == fixed_kind) & (codes == 0) if fixed_kind == _COMM else kind == fixed_kind
        if sel.any():
            if text not in pool:
                pool.append(text)
            codes[sel] = pool.index(text)
    return codes, pool


def comm_task_mask(events: EventTable) -> np.ndarray:
    """Rows that are tasks of a communication operator (``task_type``, or a
    ``src_rank``/``dst_rank`` transfer in args, see :mod:`npuprof.analysis.communication`),
    not operators: a collective's time is its operator's span, counted once."""
    mask = np.zeros(len(events), dtype=bool)
    rows = _rows_of(events, EventKind.COMM) if len(events) else np.zeros(0, np.int64)
    if not len(rows):
        return mask
    which, parsed = _parsed_args(events, rows)
    is_task = np.array([("task_type" in p) or ("src_rank" in p and "dst_rank" in p) for p in parsed], dtype=bool)
    mask[rows] = is_task[which]
    return mask


def comm_op_mask(events: EventTable) -> np.ndarray:
    """Rows that are communication operators (COMM events that are not tasks)."""
    if not len(events):
        return np.zeros(0, bool)
    return (events["kind"] == np.uint8(EventKind.COMM)) & ~comm_task_mask(events)


def assign_steps(events: EventTable) -> EventTable:
    """Set the ``step`` column by containment of each event's start in a step range.

    Events that already carry a step (>= 0) keep it.
    """
    numbers, starts, ends = step_spans(events)
    if not len(numbers) or not len(events):
        return events
    ts = events["ts"]
    if _is_sorted(ts):
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


def compute_rows(events: EventTable) -> np.ndarray:
    """Row indices of compute events: device kernels when there are any, else host operators."""
    if not len(events):
        return np.zeros(0, np.int64)
    rows = _rows_of(events, EventKind.KERNEL)
    return rows if len(rows) else _rows_of(events, EventKind.OP)


def compute_events(events: EventTable) -> EventTable:
    """Device kernels when there are any, else host framework operators."""
    return events.select(compute_rows(events))


def computing_mask(events: EventTable) -> np.ndarray:
    """Row mask of compute events: device kernels when there are any (not memory activity: copies and
    fills are device time, not computing), else host operators."""
    kind = events["kind"]
    mask = kind == np.uint8(EventKind.KERNEL)
    if not mask.any():
        return kind == np.uint8(EventKind.OP)
    memory = [c for c in map(events.code_of, MEMORY_ACTIVITY_TYPES) if c >= 0]
    return mask & ~np.isin(events["type"], memory) if memory else mask


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
    if _is_sorted(ts):   # block by block, no per-event copies (the pipeline sorts every table)
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


def _stats(mask: np.ndarray, events: EventTable, key_cols: tuple) -> tuple:
    """Groups of the masked rows by ``key_cols``, ordered by total duration (desc, stable).

    ``key_cols`` are event column names or full-length integer arrays.
    Returns keys, count, total, min, max, sum of squares of ``dur``. When the
    composite key space is small the sums are accumulated block by block
    (memory: a few block-sized arrays); otherwise all rows are grouped at once.
    """
    cols = [events[c] if isinstance(c, str) else c for c in key_cols]
    lows, spans = [], []
    for c in cols:
        if _is_constant(c):   # one value: no need to gather the masked rows
            lows.append(int(c[0]))
            spans.append(1)
            continue
        sel = c[mask]
        lows.append(int(sel.min()))
        spans.append(int(sel.max()) - lows[-1] + 1)
        del sel
    space = int(np.prod(spans, dtype=object))
    if space > DENSE_STATS:
        rows = np.flatnonzero(mask)
        g = group_by(*(c[rows] for c in cols))
        d = events["dur"][rows].astype(np.float64)
        total, sq, mn, mx, count, keys = g.sum(d), g.sum(d * d), g.min(d), g.max(d), g.count, g.keys
    else:
        count = np.zeros(space, np.int64)
        total = np.zeros(space)
        sq = np.zeros(space)
        mn = np.full(space, np.inf)
        mx = np.full(space, -np.inf)
        dur = events["dur"]
        for lo in range(0, len(mask), BLOCK):
            rows = np.flatnonzero(mask[lo:lo + BLOCK])   # once: each column below is a take, not a mask scan
            if not len(rows):
                continue
            key = np.zeros(len(rows), dtype=np.int64)
            for c, low, span in zip(cols, lows, spans):
                if span > 1:
                    key *= span
                    key += c[lo:lo + BLOCK].take(rows)
                    key -= low
            d = dur[lo:lo + BLOCK].take(rows).astype(np.float64)
            count += np.bincount(key, minlength=space)
            total += np.bincount(key, weights=d, minlength=space)
            sq += np.bincount(key, weights=d * d, minlength=space)
            np.minimum.at(mn, key, d)
            np.maximum.at(mx, key, d)
        present = np.flatnonzero(count)
        count, total, sq, mn, mx = count[present], total[present], sq[present], mn[present], mx[present]
        keys = np.empty((len(present), len(cols)), dtype=np.int64)
        rest = present.copy()
        for j in range(len(cols) - 1, -1, -1):
            keys[:, j] = rest % spans[j] + lows[j]
            rest //= spans[j]
    order = np.argsort(-total, kind="stable")
    return keys[order], count[order], total[order], mn[order], mx[order], sq[order]


def op_statistic(events: EventTable) -> Table:
    """Per operator type and core type: count and time statistics (op_statistic.csv).

    Device kernels when there are any (communication operators are not
    operators here, as in the Ascend tools), else host operators. The core
    type is the one the data names (:func:`core_types`).
    """
    mask = computing_mask(events) if len(events) else np.zeros(0, bool)
    if not mask.any():
        return Table("op_statistic", OP_STATISTIC_COLUMNS, {c: [] for c in OP_STATISTIC_COLUMNS})
    rows = np.flatnonzero(mask)
    codes, cores = core_types(events, rows)
    if len(codes) and codes.min() == codes.max():     # one core type (a host run): no per-row column
        core_col = np.broadcast_to(np.int32(codes[0]), (len(events),))
    else:
        core_col = np.zeros(len(events), dtype=np.int32)
        core_col[rows] = codes
    del codes
    uniq, count, total, mn, mx, _ = _stats(mask, events, ("type", core_col, "kind", "device"))
    pool = np.asarray(events.strings, dtype=object)
    is_kernel = uniq[:, 2] == _KERNEL
    grand = total.sum() or 1.0
    return Table("op_statistic", OP_STATISTIC_COLUMNS, {
        "Device_id": [str(d) if k else "host" for d, k in zip(uniq[:, 3].tolist(), is_kernel.tolist())],
        "OP Type": pool[uniq[:, 0]].tolist(),
        "Core Type": [cores[c] for c in uniq[:, 1].tolist()],
        "Count": count.tolist(),
        "Total Time(us)": np.round(total / 1e3, 3), "Min Time(us)": np.round(mn / 1e3, 3),
        "Avg Time(us)": np.round(total / count / 1e3, 3), "Max Time(us)": np.round(mx / 1e3, 3),
        "Ratio(%)": np.round(100.0 * total / grand, 3)})


def api_statistic(events: EventTable) -> Table:
    """Per API (level, name): time statistics and variance (api_statistic.csv)."""
    mask = events["kind"] == np.uint8(EventKind.API)
    if not mask.any():
        return Table("api_statistic", API_STATISTIC_COLUMNS, {c: [] for c in API_STATISTIC_COLUMNS})
    uniq, count, total, mn, mx, sq = _stats(mask, events, ("type", "name", "device"))
    pool = np.asarray(events.strings, dtype=object)
    mean = total / count
    var = np.maximum(sq / count - mean * mean, 0.0) / 1e6  # us^2
    return Table("api_statistic", API_STATISTIC_COLUMNS, {
        "Device_id": ["host" if d < 0 else str(d) for d in uniq[:, 2].tolist()],
        "Level": pool[uniq[:, 0]].tolist(), "API Name": pool[uniq[:, 1]].tolist(),
        "Time(us)": np.round(total / 1e3, 3), "Count": count.tolist(), "Avg(us)": np.round(mean / 1e3, 3),
        "Min(us)": np.round(mn / 1e3, 3), "Max(us)": np.round(mx / 1e3, 3), "Variance": np.round(var, 3)})


def _wait_times(ts: np.ndarray, end: np.ndarray, queue: np.ndarray) -> np.ndarray:
    """Gap since the previous event (in start order) on the same queue, >= 0; 0 for the first."""
    n = len(ts)
    wait = np.zeros(n, dtype=np.int64)
    if n < 2:
        return wait
    if not _is_sorted(ts):
        order = np.lexsort((ts, queue))
        q, t, e = queue[order], ts[order], end[order]
        gaps = np.zeros(n, dtype=np.int64)
        gaps[1:] = np.maximum(t[1:] - e[:-1], 0)
        gaps[1:][q[1:] != q[:-1]] = 0
        wait[order] = gaps
        return wait
    qs = group_by(queue)
    if len(qs) == 1:
        wait[1:] = np.maximum(ts[1:] - end[:-1], 0)
        return wait
    if len(qs) <= FEW_QUEUES:
        # one pass per queue keeps every gather and scatter in increasing index order
        for g in range(len(qs)):
            idx = np.flatnonzero(qs.inverse == g)
            if len(idx) > 1:
                wait[idx[1:]] = np.maximum(ts[idx[1:]] - end[idx[:-1]], 0)
        return wait
    # stable sort by queue keeps start order inside each queue (radix sort on small codes)
    code = qs.inverse.astype(np.uint16 if len(qs) < (1 << 16) else np.int64)
    order = np.argsort(code, kind="stable")
    q, t, e = code[order], ts[order], end[order]
    gaps = np.zeros(n, dtype=np.int64)
    gaps[1:] = np.maximum(t[1:] - e[:-1], 0)
    gaps[1:][q[1:] != q[:-1]] = 0
    wait[order] = gaps
    return wait


# kernel_details columns read from args, and the args keys each may be under (readers' and CANN's spellings)
_COLUMN_KEYS = {"Model ID": ("Model ID", "Model Id", "model_id"), "Task ID": ("Task ID", "Task Id", "task_id"),
                "Block Dim": ("Block Dim", "Block Num", "block")}
_KEYS_OF_COLUMNS = frozenset(k for keys in _COLUMN_KEYS.values() for k in keys) | set(CORE_TYPE_KEYS) | \
    {"Wait Time(us)"}


class KernelDetailsTable(EventRowsTable):
    """kernel_details, one row per device operator (kernels and communication
    operators; host operators when there is no device data), rendered from the
    event columns on demand. Columns the data has (``Task ID``, ``Block Dim``,
    ``Wait Time(us)``, tensor and PMU columns ...) come from the events' args
    as written; ``Wait Time(us)`` is computed only where the data has none."""

    def __init__(self, events: EventTable, rows: np.ndarray, wait: np.ndarray, texts: "_ArgsColumns",
                 cores: tuple[np.ndarray, list]) -> None:
        extra = [c for c in texts.columns if c not in _COLUMN_KEYS]
        super().__init__("kernel_details", KERNEL_DETAILS_COLUMNS + extra, len(rows))
        self.events = events
        self.index = rows
        self.wait = wait
        self.texts = texts
        self.cores = cores

    def block(self, lo: int, hi: int) -> dict:
        ev, idx = self.events, self.index[lo:hi]
        out = {   # one-value columns (a host run's step, device, stream) stay views: not gathered per block
            "Step ID": take_rows(ev["step"], idx),
            "Device_id": _device_ids(ev, idx),
            "Stream ID": _StreamIds(take_rows(ev["stream"], idx)),
            "Name": _Codes(ev["name"][idx], ev.strings), "Type": _Codes(ev["type"][idx], ev.strings),
            "Accelerator Core": _Codes(self.cores[0][lo:hi], self.cores[1]),
            "Start Time(us)": _Fixed3(ev["ts"][idx], strip=False),
            "Duration(us)": _Fixed3(ev["dur"][idx], strip=True),
            "Wait Time(us)": _Fixed3(self.wait[lo:hi], strip=True)}
        which = self.texts.which[lo:hi]
        for col, (per_args, pool) in self.texts.columns.items():
            out[col] = _Codes(per_args[which], pool)
        return out


def _device_ids(ev: EventTable, idx: np.ndarray) -> np.ndarray:
    """kernel_details' Device_id: the event's device, -1 for host operators (and where no row has one)."""
    device = take_rows(ev["device"], idx)
    if device.max(initial=-1) < 0:   # no device at all (a host run): -1 already, a view stays a view
        return device
    return np.where(ev["kind"][idx] == _OP, -1, device)


class _ArgsColumns:
    """Columns taken from the rows' args: one per-row index into the parsed args
    (``which``) and, per column, the small ``(codes per parsed args, pool)`` lookup,
    so a column costs no per-row array until a block is rendered."""

    __slots__ = ("which", "columns")

    def __init__(self, which: np.ndarray, columns: dict) -> None:
        self.which, self.columns = which, columns


class _StreamIds:
    """Stream ids, ``N/A`` where an event has none (-1)."""

    __slots__ = ("values",)

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def tolist(self) -> list:
        return [v if v >= 0 else "N/A" for v in self.values.tolist()]


def _kernel_texts(which: np.ndarray, parsed: list[dict]) -> tuple["_ArgsColumns", np.ndarray]:
    """The kernel_details columns kept in the rows' args, and the ``Wait Time`` (ns, -1 where
    none) of each parsed args object (index it with the columns' ``which``).

    ``Model ID``/``Task ID``/``Block Dim`` always ("N/A" where absent); the
    other columns of a kernel_details row (args holding ``Accelerator Core``:
    a row the Ascend reader took from the tool's file) in their order there,
    and op_summary's tensor columns wherever kernels carry them. ``which`` and
    ``parsed``: the rows' :func:`_parsed_args`.
    """
    texts = {col: _text_codes(parsed, keys, "N/A") for col, keys in _COLUMN_KEYS.items()}
    extra: dict[str, None] = {}
    for obj in parsed:
        from_file = "Accelerator Core" in obj
        for k, v in obj.items():
            if (from_file or k in KERNEL_TENSOR_COLUMNS) and k not in _KEYS_OF_COLUMNS and k not in _NOT_COLUMNS \
                    and not isinstance(v, (dict, list)):
                extra[k] = None
    columns = list(extra)
    tensors = [i for i, k in enumerate(columns) if k in KERNEL_TENSOR_COLUMNS]
    if tensors:   # op_summary's six tensor columns together, in their order, where the first one was
        rest = [k for k in columns if k not in KERNEL_TENSOR_COLUMNS]
        columns = rest[:tensors[0]] + list(KERNEL_TENSOR_COLUMNS) + rest[tensors[0]:]
    for k in columns:
        texts[k] = _text_codes(parsed, (k,), "N/A")
    wait_of = np.full(len(parsed), -1, dtype=np.int64)
    for i, obj in enumerate(parsed):
        text = _first_of(obj, ("Wait Time(us)",))
        if text is not None:
            try:
                wait_of[i] = int(round(float(text) * 1000))
            except ValueError:
                pass
    return _ArgsColumns(which, texts), wait_of


class _Codes:
    """A string column as codes into a pool (rendered without per-row Python)."""

    __slots__ = ("codes", "pool")

    def __init__(self, codes: np.ndarray, pool: list) -> None:
        self.codes, self.pool = codes, pool

    def tolist(self) -> list:
        return np.asarray(self.pool, dtype=object)[self.codes].tolist()


class _Fixed3:
    """Integer ns shown as µs with 3 decimals: exact strings, or floats rounded to 3 decimals."""

    __slots__ = ("values", "strip")

    def __init__(self, values: np.ndarray, strip: bool) -> None:
        self.values, self.strip = values, strip

    def tolist(self) -> list:
        if self.strip:
            return np.round(self.values / 1e3, 3).tolist()
        v = self.values.astype(np.int64)
        whole, frac = np.divmod(np.abs(v), 1000)
        return [f"{'-' if x < 0 else ''}{w}.{f:03d}" for x, w, f in zip(v.tolist(), whole.tolist(), frac.tolist())]


def _mask_rows(mask: np.ndarray) -> np.ndarray:
    """``flatnonzero(mask)`` as int32 when it fits, built block by block (half the memory)."""
    dtype = np.int32 if len(mask) < 2**31 else np.int64
    parts = [np.flatnonzero(mask[lo:lo + BLOCK]).astype(dtype) + dtype(lo) for lo in range(0, len(mask), BLOCK)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _wait_times_sorted(ts: np.ndarray, dur: np.ndarray, rows: np.ndarray, queue_of) -> np.ndarray:
    """Wait times of ``rows`` (already in start order), block by block, carrying each queue's last end."""
    n = len(rows)
    wait = np.zeros(n, dtype=np.int64)
    last_end: dict = {}
    for lo in range(0, n, BLOCK):
        hi = min(n, lo + BLOCK)
        r = rows[lo:hi]
        t = ts[r]
        e = t + dur[r]
        q = queue_of(lo, hi)
        queues = small_unique(q)
        if len(queues) > FEW_QUEUES:
            w = _wait_times(t, e, q)
            # the first event of each queue in this block waits for the queue's end in earlier blocks
            for qv in queues.tolist():
                if qv in last_end:
                    i = int(np.argmax(q == qv))
                    w[i] = max(int(t[i]) - last_end[qv], 0)
            for qv in queues.tolist():
                idx = np.flatnonzero(q == qv)
                last_end[qv] = int(e[idx[-1]])
            wait[lo:hi] = w
            continue
        for qv in queues.tolist():
            idx = np.flatnonzero(q == qv) if len(queues) > 1 else np.arange(hi - lo)
            prev = np.empty(len(idx), dtype=np.int64)
            prev[0] = last_end.get(qv, t[idx[0]])
            prev[1:] = e[idx[:-1]]
            wait[lo + idx] = np.maximum(t[idx] - prev, 0)
            last_end[qv] = int(e[idx[-1]])
    return wait


def kernel_details(events: EventTable) -> Table:
    """One row per device operator (kernels and communication operators, as the
    Ascend tools list them), else per host operator, in start order."""
    if not len(events):
        return Table("kernel_details", KERNEL_DETAILS_COLUMNS, {c: [] for c in KERNEL_DETAILS_COLUMNS})
    device_ops = (events["kind"] == np.uint8(EventKind.KERNEL)) | (comm_op_mask(events) & (events["device"] >= 0))
    rows = _mask_rows(device_ops if device_ops.any() else computing_mask(events))
    if not len(rows):
        return Table("kernel_details", KERNEL_DETAILS_COLUMNS, {c: [] for c in KERNEL_DETAILS_COLUMNS})
    all_ts, all_dur, all_stream, all_tid = events["ts"], events["dur"], events["stream"], events["tid"]

    def queue_of(lo: int, hi: int) -> np.ndarray:
        # the device queue: the stream, else the host thread
        r = rows[lo:hi]
        st = all_stream[r]
        return np.where(st >= 0, st.astype(np.int64), all_tid[r])

    if _is_sorted(all_ts):
        wait = _wait_times_sorted(all_ts, all_dur, rows, queue_of)
    else:
        ts = all_ts[rows]
        order = np.argsort(ts, kind="stable")
        rows, ts = rows[order], ts[order]
        wait = _wait_times(ts, ts + all_dur[rows], queue_of(0, len(rows)))
    parsed_args = _parsed_args(events, rows)   # each distinct args text parsed once for both uses
    texts, wait_of = _kernel_texts(*parsed_args)
    if (wait_of >= 0).any():    # the data's own Wait Time where it has one
        read = wait_of[texts.which]
        np.copyto(wait, read, where=read >= 0)
    return KernelDetailsTable(events, rows, wait, texts, core_types(events, rows, parsed_args))


def range_statistic(events: EventTable) -> Table:
    """User ranges (record_function, mstx) grouped by name and domain."""
    mask = events["kind"] == np.uint8(EventKind.RANGE)
    if not mask.any():
        return Table("range_statistic", RANGE_STATISTIC_COLUMNS, {c: [] for c in RANGE_STATISTIC_COLUMNS})
    uniq, count, total, mn, mx, _ = _stats(mask, events, ("name", "type"))
    pool = np.asarray(events.strings, dtype=object)
    return Table("range_statistic", RANGE_STATISTIC_COLUMNS, {
        "Name": pool[uniq[:, 0]].tolist(), "Domain": [d or "default" for d in pool[uniq[:, 1]].tolist()],
        "Count": count.tolist(), "Total Time(us)": np.round(total / 1e3, 3), "Min Time(us)": np.round(mn / 1e3, 3),
        "Avg Time(us)": np.round(total / count / 1e3, 3), "Max Time(us)": np.round(mx / 1e3, 3)})


def host_usage(events: EventTable) -> Table:
    """Summary of each sampled host series (CPU %, memory %, disk/network B/s)."""
    rows = _rows_of(events, EventKind.COUNTER) if len(events) else np.zeros(0, np.int64)
    if not len(rows):
        return Table("host_usage", HOST_USAGE_COLUMNS, {c: [] for c in HOST_USAGE_COLUMNS})
    g = group_by(events["name"][rows])
    val = events["value"][rows]
    total = g.sum(val)
    pool = np.asarray(events.strings, dtype=object)
    return Table("host_usage", HOST_USAGE_COLUMNS, {
        "Series": pool[g.keys[:, 0]].tolist(), "Samples": g.count.tolist(), "Min": np.round(g.min(val), 3),
        "Avg": np.round(total / g.count, 3), "Max": np.round(g.max(val), 3)})


def input_shapes_text(args: str) -> Optional[str]:
    """The Ascend ``Input Shapes`` text (``"8,64;128,64"``) of an event's args JSON, or None.

    Example::

        >>> input_shapes_text('{"Input Dims": [[8, 64], [128, 64]]}')
        '8,64;128,64'
        >>> input_shapes_text('{"file": "a.py"}') is None
        True
    """
    return input_shapes_of(parse_args_text(args))


def input_shapes_of(obj: dict) -> Optional[str]:
    """:func:`input_shapes_text` of parsed args: ``"Input Shapes"`` when the parser
    stored it, else built from torch's ``"Input Dims"`` (one entry per input; a
    list of entries for a tensor list): dims joined by ``,``, tensors by ``;``."""
    text = obj.get("Input Shapes")
    if isinstance(text, str):
        return text
    dims = obj.get("Input Dims")
    if not isinstance(dims, list):
        return None

    def tensors(entry: Any) -> list:
        if isinstance(entry, list) and entry and all(isinstance(e, list) for e in entry):
            return [t for e in entry for t in tensors(e)]
        return [entry if isinstance(entry, list) else []]

    return ";".join(",".join(str(d) for d in t) for e in dims for t in tensors(e))


class OperatorDetailsTable(EventRowsTable):
    """operator_details, one row per operator launch with input shapes, rendered on demand."""

    def __init__(self, events: EventTable, rows: np.ndarray, shape_codes: np.ndarray, shapes: list) -> None:
        super().__init__("operator_details", OPERATOR_DETAILS_COLUMNS, len(rows))
        self.events, self.index, self.shape_codes, self.shapes = events, rows, shape_codes, shapes

    def block(self, lo: int, hi: int) -> dict:
        return {"Name": _Codes(self.events["name"][self.index[lo:hi]], self.events.strings),
                "Input Shapes": _Codes(self.shape_codes[lo:hi], self.shapes)}


def _shaped_rows(events: EventTable, *kinds: EventKind) -> tuple:
    """Rows of the given kinds whose args carry input shapes, in start order.

    Returns ``(rows, shape_codes, shapes)``: ``shapes[shape_codes[i]]`` is the
    Ascend ``Input Shapes`` text of ``rows[i]`` (code 0, the empty text, is
    never used by a returned row). The args JSON is parsed once per distinct
    args string, not once per row.
    """
    none = (np.zeros(0, np.int64), np.zeros(0, np.int64), [""])
    if not len(events):
        return none
    args = events["args"]
    rows = np.flatnonzero(_kind_mask(events["kind"], kinds) & (args != 0))
    if not len(rows):
        return none
    uniq, inv = np.unique(args[rows], return_inverse=True)
    shapes = [""]
    shape_of = np.zeros(len(uniq), dtype=np.int64)   # 0: no shapes in these args
    seen: dict = {}
    for i, c in enumerate(uniq.tolist()):
        text = input_shapes_of(events.args_object(c))
        if text is not None:
            if text not in seen:
                seen[text] = len(shapes)
                shapes.append(text)
            shape_of[i] = seen[text]
    per_row = shape_of[inv.reshape(-1)]
    keep = per_row > 0
    rows, per_row = rows[keep], per_row[keep]
    if len(rows) and not _is_sorted(events["ts"]):
        order = np.argsort(events["ts"][rows], kind="stable")
        rows, per_row = rows[order], per_row[order]
    return rows, per_row, shapes


def operator_details(events: EventTable) -> Table:
    """Input shapes of each operator launch (operator_details.csv, MindSpore's ``Name, Input Shapes``).

    Rows are the OP events whose args carry ``Input Shapes`` or ``Input
    Dims`` (recorded with ``record_shapes=True``), in start order; no such
    event, no rows.
    """
    rows, per_row, shapes = _shaped_rows(events, EventKind.OP)
    if not len(rows):
        return Table("operator_details", OPERATOR_DETAILS_COLUMNS, {c: [] for c in OPERATOR_DETAILS_COLUMNS})
    return OperatorDetailsTable(events, rows, per_row, shapes)


def op_shape_statistic(events: EventTable) -> Table:
    """Per operator type *and input shapes*: count and time statistics.

    torch's ``key_averages(group_by_input_shape=True)`` for host operators and
    device kernels that carry shapes (``record_shapes=True``; CANN op_summary
    at Level1+). ``Type Share(%)`` is the group's share of the time of all
    shaped launches of its type on its core, so a type whose time sits in one
    shape is easy to spot. Ordered by total time; empty without shapes.

    Example::

        >>> ev = EventTable.from_records(ts=[1, 2, 3], dur=[3000, 1000, 1000], kind=[EventKind.OP] * 3,
        ...     name=["MatMul-op0"] * 3, type=["MatMul"] * 3, args=['{"Input Shapes": "8,64"}',
        ...     '{"Input Shapes": "8,128"}', '{"Input Shapes": "8,128"}'])
        >>> for row in op_shape_statistic(ev).rows(): print(row)
        ['host', 'MatMul', '8,64', 'HOST_CPU', 1, 3.0, 3.0, 3.0, 3.0, 60.0]
        ['host', 'MatMul', '8,128', 'HOST_CPU', 2, 2.0, 1.0, 1.0, 1.0, 40.0]
    """
    rows, per_row, shapes = _shaped_rows(events, EventKind.OP, EventKind.KERNEL)
    if not len(rows):
        return Table("op_shape_statistic", OP_SHAPE_STATISTIC_COLUMNS, {c: [] for c in OP_SHAPE_STATISTIC_COLUMNS})
    typ, kind, dev = events["type"][rows], events["kind"][rows], events["device"][rows]
    dur = events["dur"][rows].astype(np.float64)
    g = group_by(typ, kind, dev, per_row)
    total, count = g.sum(dur), g.count
    of_type = group_by(g.keys[:, 0], g.keys[:, 1], g.keys[:, 2])
    type_total = of_type.sum(total)[of_type.inverse]
    order = np.argsort(-total, kind="stable")
    keys, total, count, type_total = g.keys[order], total[order], count[order], type_total[order]
    mn, mx = g.min(dur)[order], g.max(dur)[order]
    pool = np.asarray(events.strings, dtype=object)
    is_kernel = keys[:, 1] == _KERNEL
    return Table("op_shape_statistic", OP_SHAPE_STATISTIC_COLUMNS, {
        "Device_id": [str(d) if k else "host" for d, k in zip(keys[:, 2].tolist(), is_kernel.tolist())],
        "OP Type": pool[keys[:, 0]].tolist(),
        "Input Shapes": [shapes[c] for c in keys[:, 3].tolist()],
        "Core Type": ["AI_CORE" if k else "HOST_CPU" for k in is_kernel.tolist()],
        "Count": count.tolist(),
        "Total Time(us)": np.round(total / 1e3, 3), "Min Time(us)": np.round(mn / 1e3, 3),
        "Avg Time(us)": np.round(total / count / 1e3, 3), "Max Time(us)": np.round(mx / 1e3, 3),
        "Type Share(%)": np.round(100.0 * total / np.where(type_total > 0, type_total, 1.0), 3)})


ANALYZERS = {
    "step_trace_time": step_trace,
    "op_statistic": op_statistic,
    "api_statistic": api_statistic,
    "kernel_details": kernel_details,
    "range_statistic": range_statistic,
    "host_usage": host_usage,
    "operator_details": operator_details,
    "op_shape_statistic": op_shape_statistic,
    "operator_memory": memory.operator_memory,
    "memory_record": memory.memory_record,
    "npu_module_mem": memory.npu_module_mem,
}

