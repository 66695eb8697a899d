"""Host-side event recording: per-thread buffers and a background flusher.

The hot path (``record_function`` exit, ``mstx.mark``) is a clock read and
one ``list.append`` onto the calling thread's buffer. A flusher thread turns
buffered tuples into :class:`EventTable` chunks every ``flush_interval``
(sooner when buffers grow), so memory stays bounded however long the run.

Buffer entries are ``(kind, name, t0_mono_ns, t1_mono_ns, type, args)``.
Draining uses ``n = len(buf); chunk = buf[:n]; del buf[:n]``: each is one
atomic operation under the GIL and appends only ever land past ``n``, so no
lock sits on the hot path and nothing is lost.
"""
from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Optional, TypeVar

import numpy as np

from .events import EventKind, EventTable, _Pool
from .rawstore import RawWriter

log = logging.getLogger("npuprof")
F = TypeVar("F", bound=Callable[..., Any])

_perf = time.perf_counter_ns
_recorder: Optional["Recorder"] = None          # the active recorder, read by annotations
_RANGE, _MARK, _API, _STEP = int(EventKind.RANGE), int(EventKind.MARK), int(EventKind.API), int(EventKind.STEP)
PENDING_FLUSH_THRESHOLD = 50_000
TICK_SECONDS = 0.05


def active_recorder() -> Optional["Recorder"]:
    return _recorder


class Recorder:
    """Owns the per-thread buffers and the flusher of one collection window."""

    def __init__(self, writer: RawWriter, offset_ns: int, flush_interval: float = 1.0,
                 with_stack: bool = False, on_failure: Optional[Callable[[BaseException], None]] = None,
                 domain_filter: Optional[Callable[[str], bool]] = None) -> None:
        self.writer = writer
        self.offset_ns = offset_ns
        self.flush_interval = flush_interval
        self.with_stack = with_stack
        self.on_failure = on_failure
        self.domain_filter = domain_filter
        self.sinks: tuple = ()            # annotation sinks (e.g. msproftx on an NPU)
        self._local = threading.local()
        self._buffers: list[tuple[int, int, list]] = []   # (pid, tid, buffer)
        self._reg_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.failed: Optional[BaseException] = None
        self.dropped = 0

    # -- buffers --------------------------------------------------------------
    def buffer(self) -> list:
        try:
            return self._local.buf
        except AttributeError:
            buf: list = []
            self._local.buf = buf
            with self._reg_lock:
                self._buffers.append((os.getpid(), threading.get_native_id(), buf))
            return buf

    def add(self, kind: int, name: str, t0: int, t1: int, type_: str = "", args: str = "") -> None:
        """Record one event (monotonic ns) from any thread."""
        self.buffer().append((kind, name, t0, t1, type_, args))

    # -- lifecycle ------------------------------------------------------------
    def start(self) -> None:
        global _recorder
        self._thread = threading.Thread(target=self._run, name="npuprof-flusher", daemon=True)
        self._thread.start()
        _recorder = self

    def stop(self) -> None:
        """Detach from annotations, flush everything, stop the flusher."""
        global _recorder
        if _recorder is self:
            _recorder = None
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self.flush()

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(TICK_SECONDS):
            now = time.monotonic()
            if now - last >= self.flush_interval or self.pending() >= PENDING_FLUSH_THRESHOLD:
                self.flush()
                last = now

    def pending(self) -> int:
        return sum(len(b) for _, _, b in self._buffers)

    # -- flushing -------------------------------------------------------------
    def flush(self) -> int:
        """Write buffered events; returns how many. Never raises."""
        with self._flush_lock:
            with self._reg_lock:
                buffers = list(self._buffers)
            tables = []
            for pid, tid, buf in buffers:
                n = len(buf)
                if not n:
                    continue
                chunk = buf[:n]
                del buf[:n]
                tables.append(self._to_table(pid, tid, chunk))
            if not tables or self.failed is not None:
                if self.failed is not None:
                    self.dropped += sum(len(t) for t in tables)
                return 0
            table = EventTable.concat(tables)
            self.write_table(table)
            return len(table)

    def write_table(self, table: EventTable) -> None:
        """Append a built table to the raw data (thread-safe); failures stop collection."""
        if self.failed is not None:
            self.dropped += len(table)
            return
        try:
            self.writer.append(table)
        except Exception as e:  # disk full, EIO, RLIMIT_FSIZE ...: never the user's problem
            self._fail(e)

    def _fail(self, error: BaseException) -> None:
        global _recorder
        self.failed = error
        if _recorder is self:
            _recorder = None
        if self.on_failure is not None:
            self.on_failure(error)

    def _to_table(self, pid: int, tid: int, chunk: list) -> EventTable:
        kinds, names, t0, t1, types, args = zip(*chunk)
        pool = _Pool()
        t0a = np.fromiter(t0, dtype=np.int64, count=len(chunk))
        t1a = np.fromiter(t1, dtype=np.int64, count=len(chunk))
        return EventTable.from_codes(
            {"ts": t0a + self.offset_ns, "dur": t1a - t0a, "kind": np.fromiter(kinds, np.uint8, len(chunk)),
             "pid": pid, "tid": tid},
            {"name": pool.codes(names), "type": pool.codes(types), "args": pool.codes(args),
             "source": pool.code("npuprof")},
            pool.strings)


