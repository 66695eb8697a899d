"""An :class:`~npuprof.events.EventTable` built row by row (:class:`EventRows`), args as their JSON text
(:func:`args_text`): how the readers of kernel_details.csv, the memory CSVs and CANN timelines make their
tables (the Kineto reader writes its args texts with the same function).

Example::

    >>> cols = EventRows("mindspore")
    >>> cols.add(0, 10, EventKind.KERNEL, "MatMul", args=args_text({"Block Dim": "8"}))
    >>> len(cols.table())
    1
"""
from __future__ import annotations

import orjson

from npuprof.events import EventKind, EventTable


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
