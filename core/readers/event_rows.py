"""An :class:`~npuprof.events.EventTable` built row by row (:class:`EventRows`), args as their JSON text
(:func:`args_text`): how the readers of kernel_details.csv and the memory CSVs make their tables (the Kineto
reader writes its args texts with the same function); or from columns of codes laid out as if built row by
row (:func:`table_of_codes`: the CANN timeline reader).

Example::

    >>> cols = EventRows("mindspore")
    >>> cols.add(0, 10, EventKind.KERNEL, "MatMul", args=args_text({"Block Dim": "8"}))
    >>> len(cols.table())
    1
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import orjson

from npuprof.events import COLUMN_DEFAULTS, NUMERIC_COLUMNS, EventKind, EventTable


class EventRows:
    """Column lists for one EventTable, filled row by row while reading text formats (example: the module's)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.ts: list[int] = []
        self.dur: list[int] = []
        self.kind: list[int] = []
        self.pid: list[int] = []
        self.tid: list[int] = []
        self.device: list[int] = []
        self.stream: list[int] = []
        self.value: list[float] = []
        self.step: list[int] = []
        self.name: list[str] = []
        self.type: list[str] = []
        self.args: list[str] = []
        self.corr: list[int] = []

    def add(self, ts: int, dur: int, kind: EventKind, name: str, type_: str = "", pid: int = 0, tid: int = 0,
            device: int = -1, stream: int = -1, value: float = 0.0, step: int = -1, args: str = "",
            corr: int = -1) -> None:
        self.ts.append(ts)
        self.dur.append(dur)
        self.kind.append(int(kind))
        self.pid.append(pid)
        self.tid.append(tid)
        self.device.append(device)
        self.stream.append(stream)
        self.value.append(value)
        self.step.append(step)
        self.name.append(name)
        self.type.append(type_)
        self.args.append(args)
        self.corr.append(corr)

    def table(self) -> EventTable:
        if not self.ts:
            return EventTable.empty()
        return EventTable.from_records(ts=self.ts, dur=self.dur, kind=self.kind, pid=self.pid, tid=self.tid,
                                       device=self.device, stream=self.stream, value=self.value, step=self.step,
                                       name=self.name, type=self.type, args=self.args, source=self.source,
                                       corr=self.corr)


def args_text(args: dict) -> str:
    """``args`` as the event table's args text: its JSON (values JSON cannot hold as their ``str``), ``""``
    when empty.

    Example::

        >>> args_text({"group": "hccl_world"}), args_text({})
        ('{"group":"hccl_world"}', '')
    """
    return orjson.dumps(args, default=str).decode() if args else ""


def table_of_codes(cols: dict, strings: Sequence[str], source: str) -> EventTable:
    """The table :meth:`EventRows.table` gives for the same rows, from columns: ``cols`` holds the numeric
    columns and ``name``/``type``/``args`` as codes into ``strings`` (any order, unused texts allowed). The
    string pool is laid out as :meth:`EventTable.from_records` lays it out (``""``, then each text in order
    of first appearance in the name, type, source and args columns), so everything downstream sees the same
    codes.

    Example::

        >>> t = table_of_codes({"ts": np.array([5]), "kind": np.array([int(EventKind.KERNEL)]),
        ...                     "name": np.array([2]), "type": np.array([1]), "args": np.array([0])},
        ...                    ["", "MatMul", "MatMul-op1"], "cann_timeline")
        >>> t.column_strings("name"), t.strings
        (['MatMul-op1'], ['', 'MatMul-op1', 'MatMul', 'cann_timeline'])
    """
    n = len(cols["ts"])
    if not n:
        return EventTable.empty()
    strings = list(strings)
    if source in strings:
        source_code = strings.index(source)
    else:
        source_code = len(strings)
        strings.append(source)
    empty_code = strings.index("") if "" in strings else len(strings)
    if empty_code == len(strings):
        strings.append("")
    seq = np.concatenate([np.asarray(cols["name"], np.int64), np.asarray(cols["type"], np.int64),
                          np.array([source_code], dtype=np.int64), np.asarray(cols["args"], np.int64)])
    first = np.full(len(strings), len(seq), dtype=np.int64)
    np.minimum.at(first, seq, np.arange(len(seq), dtype=np.int64))
    used = np.flatnonzero(first < len(seq))
    order = used[np.argsort(first[used], kind="stable")]
    order = np.concatenate([[empty_code], order[order != empty_code]])
    remap = np.zeros(len(strings), dtype=np.int64)
    remap[order] = np.arange(len(order))
    numeric = {k: cols[k] if k in cols else np.full(n, COLUMN_DEFAULTS.get(k, 0)) for k in NUMERIC_COLUMNS}
    codes = {k: remap[cols[k]] for k in ("name", "type", "args")}
    codes["source"] = int(remap[source_code])
    return EventTable.from_codes(numeric, codes, [strings[k] for k in order.tolist()])
