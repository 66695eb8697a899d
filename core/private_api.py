"""The private APIs of CPython, numpy and threading that npuprof uses, each behind one function here
with a fallback that needs none of them; nothing else in npuprof touches them.

====================================  =============================  ==========================================
private API                           function                       fallback where it is missing
====================================  =============================  ==========================================
``RLock._is_owned`` (threading)       :func:`new_rlock`,             a lock written in Python that tracks its
                                      :func:`rlock_is_owned`         owner (:class:`TrackedRLock`)
``sys._getframe``                     :func:`caller_frame`           the frame of a caught exception's traceback
numpy's ``_set_madvise_hugepage``     :func:`numpy_hugepage_switch`  None: ``pages.ordinary_pages`` does nothing
``sys._is_gil_enabled`` (3.13+)       :func:`gil_enabled`            True: the GIL is on (as it is on every
                                                                     Python before 3.13)
====================================  =============================  ==========================================

Each is looked up once, when this module is imported; tests/platform/test_private_api.py removes each (and
all of them at once, in a fresh interpreter) and runs npuprof on the fallbacks. The compiled modules
keep their private C API (``_PyTime_GetPerfCounter`` and ``_PyDict_Pop`` before Python 3.13, list
internals, ``_PyBytes_Resize``) in one C function each, with a public fallback that a build with
``-DNPUPROF_PUBLIC_CAPI_ONLY`` takes (see core/_hotpath.c, core/export/_rowrender.c). The C library's
functions called through ctypes (``madvise``, ``malloc_trim``, ``sync_file_range``) are public but
not everywhere: :func:`npuprof.libc.libc_function` gives None where one is missing.

Example::

    >>> lock = new_rlock()
    >>> with lock:
    ...     rlock_is_owned(lock)
    True
    >>> rlock_is_owned(lock)
    False
"""
from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Any, Callable, Optional

__all__ = ["new_rlock", "rlock_is_owned", "TrackedRLock", "caller_frame", "numpy_hugepage_switch", "gil_enabled"]


# -- RLock._is_owned ---------------------------------------------------------------------------
# The Profiler asks, on every step(), whether the calling thread is inside one of its operations
# (it holds the operation lock). CPython's RLock answers with the private ``_is_owned``; nothing
# public does (``RLock.locked()`` arrives in 3.14 and does not say by whom).

class TrackedRLock:
    """A re-entrant lock that knows its owner, for a Python whose RLock has no ``_is_owned``.

    What ``threading.RLock`` does, in Python: a little slower, and a signal handler that runs
    between taking the inner lock and noting the owner sees the lock as not owned.
    """

    __slots__ = ("_lock", "_owner", "_count")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: Optional[int] = None
        self._count = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = threading.get_ident()
        if self._owner == me:
            self._count += 1
            return True
        if not self._lock.acquire(blocking, timeout):
            return False
        self._owner = me
        self._count = 1
        return True

    def release(self) -> None:
        if self._owner != threading.get_ident():
            raise RuntimeError("cannot release un-acquired lock")
        self._count -= 1
        if not self._count:
            self._owner = None
            self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def is_owned(self) -> bool:
        return self._owner == threading.get_ident()


def _private_is_owned() -> Optional[Callable[[Any], bool]]:
    """RLock's ``_is_owned`` as an unbound method (called as ``f(lock)``), or None where it is missing."""
    return getattr(type(threading.RLock()), "_is_owned", None)


_RLOCK_IS_OWNED = _private_is_owned()


def new_rlock() -> Any:
    """A re-entrant lock :func:`rlock_is_owned` can ask: ``threading.RLock()``, or a
    :class:`TrackedRLock` where RLock has no ``_is_owned``."""
    return threading.RLock() if _RLOCK_IS_OWNED is not None else TrackedRLock()


def rlock_is_owned(lock: Any) -> bool:
    """Whether the calling thread holds ``lock`` (made by :func:`new_rlock`)."""
    if type(lock) is TrackedRLock:
        return lock.is_owned()
    return bool(_RLOCK_IS_OWNED(lock))  # type: ignore[misc]


# -- sys._getframe -----------------------------------------------------------------------------

def caller_frame(depth: int = 0) -> Optional[FrameType]:
    """The frame ``depth`` calls above the caller's (0: the caller's own), as ``sys._getframe(depth)``
    called there gives it; None past the outermost frame.

    Example::

        >>> caller_frame().f_code.co_name
        '<module>'
    """
    if _GETFRAME is not None:
        try:
            return _GETFRAME(depth + 1)
        except ValueError:   # deeper than the stack
            return None
    try:
        raise RuntimeError
    except RuntimeError as e:
        frame = e.__traceback__.tb_frame if e.__traceback__ is not None else None   # this function's
    for _ in range(depth + 1):
        frame = frame.f_back if frame is not None else None
    return frame


_GETFRAME: Optional[Callable[[int], FrameType]] = getattr(sys, "_getframe", None)


# -- numpy's _set_madvise_hugepage -------------------------------------------------------------

def numpy_hugepage_switch() -> Optional[Callable[[bool], bool]]:
    """numpy's ``_set_madvise_hugepage(enabled) -> previous`` (whether numpy advises the kernel to back
    large arrays with transparent huge pages), or None where this numpy has no such switch."""
    return _NUMPY_SWITCH


def _find_numpy_switch() -> Optional[Callable[[bool], bool]]:
    try:
        from numpy._core import multiarray
    except ImportError:   # numpy < 2
        try:
            from numpy.core import multiarray
        except ImportError:
            return None
    return getattr(multiarray, "_set_madvise_hugepage", None)


_NUMPY_SWITCH = _find_numpy_switch()


# -- sys._is_gil_enabled -----------------------------------------------------------------------

def gil_enabled() -> bool:
    """Whether the GIL is on now: False only on a free-threaded Python (3.13t) running without it.

    Example::

        >>> gil_enabled()     # on a Python that is not free-threaded
        True
    """
    return True if _IS_GIL_ENABLED is None else bool(_IS_GIL_ENABLED())


_IS_GIL_ENABLED: Optional[Callable[[], bool]] = getattr(sys, "_is_gil_enabled", None)
