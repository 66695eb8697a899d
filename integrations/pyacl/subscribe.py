"""Subscription mode: per-op records of subscribed models, read from a pipe.

:class:`OpSubscriber` follows the documented sequence: ``os.pipe()`` ->
``create_subscribe_config(switch, metrics, write_fd)`` ->
``model_subscribe(model_id, cfg)`` for each model -> a reader thread drains
the pipe (record size from ``get_op_desc_size``; fields from the
``get_op_*`` calls, or from the documented record layout with its CRC check)
-> the app executes its models -> ``model_unsubscribe`` (the library then
closes the write end, which ends the reader) -> ``destroy_subscribe_config``.
:meth:`OpSubscriber.stop` (and leaving the ``with`` block) does the whole
teardown even when a model failed, and never leaves the reader running.

Each op becomes an :class:`OpEvent` (model id, op name, op type, start, end,
duration in µs), is appended to :attr:`OpSubscriber.events`, written to the
event table of a recording npuprof Profiler when one is given, and passed to
an optional callback (on the reader thread).

Example::

    from npuprof.integrations.pyacl import OpSubscriber

    with OpSubscriber([model_id], callback=print) as sub:
        acl.mdl.execute(model_id, inputs, outputs)
    for op in sub.events:
        print(op.op_name, op.duration_us)
"""
from __future__ import annotations

import json
import logging
import os
import select
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Iterable, Optional

import numpy as np

from npuprof.errors import ProfilerConfigError, ProfilerDataError, ProfilerStateError
from npuprof.events import EventKind, EventTable
from npuprof.session import ClockAnchor

from . import constants as C
from .checked import CheckedProf, shared_prof
from .errors import AclProfilingError
from .records import decode_records
from .tracking import track_acl

log = logging.getLogger("npuprof")
SOURCE = "pyacl"
_active: Optional["OpSubscriber"] = None
_active_lock = threading.Lock()


@dataclass(frozen=True)
class OpEvent:
    """One executed op of a subscribed model (times in µs, as the library gives them)."""

    model_id: int
    op_name: str
    op_type: str
    start_us: int
    end_us: int
    duration_us: int
    thread_id: int = 0
    device: int = -1


