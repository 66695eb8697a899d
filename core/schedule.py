"""Step schedules and the transition table that drives collection.

:func:`schedule` is a pure function factory: the callable it returns maps a
step number to a :class:`~npuprof.ProfilerAction`, exactly as
``torch.profiler.schedule`` / ``mindspore.profiler.schedule`` do. Bad
arguments raise instead of being reset.

Example::

    >>> s = schedule(wait=1, warmup=1, active=2, repeat=1)
    >>> [s(i).name for i in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
"""
from __future__ import annotations

from enum import Enum
from typing import Callable, Optional

from .enums import ProfilerAction
from .errors import ProfilerConfigError
from .validate import check_int


class Schedule:
    """Callable ``step -> ProfilerAction``; build it with :func:`schedule`."""

    __slots__ = ("wait", "warmup", "active", "repeat", "skip_first")

    def __init__(self, wait: int, active: int, warmup: int = 0, repeat: int = 0, skip_first: int = 0) -> None:
        self.wait = check_int("wait", wait, minimum=0)
        self.active = check_int("active", active, minimum=1)
        self.warmup = check_int("warmup", warmup, minimum=0)
        self.repeat = check_int("repeat", repeat, minimum=0)
        self.skip_first = check_int("skip_first", skip_first, minimum=0)

    def __call__(self, step: int) -> ProfilerAction:
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ProfilerConfigError("step", step, "an integer >= 0")
        if step < self.skip_first:
            return ProfilerAction.NONE
        step -= self.skip_first
        cycle = self.wait + self.warmup + self.active
        if self.repeat > 0 and step // cycle >= self.repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < self.wait:
            return ProfilerAction.NONE
        if pos < self.wait + self.warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    def to_dict(self) -> dict[str, int]:
        return {"wait": self.wait, "warmup": self.warmup, "active": self.active,
                "repeat": self.repeat, "skip_first": self.skip_first}

    def __repr__(self) -> str:
        return "schedule(" + ", ".join(f"{k}={v}" for k, v in self.to_dict().items()) + ")"


def schedule(wait: int, active: int, warmup: int = 0, repeat: int = 0, skip_first: int = 0) -> Schedule:
    """Return a schedule: ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` warm-up and ``active`` recorded steps, ``repeat`` times (0 =
    until the profiler stops). The last active step of each cycle is
    RECORD_AND_SAVE: the window is saved and ``on_trace_ready`` is called.

    Example::

        with Profiler(schedule=schedule(wait=1, warmup=1, active=3, repeat=2)) as prof:
            for batch in data:
                train_step(batch)
                prof.step()
    """
    return Schedule(wait=wait, active=active, warmup=warmup, repeat=repeat, skip_first=skip_first)


def always_record(step: int) -> ProfilerAction:
    """The schedule used when none is given: one window from start to stop."""
    return ProfilerAction.RECORD


class Op(Enum):
    """Collector operations the transition table asks for, in order."""

    PREPARE = "prepare"        # open a new window (run directory), warm-up starts
    START = "start"            # begin recording
    STOP = "stop"              # stop recording
    SAVE = "save"              # finish the window: analyse hooks + on_trace_ready
    DISCARD = "discard"        # drop the window's data (with a log line)
    WARN_INCOMPLETE = "warn"   # schedule left a window mid-way


A = ProfilerAction
_ALL_RECORD = (A.RECORD, A.RECORD_AND_SAVE)

# (previous action, current action) -> ops. None as current = the profiler is
# leaving (stop() / context exit). Differences from torch/mindspore: leaving in
# RECORD saves a *partial* window; leaving in WARMUP discards it and says so.
TRANSITIONS: dict[tuple[ProfilerAction, Optional[ProfilerAction]], tuple[Op, ...]] = {}


def _build() -> None:
    t = TRANSITIONS
    t[(A.NONE, A.NONE)] = ()
    t[(A.NONE, A.WARMUP)] = (Op.PREPARE,)
    for rec in _ALL_RECORD:
        t[(A.NONE, rec)] = (Op.PREPARE, Op.START)
        t[(A.WARMUP, rec)] = (Op.START,)
        t[(A.RECORD, rec)] = ()
        t[(A.RECORD_AND_SAVE, rec)] = (Op.STOP, Op.SAVE, Op.PREPARE, Op.START)
    t[(A.WARMUP, A.NONE)] = (Op.WARN_INCOMPLETE, Op.DISCARD)
    t[(A.WARMUP, A.WARMUP)] = ()
    t[(A.RECORD, A.NONE)] = (Op.WARN_INCOMPLETE, Op.STOP, Op.SAVE)
    t[(A.RECORD, A.WARMUP)] = (Op.WARN_INCOMPLETE, Op.STOP, Op.SAVE, Op.PREPARE)
    t[(A.RECORD_AND_SAVE, A.NONE)] = (Op.STOP, Op.SAVE)
    t[(A.RECORD_AND_SAVE, A.WARMUP)] = (Op.STOP, Op.SAVE, Op.PREPARE)
    # leaving the profiler
    t[(A.NONE, None)] = ()
    t[(A.WARMUP, None)] = (Op.DISCARD,)
    t[(A.RECORD, None)] = (Op.STOP, Op.SAVE)
    t[(A.RECORD_AND_SAVE, None)] = (Op.STOP, Op.SAVE)


_build()

ScheduleFn = Callable[[int], ProfilerAction]
