"""Which rows of the event table are what: rows of a kind, compute events, communication
operators and their tasks, each row's core type, and the args objects of a set of rows.

The analyzers of every family (:mod:`.step_breakdown`, :mod:`.operators`,
:mod:`.host_statistics`) and the exporters select their rows here, through row
masks and index arrays (no copy of the whole table per event kind).

Example::

    >>> ev = EventTable.from_records(ts=[0, 5], dur=[10, 2], kind=[EventKind.OP, EventKind.KERNEL])
    >>> compute_rows(ev).tolist(), rows_of(ev, EventKind.OP).tolist()
    ([1], [0])
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..events import MEMORY_ACTIVITY_TYPES, EventKind, EventTable
from .intervals import BLOCK

# where a kernel's core type is (kernel_details "Accelerator Core"; CANN's task type in traces and op_summary)
CORE_TYPE_KEYS = ("Accelerator Core", "Task Type", "task_type")
_OP, _COMM = int(EventKind.OP), int(EventKind.COMM)


def rows_of(events: EventTable, *kinds: EventKind) -> np.ndarray:
    """Indices of the rows of the given kinds."""
    kind = events["kind"]
    if len(kinds) == 1:
        return np.flatnonzero(kind == np.uint8(kinds[0]))
    return np.flatnonzero(kind_mask(kind, kinds))


def kind_mask(kind: np.ndarray, kinds: Any) -> np.ndarray:
    """Rows whose uint8 ``kind`` is one of ``kinds``: one lookup per row (``np.isin`` makes a pass per kind)."""
    lut = np.zeros(256, dtype=bool)
    lut[[int(k) for k in kinds]] = True
    return lut[kind]


def is_sorted(a: np.ndarray) -> bool:
    return len(a) < 2 or bool((a[1:] >= a[:-1]).all())


def args_of_rows(events: EventTable, rows: np.ndarray) -> tuple[np.ndarray, list[dict]]:
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


def first_of(obj: dict, keys: tuple) -> Optional[str]:
    """The first of ``keys`` that ``obj`` has with a usable value, as text."""
    for k in keys:
        v = obj.get(k)
        if v is not None and v != "" and not isinstance(v, (dict, list)):
            return str(v)
    return None


def text_codes(parsed: list[dict], keys: tuple, default: str) -> tuple[np.ndarray, list]:
    """Per parsed args object, the text of the first of ``keys`` (``default`` when none), as
    codes into a pool; ``codes[which]`` gives them per row (see :func:`args_of_rows`)."""
    pool, index = [default], {default: 0}
    per_args = np.zeros(len(parsed), dtype=np.int32)
    for i, obj in enumerate(parsed):
        text = first_of(obj, keys)
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

    ``parsed_args``: the rows' ``args_of_rows`` when the caller has them already.
    """
    which, parsed = parsed_args if parsed_args is not None else args_of_rows(events, rows)
    per_args, pool = text_codes(parsed, CORE_TYPE_KEYS, "N/A")
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
    ``src_rank``/``dst_rank`` transfer in args, see :mod:`npuprof.analysis.rank_communication`),
    not operators: a collective's time is its operator's span, counted once."""
    mask = np.zeros(len(events), dtype=bool)
    rows = rows_of(events, EventKind.COMM) if len(events) else np.zeros(0, np.int64)
    if not len(rows):
        return mask
    which, parsed = args_of_rows(events, rows)
    is_task = np.array([("task_type" in p) or ("src_rank" in p and "dst_rank" in p) for p in parsed], dtype=bool)
    mask[rows] = is_task[which]
    return mask


def comm_op_mask(events: EventTable) -> np.ndarray:
    """Rows that are communication operators (COMM events that are not tasks)."""
    if not len(events):
        return np.zeros(0, bool)
    return (events["kind"] == np.uint8(EventKind.COMM)) & ~comm_task_mask(events)



def compute_rows(events: EventTable) -> np.ndarray:
    """Row indices of compute events: device kernels when there are any, else host operators."""
    if not len(events):
        return np.zeros(0, np.int64)
    rows = rows_of(events, EventKind.KERNEL)
    return rows if len(rows) else rows_of(events, EventKind.OP)


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



def mask_rows(mask: np.ndarray) -> np.ndarray:
    """``flatnonzero(mask)`` as int32 when it fits, built block by block (half the memory)."""
    dtype = np.int32 if len(mask) < 2**31 else np.int64
    parts = [np.flatnonzero(mask[lo:lo + BLOCK]).astype(dtype) + dtype(lo) for lo in range(0, len(mask), BLOCK)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)
