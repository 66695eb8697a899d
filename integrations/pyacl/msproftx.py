"""npuprof annotations -> msproftx stamps on an NPU.

:class:`MsprofTxSink` is an annotation sink for npuprof's recorder: the core
calls ``range_start(name) -> token`` when a ``record_function`` is entered
and ``range_end(token)`` when it is left (same thread), ``mark(message)`` for
``mstx.mark``, and ``range_start(message, same_thread=False)`` /
``range_end(token)`` for ``mstx.range_start/range_end``, which may end on
another thread. Same-thread ranges map to ``acl.prof.push``/``pop`` (the
documented same-thread pair), cross-thread ones to ``range_start``/
``range_stop``, marks to ``mark``; each uses its own stamp
(``create_stamp`` + ``set_stamp_trace_message``, destroyed when the range
ends).

The sink is active only between ``acl.prof.start`` and ``acl.prof.stop`` of a
configuration with ACL_PROF_MSPROFTX (the contract); outside that it does
nothing. It never raises into user code: a failure is logged once and
disables the sink.

Example::

    sink = MsprofTxSink(shared_prof())
    sink.activate()                      # after acl.prof.start with ACL_PROF_MSPROFTX
    tok = sink.range_start("forward")
    ...
    sink.range_end(tok)
    sink.deactivate()                    # before acl.prof.stop
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Optional

from .checked import CheckedProf
from .errors import AclProfilingError

log = logging.getLogger("npuprof")
MAX_MESSAGE = 127


class MsprofTxSink:
    """Maps ranges and marks onto acl.prof msproftx calls (see module doc)."""

    def __init__(self, prof: CheckedProf) -> None:
        self.prof = prof
        self.active = False
        self.failed: Optional[str] = None
        self.calls = 0
        self._lock = threading.Lock()

    def activate(self) -> None:
        self.active = self.failed is None

    def deactivate(self) -> None:
        self.active = False

    def _stamp(self, message: str) -> int:
        stamp = self.prof.create_stamp()
        try:
            self.prof.set_stamp_trace_message(stamp, message[:MAX_MESSAGE])
        except AclProfilingError:
            self.prof.destroy_stamp(stamp)
            raise
        return stamp

    def _fail(self, error: BaseException) -> None:
        self.active = False
        if self.failed is None:
            self.failed = str(error)
            log.warning("npuprof: msproftx mapping disabled: %s", error)

    def range_start(self, name: str, same_thread: bool = True) -> Any:
        """Open a range; returns the token for :meth:`range_end` (None when inactive)."""
        if not self.active:
            return None
        try:
            stamp = self._stamp(str(name))
            if same_thread:
                self.prof.push(stamp)
                token = ("push", stamp, threading.get_ident())
            else:
                token = ("range", stamp, self.prof.range_start(stamp))
            self.calls += 1
            return token
        except AclProfilingError as e:
            self._fail(e)
            return None

    def range_end(self, token: Any) -> None:
        if token is None or not self.active:
            return
        mode, stamp, ident = token
        try:
            if mode == "push":
                if ident != threading.get_ident():
                    # push/pop must stay on one thread: never pop another thread's range
                    raise AclProfilingError.for_rule("PUSH_POP_SAME_THREAD", "acl.prof.pop",
                                                     "a record_function range ended on another thread")
                self.prof.pop()
            else:
                self.prof.range_stop(ident)
            self.prof.destroy_stamp(stamp)
            self.calls += 1
        except AclProfilingError as e:
            self._fail(e)

    def mark(self, message: str, stream: Any = None) -> None:
        if not self.active:
            return
        try:
            if stream is not None and isinstance(stream, int):
                self.prof.mark_ex(str(message)[:MAX_MESSAGE], stream)
            else:
                stamp = self._stamp(str(message))
                self.prof.mark(stamp)
                self.prof.destroy_stamp(stamp)
            self.calls += 1
        except AclProfilingError as e:
            self._fail(e)
