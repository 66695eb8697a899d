"""Host-side event recording: per-thread buffers and a background flusher.

The hot path (``record_function`` exit, ``mstx.mark``) is a clock read, one
``list += tuple`` onto the calling thread's buffer and one ``len()``. The
same steps also exist compiled (``_hotpath.c``, see :mod:`npuprof.compiled`);
the Python code here is their reference and fallback.

A buffer that reaches ``SELF_FLUSH_EVENTS`` events is written by the thread
that filled it, as one record, in the append that filled it; a burst smaller
than that stays buffered, as torch's profiler keeps its events. A flusher
thread writes whatever else is buffered every ``flush_interval`` (threads
that record slowly) and everything at stop, so memory stays bounded however
long the run.

Why the recording thread and not the flusher: both run in this process under
one GIL, and conversion releases it at every numpy call, checksum and write;
the flusher then waits out the switch interval (5 ms) to take it back from a
busy recording thread, fell behind at full rate (a 30,000-event record took
50-100 ms of wall time for ~8 ms of work), and the catch-up landed on a few
stretches of the recording at several times the usual cost. Converting in
the thread that filled the buffer costs the same CPU, spread evenly over the
run. Conversion is one C-level pass per column over a slice
(``np.fromiter``; string codes by ``dict`` lookups, kept across flushes), a
column of one value is coded once, and a record is encoded into one buffer.

Each thread owns three flat lists (flat, not a tuple per event: ints and strs
are not tracked by the garbage collector, so a million buffered events cost
no GC passes, and conversion slices columns out with ``buf[i::k]`` in C):

- ``ranges``: plain ``record_function`` ranges, 3 items per event
  ``name, t0_mono_ns, t1_mono_ns``;
- ``events``: everything else, 6 items per event
  ``kind, name, t0_mono_ns, t1_mono_ns, type, args``;
- ``steps``: ``prof.step()``'s step ranges, 3 items per step
  ``step_num, t0_mono_ns, t1_mono_ns``; conversion turns them into
  ``ProfilerStep#N`` events (formatting the name costs ~1 µs on the cold
  caches a step() runs on, next to nothing in conversion).

``list += tuple`` (an extend) is one atomic operation under the GIL, so a
buffer's length is always a whole number of events. Draining uses ``n = len(buf);
chunk = buf[:n]; del buf[:n]`` (compiled: one call that moves the references):
each is atomic and appends only ever land past ``n``, so no lock sits on the
hot path and nothing is lost.
"""
from __future__ import annotations

import functools
import gc
import itertools
import json
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

import numpy as np

from .compiled import load_compiled
from .events import COLUMN_DEFAULTS, NUMERIC_COLUMNS, EventKind, EventTable, constant_column, used_strings
from .private_api import caller_frame
from .rawstore import RawWriter
from .sigsafe import SignalSafeLock

log = logging.getLogger("npuprof")
F = TypeVar("F", bound=Callable[..., Any])

_perf = time.perf_counter_ns
_recorder: Optional["Recorder"] = None          # the active recorder, read by annotations
# Set while the active recorder needs work at range entry (call stacks, annotation sinks);
# None keeps ``record_function.__enter__`` down to one clock read.
_enter_hook: Optional[Callable[["record_function"], None]] = None
_RANGE, _MARK, _API, _STEP = int(EventKind.RANGE), int(EventKind.MARK), int(EventKind.API), int(EventKind.STEP)
MAX_FLUSH_EVENTS = 30_000   # events per record: one conversion, one hold of the flush lock
# A recording thread writes its own buffer once it holds this many events (see the module doc);
# it also bounds memory: ~100 bytes per buffered event, two buffers per thread.
SELF_FLUSH_EVENTS = MAX_FLUSH_EVENTS
RANGE_ITEMS = 3     # name, t0, t1
EVENT_ITEMS = 6     # kind, name, t0, t1, type, args
STEP_ITEMS = 3      # step_num, t0, t1
MAX_POOL_STRINGS = 1 << 16   # distinct strings conversion keeps codes for across records
_RANGES_FULL = SELF_FLUSH_EVENTS * RANGE_ITEMS
_EVENTS_FULL = SELF_FLUSH_EVENTS * EVENT_ITEMS