class OpSubscriber:
    """Subscribe models and collect their per-op records (see module doc).

    Parameters: ``model_ids`` (loaded models), ``callback(OpEvent)``,
    ``time_info`` (the time-info switch), ``aic_metrics`` (name or id;
    default none), ``fields`` ("acl": numbers via get_op_*; "layout": numbers
    decoded from the record layout with the CRC checked here; names and
    types always come from get_op_name/get_op_type), ``batch`` (records per
    read), ``profiler`` (an npuprof Profiler: events go to its recording
    window), ``device`` (device id for 72-byte records, which carry none),
    ``context`` (acl context the reader thread sets, as the sample does),
    ``clock`` ("monotonic": record times are CLOCK_MONOTONIC µs, converted to
    epoch for the event table; "epoch": already wall clock), ``keep_events``
    (keep at most this many OpEvents in memory; older ones are dropped from
    :attr:`events`, never from the event table), ``stop_timeout`` (seconds to
    wait for the library to close the pipe after the last unsubscribe).
    """

    def __init__(self, model_ids: Iterable[int], *, callback: Optional[Callable[[OpEvent], Any]] = None,
                 time_info: bool = True, aic_metrics: Any = None, fields: str = "acl", batch: int = 10,
                 profiler: Any = None, device: int = 0, context: Optional[int] = None, clock: str = "monotonic",
                 keep_events: int = 1_000_000, stop_timeout: float = 5.0, acl: Optional[ModuleType] = None) -> None:
        ids = list(model_ids) if not isinstance(model_ids, int) else [model_ids]
        if not ids or any(isinstance(m, bool) or not isinstance(m, int) for m in ids):
            raise ProfilerConfigError("model_ids", model_ids, "a non-empty list of model ids (int)")
        if len(set(ids)) != len(ids):
            raise ProfilerConfigError("model_ids", model_ids, "distinct model ids")
        if callback is not None and not callable(callback):
            raise ProfilerConfigError("callback", callback, "a callable or None")
        if fields not in ("acl", "layout"):
            raise ProfilerConfigError("fields", fields, "'acl' or 'layout'")
        if clock not in ("monotonic", "epoch"):
            raise ProfilerConfigError("clock", clock, "'monotonic' or 'epoch'")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ProfilerConfigError("batch", batch, "an integer >= 1")
        if aic_metrics is None:
            metrics = C.ACL_AICORE_NONE
        elif isinstance(aic_metrics, int) and aic_metrics in C.AICORE_METRICS_NAMES:
            metrics = aic_metrics
        elif aic_metrics in C.AICORE_METRICS_BY_NAME:
            metrics = C.AICORE_METRICS_BY_NAME[aic_metrics]
        else:
            raise ProfilerConfigError("aic_metrics", aic_metrics, "an AI Core metric name or id")
        self.model_ids = ids
        self.callback = callback
        self.time_info = bool(time_info)
        self.aicore_metrics = metrics
        self.fields = fields
        self.batch = batch
        self.profiler = profiler
        self.device = int(device)
        self.context = context
        self.clock = clock
        self.keep_events = int(keep_events)
        self.stop_timeout = float(stop_timeout)
        self.events: list[OpEvent] = []
        self.errors: list[str] = []
        self.records_read = 0
        self._acl = acl
        self._prof: Optional[CheckedProf] = None
        self._tables: list[EventTable] = []
        self._anchor = ClockAnchor.now()
        self._r = self._w = -1
        self._pipe_ino = None
        self._sub_config = 0
        self._subscribed: list[int] = []
        self._thread: Optional[threading.Thread] = None
        self._stopping = threading.Event()
        self._deadline = 0.0
        self._eof = False
        self._started = False
        self._desc_size = 0

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> "OpSubscriber":
        """Pipe, subscribe config, model_subscribe for each model, reader thread."""
        global _active
        with _active_lock:
            if _active is not None and _active is not self:
                raise ProfilerStateError("another OpSubscriber is active in this process; pyACL keeps the "
                                         "subscription fd in a process-wide table, so subscribe all models "
                                         "through one OpSubscriber")
            if self._started:
                raise ProfilerStateError("this OpSubscriber was already started")
            _active = self
        try:
            self._start()
        except BaseException:
            self._teardown(raise_errors=False)
            with _active_lock:
                _active = None
            raise
        return self

    def _start(self) -> None:
        self._prof = prof = shared_prof(self._acl)
        track_acl(prof.acl)
        prof.check_get("acl.prof.get_op_desc_size")
        self._desc_size = prof.get_op_desc_size()
        self._r, self._w = os.pipe()
        self._pipe_ino = os.fstat(self._r).st_ino
        self._started = True
        self._sub_config = prof.create_subscribe_config(int(self.time_info), self.aicore_metrics, self._w)
        self._thread = threading.Thread(target=self._reader, name="npuprof-acl-subscriber", daemon=True)
        self._thread.start()
        for model_id in self.model_ids:
            prof.model_subscribe(model_id, self._sub_config)
            self._subscribed.append(model_id)

    def stop(self) -> None:
        """Unsubscribe everything, end the reader, release the pipe and the config.

        Always completes the teardown; raises the first unsubscribe error
        afterwards (none when the library accepted every call).
        """
        self._teardown(raise_errors=True)

    def _teardown(self, raise_errors: bool) -> None:
        global _active
        first: Optional[BaseException] = None
        prof = self._prof
        for model_id in list(self._subscribed):
            try:
                prof.model_unsubscribe(model_id)
            except AclProfilingError as e:
                first = first or e
                self.errors.append(str(e))
            self._subscribed.remove(model_id)
        self._deadline = time.monotonic() + self.stop_timeout
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(self.stop_timeout + 1.0)
            if self._thread.is_alive():  # cannot happen with the poll loop; say so if it does
                msg = "the subscription reader thread did not stop"
                self.errors.append(msg)
                first = first or ProfilerStateError(msg)
        self._close_write_end_if_ours()
        if self._r >= 0:
            os.close(self._r)
            self._r = -1
        if self._sub_config and prof is not None:
            try:
                prof.destroy_subscribe_config(self._sub_config)
            except AclProfilingError as e:
                first = first or e
                self.errors.append(str(e))
            self._sub_config = 0
        with _active_lock:
            if _active is self:
                _active = None
        if first is not None and raise_errors:
            raise first

    def _close_write_end_if_ours(self) -> None:
        """Close the write fd unless the library closed it (it does on the last unsubscribe).

        The fd number could have been reused after the library closed it, so
        it is closed only while it still refers to this very pipe.
        """
        if self._w < 0:
            return
        try:
            st = os.fstat(self._w)
        except OSError:
            st = None
        if st is not None and st.st_ino == self._pipe_ino and not self._eof:
            os.close(self._w)
        self._w = -1

    @property
    def reader_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> "OpSubscriber":
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc_type is None:
            self.stop()
        else:
            try:
                self._teardown(raise_errors=False)
            except Exception as e:  # the model's error is the one the user must see
                log.warning("npuprof: subscription teardown after an error failed: %s", e)
        return False

    # -- reader -------------------------------------------------------------------------
    def _reader(self) -> None:
        if self.context is not None:
            ret = self._prof.acl.rt.set_context(self.context)
            if ret != 0:
                self.errors.append(f"acl.rt.set_context returned {ret} in the reader thread")
        size = self._desc_size
        poller = select.poll()
        poller.register(self._r, select.POLLIN | select.POLLHUP)
        pending = b""
        while True:
            if not poller.poll(50):
                if self._stopping.is_set() and time.monotonic() >= self._deadline:
                    break  # the library never closed the write end
                continue
            chunk = os.read(self._r, size * self.batch)
            if not chunk:
                self._eof = True
                break
            pending += chunk
            whole = len(pending) - len(pending) % size
            if whole:
                data, pending = pending[:whole], pending[whole:]
                try:
                    self._handle(data)
                except Exception as e:  # keep draining: a stuck pipe would block the model
                    self.errors.append(f"{type(e).__name__}: {e}")
                    log.warning("npuprof: op records dropped: %s", e)
        if pending:
            self.errors.append(f"{len(pending)} trailing bytes do not form a whole {size}-byte record")

    def _handle(self, data: bytes) -> None:
        prof = self._prof
        p = prof.prof
        arr = np.frombuffer(data, dtype=np.uint8).copy()
        ptr = prof.acl.util.numpy_to_ptr(arr)
        n_bytes = len(data)
        if self.fields == "layout":
            recs = decode_records(data, self._desc_size)
            n = len(recs)
        else:
            n, ret = p.get_op_num(ptr, n_bytes)
            if ret != 0:
                raise AclProfilingError.from_return("acl.prof.get_op_num", ret, "VALID_ARGUMENT",
                                                    "the record buffer was rejected (size or CRC)")
        out = []
        for i in range(n):
            op_type = _get_string(p, "type", ptr, n_bytes, i, C.ACL_PROF_MAX_OP_TYPE_LEN)
            op_name = _get_string(p, "name", ptr, n_bytes, i, C.ACL_PROF_SAMPLE_OP_NAME_LEN)
            if self.fields == "layout":
                r = recs[i]
                ev = OpEvent(int(r["modelId"]), op_name, op_type, int(r["start"]), int(r["end"]),
                             int(r["duration"]), int(r["threadId"]),
                             int(r["devId"]) if "devId" in recs.dtype.names else self.device)
            else:
                ev = OpEvent(int(p.get_model_id(ptr, n_bytes, i)), op_name, op_type,
                             int(p.get_op_start(ptr, n_bytes, i)), int(p.get_op_end(ptr, n_bytes, i)),
                             int(p.get_op_duration(ptr, n_bytes, i)), 0, self.device)
            out.append(ev)
        self.records_read += n
        self._deliver(out)

    def _deliver(self, ops: list) -> None:
        if not ops:
            return
        self.events.extend(ops)
        if len(self.events) > self.keep_events:
            del self.events[:len(self.events) - self.keep_events]
        table = events_table(ops, self._anchor if self.clock == "monotonic" else None)
        session = getattr(self.profiler, "current_session", None) if self.profiler is not None else None
        if session is not None:
            try:
                session.record_events(table)
            except Exception as e:
                self.errors.append(f"recording op events failed: {e}")
        else:
            self._tables.append(table)
        if self.callback is not None:
            for ev in ops:
                try:
                    self.callback(ev)
                except Exception as e:  # a user callback bug must not stop the draining
                    self.errors.append(f"callback failed: {type(e).__name__}: {e}")

    def table(self) -> EventTable:
        """Op events not handed to a profiler session, as one event table."""
        return EventTable.concat(self._tables)


