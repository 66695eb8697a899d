"""Recording communication from user code (a socket or gloo all-reduce, a
custom collective library) as COMM events that cluster analysis, the
communication matrix and msprof-analyze understand (see :mod:`npuprof.analysis.rank_communication`
for the convention).

Costs one clock read and one append when a profiler records; nothing
otherwise.

Example::

    from npuprof.cluster.record_communication import comm_op, record_link

    with comm_op("allreduce_grads", "AllReduce", group="dp", size=buf.nbytes) as op:
        t0 = time.perf_counter_ns(); sock.sendall(buf); t1 = time.perf_counter_ns()
        record_link(t0, t1, src_rank=rank, dst_rank=peer, size=buf.nbytes, transport="TCP", group="dp",
                    op_type="AllReduce")
        op.wait_ns = waited
"""
from __future__ import annotations

import json
import time
from typing import Any, Optional

from ..events import EventKind
from ..recorder import active_recorder

_COMM = int(EventKind.COMM)


def record_link(t0_ns: int, t1_ns: int, src_rank: int, dst_rank: int, size: int, transport: str,
                group: str = "world", op_type: str = "", name: str = "transfer") -> None:
    """Record one transfer ``src_rank -> dst_rank`` of ``size`` bytes timed with
    ``time.perf_counter_ns()`` readings ``t0_ns``..``t1_ns``."""
    rec = active_recorder()
    if rec is None:
        return
    rec.add(_COMM, name, t0_ns, t1_ns, op_type, json.dumps(
        {"group": group, "src_rank": int(src_rank), "dst_rank": int(dst_rank), "size": int(size),
         "transport": transport}))


class comm_op:
    """Time a communication operator; set ``wait_ns`` inside to report time
    spent waiting for peers."""

    __slots__ = ("name", "op_type", "group", "size", "wait_ns", "_t0")

    def __init__(self, name: str, op_type: str, group: str = "world", size: Optional[int] = None) -> None:
        self.name = name
        self.op_type = op_type
        self.group = group
        self.size = size
        self.wait_ns = 0

    def __enter__(self) -> "comm_op":
        self._t0 = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: Any) -> bool:
        t1 = time.perf_counter_ns()
        rec = active_recorder()
        if rec is not None:
            args: dict = {"group": self.group, "wait_ns": int(self.wait_ns)}
            if self.size is not None:
                args["size"] = int(self.size)
            rec.add(_COMM, self.name, self._t0, t1, self.op_type, json.dumps(args))
        return False