# The compiled annotation hot paths (built from ``_hotpath.c``), or None (see npuprof.compiled).
# The Python functions below (``_PyRange``, ``_mark``, ``_range_start``, ``_range_end``,
# ``trace_api``'s wrapper) are the reference and the fallback; the compiled ones do the same
# steps in the same order, reading the recorder's state once per activation (``_activate``),
# for 56-78% less per annotation (in a burst).
_hotpath = load_compiled("npuprof._hotpath")


def active_recorder() -> Optional["Recorder"]:
    return _recorder


class _Buffers:
    """One thread's buffers (see module doc)."""

    __slots__ = ("pid", "tid", "ranges", "events", "steps")

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.tid = threading.get_native_id()
        self.ranges: list = []
        self.events: list = []
        self.steps: list = []


GC_DOMAIN = "python_gc"        # the domain (type) of the RANGE events of Python GC pauses
GC_PAUSES_KEPT = 100_000         # pauses kept per window (a pause is one small tuple)


class _GcPauses:
    """Python garbage-collector pauses, timed through ``gc.callbacks``.

    The callback runs wherever a collection happens, inside any code (this
    module's own under its locks too), so it only appends to a list: no lock,
    no buffer registration, no flush. The pauses become RANGE events (domain
    :data:`GC_DOMAIN`, named ``Python GC gen N``) when the window stops. In a
    forked child the parent's callback does nothing (another pid).
    """

    __slots__ = ("pauses", "dropped", "threshold_ns", "_t0", "_pid", "_callback")

    def __init__(self, threshold_ns: int = 0) -> None:
        self.pauses: list = []
        self.dropped = 0
        self.threshold_ns = threshold_ns      # shorter pauses are not kept (torch_npu's gc_detect_threshold)
        self._t0 = 0
        self._pid = os.getpid()
        self._callback: Optional[Callable[[str, dict], None]] = None

    def attach(self) -> None:
        def on_gc(phase: str, info: dict, pauses: list = self.pauses, pid: int = self._pid) -> None:
            if phase == "start":
                self._t0 = _perf()
            elif self._t0 and os.getpid() == pid:
                t1 = _perf()
                if t1 - self._t0 < self.threshold_ns:
                    pass
                elif len(pauses) < GC_PAUSES_KEPT:
                    pauses.append((info.get("generation", -1), self._t0, t1, info.get("collected", 0),
                                   info.get("uncollectable", 0), threading.get_native_id()))
                else:
                    self.dropped += 1
                self._t0 = 0

        self._callback = on_gc
        gc.callbacks.append(on_gc)

    def detach(self) -> None:
        if self._callback is not None:
            try:
                gc.callbacks.remove(self._callback)
            except ValueError:
                pass
            self._callback = None

    def drain(self) -> list:
        """(name, t0, t1, args JSON) of each pause recorded, oldest first; the list is emptied."""
        pauses, self.pauses[:] = list(self.pauses), []
        return [(f"Python GC gen {gen}", t0, t1,
                 json.dumps({"generation": gen, "collected": collected, "uncollectable": uncollectable,
                             "thread": tid}))
                for gen, t0, t1, collected, uncollectable, tid in pauses]


