"""The Profiler's lifecycle: its states, the events that move it, and the transition table.

:data:`LIFECYCLE` maps ``(state, event)`` to the next state for every pair
(:mod:`npuprof.schedule`'s ``TRANSITIONS`` does the same for the schedule's
actions inside a started profiler). A failure is kept until the profiler is
stopped, and a profiler stopped after a failure opens no new window when it is
started again: whatever failed (a full disk, a collector) is not tried again
on the training's time.

Example::

    >>> LIFECYCLE[(State.RUNNING, Event.FAIL)], LIFECYCLE[(State.FAILED, Event.HALT)]
    (<State.FAILED: 'failed'>, <State.HALTED: 'halted'>)
    >>> LIFECYCLE[(State.HALTED, Event.STOP)], LIFECYCLE[(State.STOPPED_AFTER_FAILURE, Event.START)]
    (<State.STOPPED_AFTER_FAILURE: 'stopped after failure'>, <State.HALTED: 'halted'>)
"""
from __future__ import annotations

from enum import Enum


class State(Enum):
    """Where a Profiler is."""

    CREATED = "created"                # constructed, start() not called yet (start_profile=False)
    RUNNING = "running"                # started: windows open and close as the schedule says
    FAILED = "failed"                  # started; collection failed (writing, the schedule, a collector): the open
    #                                    window's collectors are stopped at the next step(), no window opens
    HALTED = "halted"                  # started, after a failure: collectors stopped; the open window is saved at
    #                                    its end with what reached the disk, no window opens
    STOPPED = "stopped"                # stop() ran; start() begins again
    STOPPED_AFTER_FAILURE = "stopped after failure"    # stop() ran after a failure; start() opens no window


class Event(Enum):
    """What moves a Profiler from one state to the next."""

    START = "start"      # start() (the constructor's with start_profile)
    FAIL = "fail"        # a collection failure, reported from any thread
    HALT = "halt"        # step() stopped the collectors of the failed window
    STOP = "stop"        # stop() ran


STARTED = frozenset({State.RUNNING, State.FAILED, State.HALTED})
FAILED = frozenset({State.FAILED, State.HALTED, State.STOPPED_AFTER_FAILURE})

S, E = State, Event
LIFECYCLE: dict[tuple[State, Event], State] = {}


def _build() -> None:
    t = LIFECYCLE
    for state in State:            # by default an event changes nothing (START while started: ignored)
        for event in Event:
            t[(state, event)] = state
    t[(S.CREATED, E.START)] = S.RUNNING
    t[(S.STOPPED, E.START)] = S.RUNNING
    t[(S.STOPPED_AFTER_FAILURE, E.START)] = S.HALTED
    t[(S.RUNNING, E.FAIL)] = S.FAILED
    t[(S.FAILED, E.HALT)] = S.HALTED
    t[(S.RUNNING, E.STOP)] = S.STOPPED
    t[(S.FAILED, E.STOP)] = S.STOPPED_AFTER_FAILURE
    t[(S.HALTED, E.STOP)] = S.STOPPED_AFTER_FAILURE


_build()
