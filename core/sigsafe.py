"""Locks that a signal handler must not re-enter.

Invariant: a thread holding a :class:`SignalSafeLock` is marked (a thread-local depth counter) for as
long as it holds it, so npuprof's SIGTERM/SIGINT handler, which Python runs on top of whatever the main
thread was doing, can see that the interrupted code holds one of npuprof's non-reentrant locks and
postpone itself instead of calling into that code again and deadlocking on the lock. Every
non-reentrant lock that a profiler operation may take is one of these (the recorder's registration and
flush locks, the raw writer's lock, the plugin host's locks); no code is recognised by its name.

Example::

    _lock = SignalSafeLock()
    with _lock:
        ...                      # held_here() is True in this thread until the block ends
"""
from __future__ import annotations

import threading
from typing import Any

_state = threading.local()


class SignalSafeLock:
    """A ``threading.Lock`` that marks its holder thread (see the module doc)."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        # Marked before the lock is taken and unmarked after it is released: a signal arriving
        # between the two steps (Python runs handlers between any two bytecodes of the main
        # thread, and inside a blocking acquire) must find the thread marked while it holds,
        # or waits for, the lock. Marked one step too long is harmless: the handler postpones.
        _state.depth = getattr(_state, "depth", 0) + 1
        got = False
        try:
            got = self._lock.acquire(blocking, timeout)
        finally:
            if not got:
                _state.depth -= 1
        return got

    def release(self) -> None:
        self._lock.release()
        _state.depth = getattr(_state, "depth", 1) - 1

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> "SignalSafeLock":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def held_here() -> bool:
    """Whether the calling thread holds any :class:`SignalSafeLock`."""
    return getattr(_state, "depth", 0) > 0


def reset_after_fork() -> None:
    """A forked child starts with no lock held (its copy of the parent's counter is meaningless)."""
    _state.depth = 0