class Recorder:
    """Owns the per-thread buffers and the flusher of one collection window."""

    def __init__(self, writer: RawWriter, offset_ns: int, flush_interval: float = 1.0,
                 with_stack: bool = False, on_failure: Optional[Callable[[BaseException], None]] = None,
                 domain_filter: Optional[Callable[[str], bool]] = None,
                 gc_threshold_ns: Optional[int] = None) -> None:
        self.writer = writer
        self.offset_ns = offset_ns
        self.flush_interval = flush_interval
        self.with_stack = with_stack
        self.on_failure = on_failure
        self.domain_filter = domain_filter
        self._sinks: tuple = ()          # annotation sinks (e.g. msproftx on an NPU)
        self._plain = not with_stack     # no stack, no sink: the fast path applies
        self._local = threading.local()  # this thread's _Buffers and its ranges, events, steps lists
        self._threads: list[_Buffers] = []
        self._reg_lock = SignalSafeLock()   # a signal handler must not re-enter it
        self._flush_lock = SignalSafeLock()   # a signal handler must not re-enter it
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.failed: Optional[BaseException] = None
        self.dropped = 0
        self._pool = _StringCodes()      # string codes kept across flushes (used under _flush_lock)
        self._first = 0                  # the thread a record's drain starts at (under _flush_lock)
        # Python GC pauses at least gc_threshold_ns long while recording (gc.callbacks); None: not recorded
        self._gc = _GcPauses(gc_threshold_ns) if gc_threshold_ns is not None else None

    # -- annotation sinks -------------------------------------------------------
    @property
    def sinks(self) -> tuple:
        """Objects told about every range and mark while recording (e.g. msproftx
        on an NPU); plugins add them. Interface: ``range_start(name,
        same_thread=True) -> token`` (``same_thread=False`` for mstx ranges, which
        may end on another thread), ``range_end(token)``, ``mark(message,
        stream=None)``."""
        return self._sinks

    @sinks.setter
    def sinks(self, value: Any) -> None:
        self._sinks = tuple(value)
        self._update_plain()

    def _update_plain(self) -> None:
        self._plain = not self.with_stack and not self._sinks
        if _recorder is self:
            _activate(self)

    # -- buffers --------------------------------------------------------------
    def _register(self) -> _Buffers:
        """The calling thread's new buffers, listed for flushing before the thread may fill them.

        Every caller runs it in the ``except AttributeError`` of its buffer lookup; a signal's exception
        raised in here (Ctrl-C's KeyboardInterrupt) is the user's, not something that went wrong while
        handling that lookup, so its traceback does not chain onto the AttributeError."""
        try:
            bufs = _Buffers()
            with self._reg_lock:
                self._threads.append(bufs)
            self._local.buffers = bufs
            self._local.ranges = bufs.ranges
            self._local.events = bufs.events
            self._local.steps = bufs.steps
            return bufs
        except BaseException as e:
            e.__suppress_context__ = True
            raise

    def _thread_buffers(self) -> tuple[_Buffers, list, list]:
        """The calling thread's buffers, registering it: ``(bufs, bufs.ranges, bufs.events)``, what the
        compiled hot paths ask for once per thread and activation (see ``_activate``)."""
        try:
            bufs = self._local.buffers
        except AttributeError:
            bufs = self._register()
        return bufs, bufs.ranges, bufs.events

    def buffer(self) -> list:
        """The calling thread's general buffer (flat, ``EVENT_ITEMS`` items per event)."""
        try:
            return self._local.events
        except AttributeError:
            return self._register().events

    def add(self, kind: int, name: str, t0: int, t1: int, type_: str = "", args: str = "") -> None:
        """Record one event (monotonic ns) from any thread."""
        try:
            buf = self._local.events
        except AttributeError:
            buf = self._register().events
        buf += (kind, name, t0, t1, type_, args)
        if len(buf) >= _EVENTS_FULL:
            self.flush_buffers()

    def add_range(self, name: str, t0: int, t1: int) -> None:
        """Record one plain range (monotonic ns) from any thread; ``record_function``'s
        fast path does the same inline."""
        try:
            buf = self._local.ranges
        except AttributeError:
            buf = self._register().ranges
        buf += (name, t0, t1)
        if len(buf) >= _RANGES_FULL:
            self.flush_buffers()

    def add_step(self, step_num: int, t0: int, t1: int) -> None:
        """Record the range of step ``step_num`` (monotonic ns) from the calling thread.

        Example::

            rec.add_step(3, t0, t1)   # flushed as a STEP event named "ProfilerStep#3"
        """
        try:
            self._local.steps.extend((step_num, t0, t1))
        except AttributeError:
            self._register().steps.extend((step_num, t0, t1))

    # -- lifecycle ------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="npuprof-flusher", daemon=True)
        self._thread.start()
        if self._gc is not None:
            self._gc.attach()
        _activate(self)

    def stop(self) -> None:
        """Detach from annotations, flush everything, stop the flusher."""
        if _recorder is self:
            _activate(None)
        if self._gc is not None:
            self._gc.detach()
            for name, t0, t1, args in self._gc.drain():
                self.add(_RANGE, name, t0, t1, GC_DOMAIN, args)
            self.dropped += self._gc.dropped      # pauses past GC_PAUSES_KEPT: the run says events were lost
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self.flush()

    def _run(self) -> None:
        while not self._stop.wait(self.flush_interval):
            self.flush()

    def pending(self) -> int:
        """Events buffered and not yet written."""
        return sum(len(b.ranges) // RANGE_ITEMS + len(b.events) // EVENT_ITEMS + len(b.steps) // STEP_ITEMS
                   for b in self._threads)

    # -- flushing -------------------------------------------------------------
    def flush(self) -> int:
        """Write buffered events; returns how many. Never raises.

        Everything buffered when it is called is written, ``MAX_FLUSH_EVENTS``
        per record: each record is one hold of the flush lock and one
        conversion under the GIL, so no recording thread waits for more
        than one record's worth of work.
        """
        written, budget = 0, self.pending()
        while True:
            with self._flush_lock:
                drained, n = self._flush_locked()
            written += n
            budget -= drained
            if not drained or budget <= 0:
                return written

    def flush_buffers(self, bufs: Optional[_Buffers] = None) -> int:
        """Write one thread's buffered events (the calling thread's when ``bufs`` is None);
        the append that filled a buffer calls it. Returns how many. Never raises."""
        if bufs is None:
            bufs = getattr(self._local, "buffers", None)
            if bufs is None:
                return 0
        written = 0
        while True:
            with self._flush_lock:
                drained, n = self._flush_locked([bufs])
            written += n
            if drained < MAX_FLUSH_EVENTS:
                return written

    def _flush_locked(self, threads: Optional[list] = None) -> tuple[int, int]:
        """Drain up to ``MAX_FLUSH_EVENTS`` events of ``threads`` (all when None) and write them
        as one record (``_flush_lock`` held): (drained, written)."""
        if threads is None:
            with self._reg_lock:
                threads = list(self._threads)
        if len(threads) > 1:   # each record starts at another thread: a flooding one cannot hold the others back
            self._first = first = (self._first + 1) % len(threads)
            threads = threads[first:] + threads[:first]
        chunks = []
        left = MAX_FLUSH_EVENTS
        for bufs in threads:
            if left <= 0:
                break
            steps = _drain(bufs.steps, left * STEP_ITEMS)
            left -= len(steps) // STEP_ITEMS
            ranges = _drain(bufs.ranges, left * RANGE_ITEMS)
            left -= len(ranges) // RANGE_ITEMS
            events = _drain(bufs.events, left * EVENT_ITEMS)
            left -= len(events) // EVENT_ITEMS
            if steps:
                events += _step_events(steps)
            if ranges or events:
                chunks.append((bufs.pid, bufs.tid, ranges, events))
        if not chunks:
            return 0, 0
        drained = sum(len(r) // RANGE_ITEMS + len(e) // EVENT_ITEMS for _, _, r, e in chunks)
        if self.failed is not None:
            self.dropped += drained
            return drained, 0
        try:
            table = chunks_to_table(chunks, self.offset_ns, self._pool)
        except Exception as e:  # a bug here must not reach the user's training
            self._fail(e)
            return drained, 0
        self.write_table(table)
        return drained, len(table)

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
        self.failed = error
        if _recorder is self:
            _activate(None)
        if self.on_failure is not None:
            self.on_failure(error)


def _drain(buf: list, limit: int = -1) -> list:
    """Take the first ``limit`` items of ``buf`` (all when negative); appends land past them."""
    n = len(buf)
    if 0 <= limit < n:
        n = limit
    if not n:
        return []
    if _compiled_drain is not None:
        return _compiled_drain(buf, n)
    chunk = buf[:n]
    del buf[:n]
    return chunk


# ``_drain``'s slicing compiled (the items' references move instead of being copied and dropped), or None
_compiled_drain = getattr(_hotpath, "drain", None)


def _step_events(steps: list) -> list:
    """Flat ``steps`` items -> flat ``events`` items (STEP events named ProfilerStep#N).

    Example::

        >>> _step_events([3, 10, 20])
        [0, 'ProfilerStep#3', 10, 20, 'ProfilerStep', '']
    """
    out: list = []
    for i in range(0, len(steps), STEP_ITEMS):
        n, t0, t1 = steps[i:i + STEP_ITEMS]
        out += (_STEP, f"ProfilerStep#{n}", t0, t1, "ProfilerStep", "")
    return out


class _StringCodes:
    """String codes kept across flushes (one per recorder).

    A name is added once, the first time it is seen; from then on coding a
    column is one C-level dict lookup per event (``map`` over
    ``dict.__getitem__``), and a column holding one value throughout (the
    ``type`` and ``args`` of most events, a thread's run of one name) is
    recognised by ``list.count`` and coded once. Bounded: past
    ``MAX_POOL_STRINGS`` distinct strings (names built per call, e.g.
    ``f"batch {i}"``) the pool starts over at the next flush.

    Example::

        >>> pool = _StringCodes()
        >>> pool.column(["a", "b", "a"]).tolist(), pool.column(["b", "b"]), pool.strings
        ([1, 2, 1], 2, ['', 'a', 'b'])
    """

    __slots__ = ("index", "strings")

    def __init__(self) -> None:
        self.index: dict = {"": 0}
        self.strings: list[str] = [""]

    def reset_if_full(self) -> None:
        if len(self.strings) > MAX_POOL_STRINGS:
            self.index = {"": 0}
            self.strings = [""]     # a new list: tables built before keep theirs

    def code(self, value: Any) -> int:
        c = self.index.get(value)
        if c is None:
            c = self.index[value] = len(self.strings)
            self.strings.append(value if type(value) is str else str(value))
        return c

    def column(self, values: list) -> Any:
        """Codes of ``values`` (non-empty): one int when all are equal, else an int32 array."""
        n = len(values)
        try:
            first = values[0]
            if values[-1] == first and values[n >> 1] == first and values.count(first) == n:
                return self.code(first)
            get = self.index.__getitem__
            try:
                return np.fromiter(map(get, values), dtype=np.int32, count=n)
            except KeyError:                       # strings not seen before
                code = self.code
                for s in dict.fromkeys(values):    # unique values in order, in C
                    code(s)
                return np.fromiter(map(get, values), dtype=np.int32, count=n)
        except Exception:                          # an unhashable or odd name: fall back to its text
            return self.column([v if type(v) is str else str(v) for v in values])


def chunks_to_table(chunks: list, offset_ns: int, pool: Optional[_StringCodes] = None) -> EventTable:
    """Columns from drained ``(pid, tid, ranges, events)`` buffers (see module doc).

    ``pool`` carries string codes from one flush to the next (a fresh one when
    None); the table gets its own pool of just the strings it uses. Columns
    that hold one value (``pid``, a single thread's ``tid``, most ``type`` and
    ``args``) are read-only stride-0 views, written out with one fill.

    Example::

        >>> t = chunks_to_table([(1, 2, ["f", 10, 15], [2, "m", 12, 12, "default", ""])], offset_ns=0)
        >>> t.column_strings("name"), t["dur"].tolist()
        (['f', 'm'], [5, 0])
    """
    if pool is None:
        pool = _StringCodes()
    else:
        pool.reset_if_full()
    parts: dict[str, list] = {"ts": [], "dur": [], "kind": [], "pid": [], "tid": [], "name": [], "type": [],
                              "args": []}
    sizes = []
    for pid, tid, ranges, events in chunks:
        for flat, width in ((ranges, RANGE_ITEMS), (events, EVENT_ITEMS)):
            n = len(flat) // width
            if not n:
                continue
            base = 0 if width == RANGE_ITEMS else 1
            t0, dur = _times(flat, width, base + 1, offset_ns, n)
            parts["ts"].append(t0)
            parts["dur"].append(dur)
            parts["name"].append(pool.column(flat[base::width]))
            if width == RANGE_ITEMS:
                parts["kind"].append(_RANGE)
                parts["type"].append(0)
                parts["args"].append(0)
            else:
                kinds = flat[0::width]
                first = kinds[0]
                parts["kind"].append(first if kinds.count(first) == n and type(first) is int
                                     else np.fromiter(kinds, dtype=np.uint8, count=n))
                parts["type"].append(pool.column(flat[4::width]))
                parts["args"].append(pool.column(flat[5::width]))
            parts["pid"].append(pid)
            parts["tid"].append(tid)
            sizes.append(n)
    total = sum(sizes)
    source = pool.code("npuprof")
    # the table's own pool: just the strings it uses, in first-use order of the shared pool
    seen = np.zeros(len(pool.strings), dtype=bool)
    seen[source] = True
    for key in ("name", "type", "args"):
        for p in parts[key]:
            seen[p] = True
    remap, strings = used_strings(seen, pool.strings)
    cols: dict[str, np.ndarray] = {}
    for key in ("ts", "dur", "kind", "pid", "tid", "name", "type", "args"):
        dtype = NUMERIC_COLUMNS.get(key, np.int32)
        ps = parts[key]
        if remap is not None and key in ("name", "type", "args"):
            ps = [remap[p] if isinstance(p, np.ndarray) else int(remap[p]) for p in ps]
        cols[key] = _join(ps, sizes, total, dtype)
    cols["source"] = constant_column(source if remap is None else int(remap[source]), total, np.int32)
    for key in ("device", "stream", "value", "step", "corr"):
        cols[key] = constant_column(COLUMN_DEFAULTS[key], total, NUMERIC_COLUMNS[key])
    return EventTable(cols, strings)


def _times(flat: list, width: int, first: int, offset_ns: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Start (``+ offset_ns``) and duration columns of the ``n`` events of a flat buffer whose
    start and end times sit at ``first`` and ``first + 1`` of every ``width`` items.

    Example::

        >>> ts, dur = _times(["f", 10, 15, "g", 20, 27], 3, 1, 100, 2)
        >>> ts.tolist(), dur.tolist()
        ([110, 120], [5, 7])
    """
    if _compiled_times is not None:
        ts, dur = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        try:
            _compiled_times(flat, width, first, offset_ns, ts, dur)
            return ts, dur
        except (TypeError, OverflowError):   # an item that is not a plain int: numpy converts it
            pass
    ts = np.fromiter(flat[first::width], dtype=np.int64, count=n)
    dur = np.fromiter(flat[first + 1::width], dtype=np.int64, count=n)
    dur -= ts
    ts += offset_ns
    return ts, dur


# ``_times`` compiled (one pass, no per-item iterator step), or None: the numpy path above
_compiled_times = getattr(_hotpath, "times", None)


def _join(parts: list, sizes: list, total: int, dtype: Any) -> np.ndarray:
    """One column from per-segment parts (arrays, or ints standing for a run of one value):
    a stride-0 view when it is one value throughout."""
    if all(not isinstance(p, np.ndarray) for p in parts) and len(set(parts)) <= 1:
        return constant_column(parts[0] if parts else 0, total, dtype)
    if len(parts) == 1:
        return parts[0].astype(dtype, copy=False)
    out = np.empty(total, dtype=dtype)
    lo = 0
    for p, n in zip(parts, sizes):
        out[lo:lo + n] = p
        lo += n
    return out


def _activate(rec: Optional[Recorder]) -> None:
    """Make ``rec`` the recorder annotations write to (None: none).

    Called whenever the active recorder changes, or what annotations read of
    it: its ``_plain`` flag, ``domain_filter`` and sinks, and this module's
    ``_RANGES_FULL`` / ``_EVENTS_FULL``. The compiled hot paths are handed
    all of it here, once per activation, as arguments (the recorder itself
    only as an object to hold and compare), with the three callables they
    call back: the thread's buffers, the flush of a full buffer and the
    recording of a range that is not plain (see ``_hotpath.pyi``).
    """
    global _recorder, _enter_hook
    _recorder = rec
    _enter_hook = None if rec is None or rec._plain else _slow_enter
    if _hotpath is not None:
        if rec is None:
            _hotpath.activate(None)
        else:
            _hotpath.activate(rec, rec._plain, rec.domain_filter, rec._sinks, _enter_hook, _RANGES_FULL,
                              _EVENTS_FULL, rec._thread_buffers, rec.flush_buffers, _record_slow)


def _slow_enter(rf: "record_function") -> None:
    rec = _recorder
    if rec is None:
        return
    if rec.with_stack:
        # frames to skip: _stack_text, _slow_enter and, in Python, _PyRange.__enter__
        rf._stack = _stack_text(skip=2 if _hotpath is not None else 3)
    if rec._sinks:
        rf._sink_ids = [s.range_start(rf.name) for s in rec._sinks]


# -- user annotations ---------------------------------------------------------

def _stack_text(skip: int = 2, limit: int = 32) -> str:
    frame = caller_frame(skip)
    out = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        out.append(f"{code.co_filename}:{frame.f_lineno}({code.co_name})")
        frame = frame.f_back
    return json.dumps({"Call stack": ";".join(out)})


class _PyRange:
    """``record_function``'s construction, ``__enter__`` and ``__exit__`` in Python: the
    reference for ``_hotpath.RangeBase`` and the fallback when it is not built."""

    __slots__ = ("name", "args", "_t0", "_stack", "_sink_ids")

    def __init__(self, name: str, args: Optional[dict] = None) -> None:
        self.name = name
        self.args = args

    def __enter__(self) -> Any:
        if _enter_hook is not None:
            _enter_hook(self)
        self._t0 = _perf()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        t1 = _perf()
        rec = _recorder
        if rec is not None:
            if rec._plain and self.args is None:
                try:
                    buf = rec._local.ranges
                except AttributeError:
                    buf = rec._register().ranges
                buf += (self.name, self._t0, t1)
                if len(buf) >= _RANGES_FULL:
                    rec.flush_buffers()
            else:
                _record_slow(self, rec, t1)
        return False


def _record_slow(rf: _PyRange, rec: Recorder, t1: int) -> None:
    """The end of a range that is not plain (call stacks, args or sinks); both ``_PyRange`` and
    the compiled ``RangeBase`` call it."""
    args = getattr(rf, "_stack", "") if rec.with_stack else ""
    if rf.args:
        args = json.dumps({**(json.loads(args) if args else {}), **rf.args}, default=str)
    if args:
        rec.add(_RANGE, rf.name, rf._t0, t1, "", args)
    else:
        rec.add_range(rf.name, rf._t0, t1)
    if rec._sinks:
        for sink, rid in zip(rec._sinks, getattr(rf, "_sink_ids", ())):
            sink.range_end(rid)


if TYPE_CHECKING or _hotpath is None:
    _RangeBase = _PyRange
else:
    _RangeBase = _hotpath.RangeBase


class record_function(_RangeBase):
    """Mark a range of user code; shows as a ``user_annotation`` in the trace.

    Usable as a context manager or a decorator, from any thread; costs two
    clock reads and one append when a profiler records, two clock reads
    otherwise.

    Example::

        with record_function("data_load"):
            batch = next(it)

        @record_function("loss")
        def compute_loss(x): ...
    """

    __slots__ = ()

    def __call__(self, fn: F) -> F:
        name = self.name
        args = self.args

        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            with record_function(name, args):
                return fn(*a, **kw)

        return wrapper  # type: ignore[return-value]


_range_ids = itertools.count(1)
# range id -> (message, t0, domain, recorder, the starting thread's buffers, their events list, sink tokens)
_open_ranges: dict[int, tuple[str, int, str, Recorder, _Buffers, list, tuple]] = {}


def _mark(message: str, stream: Any = None, domain: str = "default") -> None:
    """``mstx.mark`` in Python: the reference for ``_hotpath.mark`` and its fallback."""
    rec = _recorder
    if rec is None or (rec.domain_filter is not None and not rec.domain_filter(domain)):
        return
    t = _perf()
    try:
        buf = rec._local.events
    except AttributeError:
        buf = rec._register().events
    buf += (_MARK, message, t, t, domain, "")
    if len(buf) >= _EVENTS_FULL:
        rec.flush_buffers()
    if not rec._plain:
        for sink in rec._sinks:
            sink.mark(message, stream)


def _range_start(message: str, stream: Any = None, domain: str = "default") -> int:
    """``mstx.range_start`` in Python: the reference for ``_hotpath.range_start`` and its fallback."""
    rec = _recorder
    if rec is None or (rec.domain_filter is not None and not rec.domain_filter(domain)):
        return 0
    rid = next(_range_ids)
    # mstx ranges may end on another thread: sinks use start/stop ranges, not push/pop
    sinks = rec._sinks
    tokens = tuple([(sk, sk.range_start(message, same_thread=False)) for sk in sinks]) if sinks else ()
    try:
        bufs = rec._local.buffers
    except AttributeError:
        bufs = rec._register()
    _open_ranges[rid] = (message, _perf(), domain, rec, bufs, bufs.events, tokens)
    return rid


def _range_end(range_id: int, domain: str = "default") -> None:
    """``mstx.range_end`` in Python: the reference for ``_hotpath.range_end`` and its fallback."""
    t1 = _perf()
    opened = _open_ranges.pop(range_id, None)
    if opened is None:
        return
    message, t0, dom, rec, bufs, buf, tokens = opened
    for sink, token in tokens:
        sink.range_end(token)
    # recorded on the thread that started the range; dropped if its window already ended
    if rec is _recorder:
        buf += (_RANGE, message, t0, t1, dom, "")
        if len(buf) >= _EVENTS_FULL:
            rec.flush_buffers(bufs)


class mstx:
    """mstx-style marks and ranges (same names as mindspore.profiler.mstx).

    ``mark(message, stream=None, domain="default")`` records an instant;
    ``range_start(message, stream=None, domain="default")`` returns an id that
    ``range_end(range_id, domain="default")`` closes, from any thread.
    ``range_start`` returns 0 (and nothing is recorded) when no profiler is recording.

    Example::

        rid = mstx.range_start("allreduce", domain="comm")
        ...
        mstx.range_end(rid)
        mstx.mark("checkpoint saved")
    """

    mark = staticmethod(_mark if _hotpath is None else _hotpath.mark)
    range_start = staticmethod(_range_start if _hotpath is None else _hotpath.range_start)
    range_end = staticmethod(_range_end if _hotpath is None else _hotpath.range_end)


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
        if _hotpath is not None:   # the same wrapper, compiled
            return functools.update_wrapper(_hotpath.Traced(f, label, level), f)  # type: ignore[return-value]

        @functools.wraps(f)
        def wrapper(*a: Any, **kw: Any) -> Any:
            rec = _recorder
            if rec is None:
                return f(*a, **kw)
            t0 = _perf()
            try:
                return f(*a, **kw)
            finally:
                t1 = _perf()
                try:
                    buf = rec._local.events
                except AttributeError:
                    buf = rec._register().events
                buf += (_API, label, t0, t1, level, "")
                if len(buf) >= _EVENTS_FULL:
                    rec.flush_buffers()

        return wrapper  # type: ignore[return-value]

    return wrap(fn) if fn is not None else wrap


if _hotpath is not None:
    _hotpath.bind(_RANGE, _MARK, _API, _open_ranges, _range_ids)
