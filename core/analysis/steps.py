"""The training steps of a run: the ``ProfilerStep#N`` ranges, as every analyzer counts them.

Example::

    >>> ev = EventTable.from_records(ts=[0, 100], dur=[100, 100], kind=int(EventKind.STEP),
    ...                              name=["ProfilerStep#3", "ProfilerStep#4"])
    >>> [a.tolist() for a in step_spans(ev)]
    [[3, 4], [0, 100], [100, 200]]
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..errors import ProfilerConfigError
from ..events import EventKind, EventTable

STEP_RE = re.compile(r"ProfilerStep\s*#\s*(\d+)")


def step_spans(events: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step numbers, starts, ends) of the ProfilerStep ranges, sorted by start.

    With no step ranges the whole run is one step: numbered as the data numbers its events when they
    all carry one step (kernel_details' ``Step Id`` of a run whose trace is missing), else 0.
    """
    idx = np.flatnonzero(events["kind"] == np.uint8(EventKind.STEP)) if len(events) else np.zeros(0, np.int64)
    if len(idx):
        codes = events["name"][idx]
        uniq, inv = np.unique(codes, return_inverse=True)
        num_of = np.array([int(m.group(1)) if (m := STEP_RE.search(events.strings[c])) else -1
                           for c in uniq.tolist()], dtype=np.int32)
        own = events["step"][idx]          # a reader that knows the number (CANN's "Iteration N") sets it
        numbers = np.where(own >= 0, own, num_of[inv.reshape(-1)]).astype(np.int32)
        ts = events["ts"][idx]
        ends = ts + events["dur"][idx]
        order = np.argsort(ts, kind="stable")
        return numbers[order], ts[order], ends[order]
    if not len(events):
        return np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    ts = events["ts"]
    start = int(ts.min())
    end = int((ts + events["dur"]).max())
    own = np.unique(events["step"])
    own = own[own >= 0]
    number = int(own[0]) if len(own) == 1 else 0
    return np.full(1, number, np.int32), np.array([start]), np.array([max(end, start + 1)])


def select_steps(events: EventTable, steps: Sequence[int]) -> EventTable:
    """The events that start within the ``ProfilerStep`` ranges numbered ``steps`` (consecutive).

    Raises :class:`~npuprof.ProfilerConfigError` naming the run's steps when one is not in the run.

    Example::

        >>> ev = EventTable.from_records(ts=[0, 100, 10, 150], dur=[100, 100, 5, 5], kind=[int(EventKind.STEP)] * 2
        ...                              + [int(EventKind.OP)] * 2,
        ...                              name=["ProfilerStep#3", "ProfilerStep#4", "MatMul", "Add"])
        >>> select_steps(ev, [4]).column_strings("name")
        ['ProfilerStep#4', 'Add']
    """
    numbers, starts, ends = step_spans(events)
    wanted = np.isin(numbers, np.asarray(list(steps), dtype=np.int64))
    missing = sorted(set(int(s) for s in steps) - set(numbers[wanted].tolist()))
    if missing:
        have = sorted(set(numbers.tolist()))
        raise ProfilerConfigError("step_list", list(steps),
                                  f"steps of this run ({', '.join(map(str, have)) or 'none'})")
    lo, hi = int(starts[wanted].min()), int(ends[wanted].max())
    ts = events["ts"]
    return events.select(np.flatnonzero((ts >= lo) & (ts < hi)))