# -- user annotations ---------------------------------------------------------

def _stack_text(skip: int = 2, limit: int = 32) -> str:
    frame = sys._getframe(skip)
    out = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        out.append(f"{code.co_filename}:{frame.f_lineno}({code.co_name})")
        frame = frame.f_back
    return json.dumps({"Call stack": ";".join(out)})


class record_function:
    """Mark a range of user code; shows as a ``user_annotation`` in the trace.

    Usable as a context manager or a decorator, from any thread; costs a clock
    read and an append when a profiler records, almost nothing otherwise.

    Example::

        with record_function("data_load"):
            batch = next(it)

        @record_function("loss")
        def compute_loss(x): ...
    """

    __slots__ = ("name", "args", "_t0", "_stack", "_sink_ids")

    def __init__(self, name: str, args: Optional[dict] = None) -> None:
        self.name = name
        self.args = args

    def __enter__(self) -> "record_function":
        rec = _recorder
        if rec is not None:
            self._stack = _stack_text() if rec.with_stack else ""
            if rec.sinks:
                self._sink_ids = [s.range_start(self.name) for s in rec.sinks]
        self._t0 = _perf()
        return self

    def __exit__(self, *exc: Any) -> bool:
        t1 = _perf()
        rec = _recorder
        if rec is not None:
            args = self._stack if rec.with_stack else ""
            if self.args:
                args = json.dumps({**(json.loads(args) if args else {}), **self.args}, default=str)
            try:
                buf = rec._local.buf
            except AttributeError:
                buf = rec.buffer()
            buf.append((_RANGE, self.name, self._t0, t1, "", args))
            if rec.sinks:
                for sink, rid in zip(rec.sinks, getattr(self, "_sink_ids", ())):
                    sink.range_end(rid)
        return False

    def __call__(self, fn: F) -> F:
        name = self.name

        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            with record_function(name):
                return fn(*a, **kw)

        return wrapper  # type: ignore[return-value]


_range_ids = itertools.count(1)
_open_ranges: dict[int, tuple[str, int, str, list]] = {}


class mstx:
    """mstx-style marks and ranges (same names as mindspore.profiler.mstx).

    ``range_start`` returns an id that ``range_end`` closes, from any thread.
    Returns 0 (and records nothing) when no profiler is recording.

    Example::

        rid = mstx.range_start("allreduce", domain="comm")
        ...
        mstx.range_end(rid)
        mstx.mark("checkpoint saved")
    """

    @staticmethod
    def mark(message: str, stream: Any = None, domain: str = "default") -> None:
        rec = _recorder
        if rec is None or (rec.domain_filter is not None and not rec.domain_filter(domain)):
            return
        t = _perf()
        rec.buffer().append((_MARK, message, t, t, domain, ""))
        for sink in rec.sinks:
            sink.mark(message)

    @staticmethod
    def range_start(message: str, stream: Any = None, domain: str = "default") -> int:
        rec = _recorder
        if rec is None or (rec.domain_filter is not None and not rec.domain_filter(domain)):
            return 0
        rid = next(_range_ids)
        _open_ranges[rid] = (message, _perf(), domain, rec.buffer())
        return rid

    @staticmethod
    def range_end(range_id: int, domain: str = "default") -> None:
        t1 = _perf()
        opened = _open_ranges.pop(range_id, None)
        rec = _recorder
        if opened is None or rec is None:
            return
        message, t0, dom, buf = opened
        buf.append((_RANGE, message, t0, t1, dom, ""))


def trace_api(fn: Optional[F] = None, *, level: str = "Python", name: Optional[str] = None) -> Any:
    """Time every call of a Python callable, like msprof's API statistics.

    Each call becomes an API event; ``api_statistic.csv`` aggregates them.

    Example::

        load = trace_api(dataset.load)            # wrap
        @trace_api(level="DataLoader")           # or decorate
        def next_batch(): ...
    """
    def wrap(f: F) -> F:
        label = name or getattr(f, "__qualname__", repr(f))

        @functools.wraps(f)
        def wrapper(*a: Any, **kw: Any) -> Any:
            rec = _recorder
            if rec is None:
                return f(*a, **kw)
            t0 = _perf()
            try:
                return f(*a, **kw)
            finally:
                rec.buffer().append((_API, label, t0, _perf(), level, ""))

        return wrapper  # type: ignore[return-value]

    return wrap(fn) if fn is not None else wrap
