"""Stopping the running profiler when the process ends: at interpreter exit and on SIGTERM/SIGINT.

Invariants:

* a window being recorded when the process ends is stopped and saved: at interpreter exit (``atexit``)
  and on SIGTERM (the handler stops the profiler, then chains to the user's handler or re-raises the
  default action with the right exit status); SIGINT only chains (KeyboardInterrupt reaches the user's
  ``with`` block, which stops the profiler);
* npuprof's handler never runs npuprof code on top of npuprof code of the same thread: a signal arriving
  inside a profiler operation is handled when the operation returns (the profiler holds it back:
  ``_defer_signal``), one arriving while the thread holds a :class:`~npuprof.sigsafe.SignalSafeLock` (a
  recording thread flushing its own events) is re-delivered a moment later, up to
  :data:`MAX_SIGNAL_DELAY_S`;
* handlers are installed only from the main thread, only over handlers installed from Python, and never
  twice.

Example::

    install_exit_handlers(prof, running=lambda: current_profiler)
"""
from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
import time
import weakref
from typing import Any, Callable, Optional, Protocol

from .sigsafe import held_here

log = logging.getLogger("npuprof")
# Signals whose handler npuprof wraps while a Profiler runs
WRAPPED_SIGNALS = ("SIGTERM", "SIGINT")
SIGNAL_RETRY_S = 0.02
MAX_SIGNAL_DELAY_S = 5.0
_postponed_since: dict = {}


class Stoppable(Protocol):
    """What the handlers need of a profiler."""

    _owner_pid: int

    @property
    def started(self) -> bool: ...

    def stop(self) -> None: ...

    def _defer_signal(self, signum: int, frame: Any, previous: Any) -> bool: ...

    def _in_operation_here(self) -> bool: ...


def register_atexit(prof: Stoppable) -> None:
    """Stop ``prof`` at interpreter exit if it still runs (held by a weak reference)."""
    atexit.register(_stop_at_exit, weakref.ref(prof))


def _stop_at_exit(ref: "weakref.ref[Any]") -> None:
    prof = ref()
    if prof is not None and prof.started and os.getpid() == prof._owner_pid:
        log.warning("npuprof: profiler still running at interpreter exit; stopping it and saving the window")
        try:
            prof.stop()
        except Exception as e:
            log.warning("npuprof: stopping at exit failed: %s", e)


def install_signal_handlers(running: Callable[[], Optional[Stoppable]]) -> None:
    """Wrap SIGTERM/SIGINT's Python handlers (main thread only; see the module doc)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in WRAPPED_SIGNALS:
        signum = getattr(signal, name)
        try:
            previous = signal.getsignal(signum)
            # Not installed from Python (None) or ignored: leave it alone.
            if previous is None or previous == signal.SIG_IGN or getattr(previous, "_npuprof", False):
                continue
            if signum == signal.SIGINT and previous is not signal.default_int_handler and not callable(previous):
                continue
            signal.signal(signum, make_signal_handler(previous, running))
        except (ValueError, OSError):
            pass


def _postpone(signum: int) -> bool:
    """Deliver ``signum`` again shortly (up to MAX_SIGNAL_DELAY_S); False once that is over."""
    first = _postponed_since.setdefault(signum, time.monotonic())
    if time.monotonic() - first > MAX_SIGNAL_DELAY_S:
        return False
    timer = threading.Timer(SIGNAL_RETRY_S, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()
    return True


def _in_weakref_callback(frame: Any) -> bool:
    """Whether ``frame`` runs a weak reference's callback (a dead thread leaving threading's WeakSet,
    a ``weakref.finalize``): Python only prints an exception raised there ("Exception ignored in"),
    so a KeyboardInterrupt raised in it would be lost and the program would go on."""
    return frame is not None and os.path.basename(frame.f_code.co_filename) in ("_weakrefset.py", "weakref.py")


def make_signal_handler(previous: Any, running: Callable[[], Optional[Stoppable]]) -> Callable:
    """A handler that stops the running profiler on SIGTERM, then chains to ``previous``."""
    def handler(signum: int, frame: Any) -> None:
        prof = running()
        if prof is not None and os.getpid() == prof._owner_pid and prof._in_operation_here():
            if prof._defer_signal(signum, frame, previous):
                return
            # a second signal while the first is held back: act at once
        elif (held_here() or (signum == signal.SIGINT and _in_weakref_callback(frame))) and _postpone(signum):
            return
        _postponed_since.pop(signum, None)
        handle_signal(prof, signum, frame, previous)

    handler._npuprof = True  # type: ignore[attr-defined]
    handler.previous = previous  # type: ignore[attr-defined]
    return handler


def handle_signal(prof: Optional[Stoppable], signum: int, frame: Any, previous: Any) -> None:
    """Stop ``prof`` on SIGTERM, then run ``previous`` (or the default action)."""
    if signum == signal.SIGTERM and prof is not None and prof.started and os.getpid() == prof._owner_pid:
        try:
            prof.stop()
        except Exception as e:
            log.warning("npuprof: stopping on SIGTERM failed: %s", e)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        # the default action (terminate) with the right exit status
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
