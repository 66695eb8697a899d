"""The operators family: statistics per operator type (``op_statistic``), one row per device
operator launch (``kernel_details``), and input shapes (``operator_details``,
``op_shape_statistic``).

Every number comes from the events; times in the tables are microseconds (float,
3 decimals in files), as the Ascend tools. Per-event tables (kernel_details,
operator_details) stay lazy: rows are produced block by block when written.

Example::

    >>> ev = EventTable.from_records(ts=[0, 10], dur=[4000, 2000], kind=[EventKind.KERNEL] * 2,
    ...     name=["MatMul-op0", "MatMul-op1"], type=["MatMul"] * 2, device=[0, 0],
    ...     args=['{"Accelerator Core": "AI_CORE"}'] * 2)
    >>> op_statistic(ev).rows()
    [['0', 'MatMul', 'AI_CORE', 2, 6.0, 2.0, 3.0, 4.0, 100.0]]
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..events import KERNEL_TENSOR_COLUMNS, EventKind, EventTable, parse_args_text, take_rows
from .analyzer import Analyzer, AnalyzerNeeds
from .grouping import duration_stats, group_by, small_unique
from .intervals import BLOCK
from .rows import (CORE_TYPE_KEYS, args_of_rows, comm_op_mask, computing_mask, core_types, first_of, is_sorted,
                   kind_mask, mask_rows, text_codes)
from .table import EventRowsTable, Table

OP_STATISTIC_COLUMNS = ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)",
                        "Avg Time(us)", "Max Time(us)", "Ratio(%)"]
KERNEL_DETAILS_COLUMNS = ["Step ID", "Device_id", "Model ID", "Task ID", "Stream ID", "Name", "Type",
                          "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim"]
# args keys of communication events that are npuprof's convention, not the tool's columns (see analysis.rank_communication)
_NOT_COLUMNS = frozenset({"group", "group_name", "src_rank", "dst_rank", "size", "transport", "wait_ns", "task_type",
                          "device_task_type", "connection_ids",
                          "link_type", "transport_type", "notify_id", "alg_type", "count", "data_type",
                          "connection_id"})
OPERATOR_DETAILS_COLUMNS = ["Name", "Input Shapes"]   # MindSpore's operator_details.csv
OP_SHAPE_STATISTIC_COLUMNS = ["Device_id", "OP Type", "Input Shapes", "Core Type", "Count", "Total Time(us)",
                              "Min Time(us)", "Avg Time(us)", "Max Time(us)", "Type Share(%)"]
FEW_QUEUES = 16
_OP, _KERNEL = int(EventKind.OP), int(EventKind.KERNEL)


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
    uniq, count, total, mn, mx, _ = duration_stats(mask, events, ("type", core_col, "kind", "device"))
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



def _wait_times(ts: np.ndarray, end: np.ndarray, queue: np.ndarray) -> np.ndarray:
    """Gap since the previous event (in start order) on the same queue, >= 0; 0 for the first."""
    n = len(ts)
    wait = np.zeros(n, dtype=np.int64)
    if n < 2:
        return wait
    if not is_sorted(ts):
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
    ``parsed``: the rows' :func:`args_of_rows`.
    """
    texts = {col: text_codes(parsed, keys, "N/A") for col, keys in _COLUMN_KEYS.items()}
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
        texts[k] = text_codes(parsed, (k,), "N/A")
    wait_of = np.full(len(parsed), -1, dtype=np.int64)
    for i, obj in enumerate(parsed):
        text = first_of(obj, ("Wait Time(us)",))
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
    rows = mask_rows(device_ops if device_ops.any() else computing_mask(events))
    if not len(rows):
        return Table("kernel_details", KERNEL_DETAILS_COLUMNS, {c: [] for c in KERNEL_DETAILS_COLUMNS})
    all_ts, all_dur, all_stream, all_tid = events["ts"], events["dur"], events["stream"], events["tid"]

    def queue_of(lo: int, hi: int) -> np.ndarray:
        # the device queue: the stream, else the host thread
        r = rows[lo:hi]
        st = all_stream[r]
        return np.where(st >= 0, st.astype(np.int64), all_tid[r])

    if is_sorted(all_ts):
        wait = _wait_times_sorted(all_ts, all_dur, rows, queue_of)
    else:
        ts = all_ts[rows]
        order = np.argsort(ts, kind="stable")
        rows, ts = rows[order], ts[order]
        wait = _wait_times(ts, ts + all_dur[rows], queue_of(0, len(rows)))
    parsed_args = args_of_rows(events, rows)   # each distinct args text parsed once for both uses
    texts, wait_of = _kernel_texts(*parsed_args)
    if (wait_of >= 0).any():    # the data's own Wait Time where it has one
        read = wait_of[texts.which]
        np.copyto(wait, read, where=read >= 0)
    return KernelDetailsTable(events, rows, wait, texts, core_types(events, rows, parsed_args))



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
    rows = np.flatnonzero(kind_mask(events["kind"], kinds) & (args != 0))
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
    if len(rows) and not is_sorted(events["ts"]):
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


OP_STATISTIC = Analyzer(
    "op_statistic", tuple(OP_STATISTIC_COLUMNS), op_statistic,
    AnalyzerNeeds(events=(EventKind.KERNEL, EventKind.OP), columns=("ts", "dur", "kind", "type", "device", "args")),
    summary=True, csv="always", title="per operator type and core type: count and time")
KERNEL_DETAILS = Analyzer(
    "kernel_details", tuple(KERNEL_DETAILS_COLUMNS), kernel_details,
    AnalyzerNeeds(events=(EventKind.KERNEL, EventKind.COMM, EventKind.OP),
                  columns=("ts", "dur", "kind", "name", "type", "device", "stream", "tid", "step", "args")),
    csv="always", title="one row per device operator launch (host operators without device data)")
OPERATOR_DETAILS = Analyzer(
    "operator_details", tuple(OPERATOR_DETAILS_COLUMNS), operator_details,
    AnalyzerNeeds(events=(EventKind.OP,), columns=("ts", "kind", "name", "args"), collected=("record_shapes=True",)),
    title="input shapes of each operator launch")
OP_SHAPE_STATISTIC = Analyzer(
    "op_shape_statistic", tuple(OP_SHAPE_STATISTIC_COLUMNS), op_shape_statistic,
    AnalyzerNeeds(events=(EventKind.OP, EventKind.KERNEL), columns=("ts", "dur", "kind", "type", "device", "args"),
                  collected=("record_shapes=True", "Level1")),
    summary=True, title="per operator type and input shapes: count and time")