def _get_string(p: Any, what: str, ptr: int, n_bytes: int, index: int, default_len: int) -> str:
    len_fn = getattr(p, f"get_op_{what}_len", None)
    size = default_len
    if len_fn is not None:
        size, ret = len_fn(ptr, n_bytes, index)
        if ret != 0:
            raise AclProfilingError.from_return(f"acl.prof.get_op_{what}_len", ret, "VALID_ARGUMENT",
                                                f"record {index}")
    text, ret = getattr(p, f"get_op_{what}")(ptr, n_bytes, index, int(size))
    if ret != 0:
        raise AclProfilingError.from_return(f"acl.prof.get_op_{what}", ret, "VALID_ARGUMENT", f"record {index}")
    return text


def events_table(ops: list, anchor: Optional[ClockAnchor]) -> EventTable:
    """OpEvents -> KERNEL events (device ops) of the npuprof event table.

    ``anchor`` converts CLOCK_MONOTONIC µs to epoch ns; None: already epoch.
    """
    start_ns = np.fromiter((o.start_us for o in ops), dtype=np.int64, count=len(ops)) * 1000
    end_ns = np.fromiter((o.end_us for o in ops), dtype=np.int64, count=len(ops)) * 1000
    dur_field = np.fromiter((o.duration_us for o in ops), dtype=np.int64, count=len(ops)) * 1000
    dur = np.where(end_ns > start_ns, end_ns - start_ns, dur_field)
    ts = start_ns + (anchor.offset_ns if anchor is not None else 0)
    return EventTable.from_records(
        ts=ts, dur=dur, kind=int(EventKind.KERNEL), pid=os.getpid(),
        tid=[o.thread_id for o in ops], device=[max(o.device, -1) for o in ops],
        name=[o.op_name for o in ops], type=[o.op_type for o in ops], source=SOURCE,
        args=[json.dumps({"Model ID": o.model_id, "duration_us": o.duration_us, "subscription": True})
              for o in ops])


def read_records_file(path: Any, size: int) -> np.ndarray:
    """Decode a file of raw op records (e.g. a pipe dump); raises ProfilerDataError."""
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        return decode_records(data, size)
    except ProfilerDataError as e:
        raise ProfilerDataError(path, e.problem) from None
