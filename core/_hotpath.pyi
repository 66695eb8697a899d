"""The interface of ``npuprof._hotpath`` (core/_hotpath.c): the annotation hot paths of
:mod:`npuprof.recorder`, compiled. Everything the C code uses of the recorder it is handed here, as
arguments: it reads no attribute of the recorder or its buffers by name.

Example (what ``recorder._activate`` does)::

    _hotpath.activate(rec, rec._plain, rec.domain_filter, rec._sinks, _enter_hook, _RANGES_FULL,
                      _EVENTS_FULL, rec._thread_buffers, rec.flush_buffers, _record_slow)
"""
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

PUBLIC_CAPI_ONLY: int
"""1 when built with ``-DNPUPROF_PUBLIC_CAPI_ONLY``: no private C API (see core/_hotpath.c)."""

def bind(kind_range: int, kind_mark: int, kind_api: int, open_ranges: dict[int, tuple], range_ids: Iterator[int], /) -> None:
    """The event kinds, the dict of open mstx ranges (range id -> ``(message, t0, domain, rec, bufs,
    events, sink_tokens)``, shared with the Python twins) and the iterator of range ids."""

def activate(rec: Any, plain: bool = ..., domain_filter: Optional[Callable[[str], bool]] = ...,
             sinks: Sequence[Any] = ..., enter_hook: Optional[Callable[[Any], None]] = ...,
             ranges_full: int = ..., events_full: int = ...,
             thread_buffers: Optional[Callable[[], tuple[Any, list, list]]] = ...,
             flush_buffers: Optional[Callable[..., int]] = ...,
             record_slow: Optional[Callable[[Any, Any, int], None]] = ...) -> None:
    """Make ``rec`` the recorder the hot paths write to, or none (``activate(None)``).

    ``rec`` is only held and compared (an open mstx range records only while the recorder that
    opened it is active). ``plain``: no call stacks, no sinks, so a range's end is one append.
    ``sinks``: objects with ``mark(message, stream)``, ``range_start(message, same_thread=...)``
    and ``range_end(token)``. ``ranges_full`` / ``events_full``: the item counts at which a buffer
    is written. ``thread_buffers()``: the calling thread's ``(bufs, ranges, events)``, registering
    it; asked once per thread and activation, and the lists must stay alive as long as ``rec``.
    ``flush_buffers(bufs=None)``: write the calling thread's (or ``bufs``') buffers.
    ``record_slow(range, rec, t1)``: record the end of a range that is not plain."""

class RangeBase:
    """``record_function``'s construction, ``__enter__`` and ``__exit__`` (``recorder._PyRange``)."""
    name: str
    args: Optional[dict]
    _t0: int
    _stack: str
    _sink_ids: list
    def __init__(self, name: str, args: Optional[dict] = ...) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any, /) -> bool: ...

class Traced:
    """What ``trace_api`` returns: calls ``func``, recording an API event named ``label``."""
    def __init__(self, func: Callable[..., Any], label: str, level: str) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

def mark(message: str, stream: Any = ..., domain: str = ...) -> None: ...
def range_start(message: str, stream: Any = ..., domain: str = ...) -> int: ...
def range_end(range_id: int, domain: str = ...) -> None: ...

def drain(buf: list, n: int, /) -> list:
    """The first ``n`` items of ``buf``, moved to a new list. Not built without the GIL or with
    ``-DNPUPROF_PUBLIC_CAPI_ONLY`` (``recorder._drain`` then slices)."""

def times(flat: list, width: int, first: int, offset: int, ts: np.ndarray, dur: np.ndarray, /) -> None:
    """Start (``+ offset``) and duration columns of a drained buffer, into two int64 arrays."""
