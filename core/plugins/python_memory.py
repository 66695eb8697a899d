"""Built-in plugin: Python allocations by the code that made them (``Profiler(python_memory=True)``).

With ``tracemalloc`` (started for the window unless the program already traces; stopped after only if
npuprof started it), at the window's start, at every ``step()`` and at its end:

* ``Python Total Allocated(MB)``: the bytes Python's allocator holds for traced blocks, a memory series
  (COUNTER, type ``memory``, component ``Python``: a ``memory_record.csv`` row each);
* when that total reaches a new high, a snapshot of the live blocks is kept (replacing the previous);
  at the end its largest sources (file:line of the allocation, ``TOP_SOURCES``) become allocation
  events (MEMORY, type ``operator_memory``, name ``file:line``, value = bytes alive, ``count`` blocks),
  placed at the snapshot's instant with that total: so :func:`npuprof.analysis.memory.memory_summary`
  names the lines holding most at the peak (a leak is its top line).

Resolution is the step: a peak between two steps is seen at the next step's sample. The cost is
tracemalloc's (every allocation is traced, each snapshot walks all live blocks): ``make bench``
measures it. Example::

    with Profiler(python_memory=True) as prof:
        for batch in data:
            train_step(batch); prof.step()
    print(memory_summary(prof.analyse()[0].events).live[0].name)    # e.g. "train.py:42"
"""
from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..errors import BackendUnavailable
from ..events import EventKind, EventTable
from ..hookspecs import hookimpl
from ..session import CollectionSession

if TYPE_CHECKING:
    from ..config import ProfilerConfig

FRAMES = 1            # the allocating line; deeper tracebacks cost more at every allocation
TOP_SOURCES = 50
SERIES = "Python Total Allocated(MB)"
_MB = 1024.0 * 1024.0
_CPU = {"Component": "Python", "Device Type": "CPU"}
# npuprof's own buffers are not the program's memory: left out of the sources
_OWN_CODE = [tracemalloc.Filter(False, tracemalloc.__file__),
             tracemalloc.Filter(False, str(Path(__file__).resolve().parents[1] / "*"))]


class PythonMemoryTracer:
    """One window's tracemalloc samples (see the module doc)."""

    def __init__(self) -> None:
        self.started_here = False
        self.times: list[int] = []
        self.totals: list[int] = []
        self.best: Optional[tuple[int, int, tracemalloc.Snapshot]] = None    # (time, total, snapshot)

    def start(self) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start(FRAMES)
            self.started_here = True
        self.sample()

    def sample(self) -> None:
        now = time.time_ns()
        total = tracemalloc.get_traced_memory()[0]
        self.times.append(now)
        self.totals.append(total)
        if self.best is None or total > self.best[1]:
            self.best = (now, total, tracemalloc.take_snapshot())

    def stop(self) -> EventTable:
        """The last sample, tracemalloc stopped if npuprof started it, the window's events."""
        try:
            self.sample()
        finally:
            if self.started_here:
                tracemalloc.stop()
        series = EventTable.from_records(ts=self.times, kind=int(EventKind.COUNTER), name=SERIES, type="memory",
                                         value=[t / _MB for t in self.totals], args=json.dumps(_CPU),
                                         source="python_memory")
        assert self.best is not None, "sample() keeps the first sample's snapshot"
        at, total, snapshot = self.best
        stats = snapshot.filter_traces(_OWN_CODE).statistics("lineno")
        top = stats[:TOP_SOURCES]
        args = [json.dumps({**_CPU, "Allocation Total Allocated(MB)": str(total / _MB), "count": s.count,
                            "allocator": "tracemalloc"}) for s in top]
        names = [f"{s.traceback[0].filename}:{s.traceback[0].lineno}" for s in top]
        allocations = EventTable.from_records(ts=[at] * len(top), kind=int(EventKind.MEMORY), name=names,
                                              type="operator_memory", value=[float(s.size) for s in top],
                                              args=args, source="python_memory")
        return EventTable.concat([series, allocations])


_tracers: dict[int, PythonMemoryTracer] = {}      # id(session) -> its window's tracer


@hookimpl
def npuprof_configure(config: "ProfilerConfig") -> None:
    if not config.python_memory:
        raise BackendUnavailable("python_memory is off")     # inactive: not even a step hook to call


@hookimpl
def npuprof_start(session: CollectionSession) -> None:
    tracer = _tracers[id(session)] = PythonMemoryTracer()
    tracer.start()


@hookimpl
def npuprof_step(session: CollectionSession, step_num: int) -> None:
    tracer = _tracers.get(id(session))
    if tracer is not None:
        tracer.sample()


@hookimpl
def npuprof_stop(session: CollectionSession) -> None:
    tracer = _tracers.pop(id(session), None)
    if tracer is not None:
        session.record_events(tracer.stop())
