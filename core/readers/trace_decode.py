"""Decode a Chrome/Kineto trace's events straight into column lists: only the fields the readers use, never
a Python dict per event where msgspec is installed.

With msgspec (the ``fast`` extra) the file is decoded into typed structs holding only ``ph``, ``cat``,
``name``, ``pid``, ``tid``, ``ts``, ``dur`` and ``args.correlation/device/stream/labels`` (everything else is
skipped by the parser, not built); without it, or when the file does not fit those types (an ``args`` that
is not an object, a bare event list ...), orjson decodes it and the same columns are taken from its dicts.
Both give the same :class:`TraceColumns` (docs/performance.md: the parsers measured).

:func:`scan_trace` is the Kineto reader's faster twin of :func:`decode_trace` (and :func:`scan_gzip_chunks` of
:func:`decode_gzip_trace`): the compiled scanner (``_tracescan.c``) reads the same fields straight into arrays,
names and categories as codes into one list of distinct texts (:class:`ScannedTrace`); it declines (None) any
file the structs would read otherwise, and then the decoder reads it.

:func:`decode_events` is the same decoder for readers that need every event and whole ``args`` (torch_npu's
and MindSpore's ``trace_view.json``): one list per field of every event, ``args`` kept as its JSON text
(``msgspec.Raw``) and parsed by orjson only for the events whose args are used, so the values are orjson's.
:func:`scan_event_array` is that reader's compiled twin of :func:`event_array_chunks`' structs: the read
events as arrays, names and categories coded, each distinct args text once (:class:`ScannedEvents`); it
declines (None) any file the structs would read otherwise and any event the reader's per-event rules take.

Example::

    cols = decode_trace(raw_bytes)
    cols.ts[:3], cols.cat[:3], cols.other
    events = decode_events(raw_bytes)
    events.ph[:3], events.args_of(0)
"""
from __future__ import annotations

import gc
import gzip
import json
import mmap
import os
import queue
import re
import threading
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any, Iterator, Optional, Union

import numpy as np
import orjson

from ..compiled import load_compiled
from .time_text import INT64_BOUNDS, us_text_to_ns_or_none

try:   # the optional fast path (pyproject extra "fast")
    import msgspec
except ImportError:    # pragma: no cover - exercised by NPUPROF_TRACE_DECODER=orjson in the tests
    msgspec = None  # type: ignore[assignment]

# NPUPROF_TRACE_DECODER=orjson forces the fallback (tests run both; a user can rule msgspec out)
DECODER_ENV = "NPUPROF_TRACE_DECODER"
# the compiled Kineto scanner, or None: not built here, or NPUPROF_PURE_PYTHON set (see npuprof.compiled)
_scanner = load_compiled("npuprof.readers._tracescan")


@dataclass
class TraceColumns:
    """The complete (``ph == "X"``) events of a trace as one list per field, in file order, values as the
    file has them (None where absent; ``cat``/``name`` ``""`` and ``dur`` 0 where absent); ``labels`` the
    ``process_labels`` metadata events as (pid, labels); ``other`` the number of entries that are not
    complete events; ``doc`` the top-level keys but ``traceEvents``."""

    ts: list = field(default_factory=list)
    dur: list = field(default_factory=list)
    cat: list = field(default_factory=list)
    name: list = field(default_factory=list)
    pid: list = field(default_factory=list)
    tid: list = field(default_factory=list)
    correlation: list = field(default_factory=list)
    device: list = field(default_factory=list)
    stream: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    other: int = 0
    doc: dict = field(default_factory=dict)
    decoder: str = ""


if msgspec is not None:
    class _Args(msgspec.Struct, gc=False):     # no cycles: not tracked, the collector never walks millions
        correlation: Any = None
        device: Any = None
        stream: Any = None
        labels: Any = ""

    class _Event(msgspec.Struct, gc=False):
        ph: Any = None
        cat: Any = ""
        name: Any = ""
        pid: Any = None
        tid: Any = None
        ts: Any = None
        dur: Any = 0
        args: Optional[_Args] = None

    class _Doc(msgspec.Struct):
        traceEvents: list[_Event]
        baseTimeNanoseconds: Any = None
        distributedInfo: Any = None
        deviceProperties: Any = None

    _DECODER = msgspec.json.Decoder(_Doc)
    _EVENTS_DECODER = msgspec.json.Decoder(list[_Event])
    _NO_ARGS = _Args()

    _NULL = msgspec.Raw(b"null")

    class _AnyEvent(msgspec.Struct, gc=False):
        """Any event, ``args`` as its JSON text (parsed only where a reader uses it)."""
        ph: Any = None
        cat: Any = None
        name: Any = ""
        pid: Any = None
        tid: Any = None
        ts: Any = None
        dur: Any = 0
        id: Any = None
        args: msgspec.Raw = _NULL

    class _AnyDoc(msgspec.Struct):
        traceEvents: list[_AnyEvent]

    _ANY_DECODER = msgspec.json.Decoder(Union[list[_AnyEvent], _AnyDoc])
    _ANY_EVENTS_DECODER = msgspec.json.Decoder(list[_AnyEvent])


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for the block, as it was after it.

    A reader builds millions of objects without cycles (column lists, row tuples); each full collection
    the allocations trigger walks every one of them again (half of the trace_view reader's time).

    Example::

        with collector_paused():
            events = decode_events(raw)
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class TraceDecodeError(ValueError):
    """The bytes are not JSON."""


class NoTraceEvents(TraceDecodeError):
    """JSON, but no ``traceEvents`` list (nor a bare event list)."""


@dataclass
class TraceEvents:
    """Every entry of a trace's event list as one list per field, in file order, values as the file has them
    (None where absent; ``name`` ``""`` and ``dur`` 0 where absent); ``args`` each event's args as JSON text
    (msgspec) or as orjson gave them (see :meth:`args_of`); an entry that is not a JSON object has ``ph``
    None and is counted in ``not_objects``."""

    ph: list = field(default_factory=list)
    cat: list = field(default_factory=list)
    name: list = field(default_factory=list)
    pid: list = field(default_factory=list)
    tid: list = field(default_factory=list)
    ts: list = field(default_factory=list)
    dur: list = field(default_factory=list)
    id: list = field(default_factory=list)
    args: list = field(default_factory=list)
    not_objects: int = 0
    decoder: str = ""

    def __len__(self) -> int:
        return len(self.ph)

    def args_of(self, i: int) -> Any:
        """The ``args`` of event ``i`` as orjson parses it (None where absent)."""
        a = self.args[i]
        return orjson.loads(bytes(a)) if self.decoder == "msgspec" else a

    def release(self) -> None:
        """Drop every column (and with ``args`` the file's bytes they point into): for a reader done with them."""
        for name in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args"):
            setattr(self, name, [])

    def dicts(self, indices: Any, with_args: bool = True) -> list[dict]:
        """The events ``indices`` as the dicts a JSON parser gives (the keys read here, absent or null ones
        left out; ``args`` only ``with_args``)."""
        out = []
        for i in indices:
            ev = {k: v for k, v in (("ph", self.ph[i]), ("cat", self.cat[i]), ("pid", self.pid[i]),
                                    ("tid", self.tid[i]), ("ts", self.ts[i]), ("id", self.id[i]))
                  if v is not None}
            ev["name"] = self.name[i]
            args = self.args_of(i) if with_args else None
            if args is not None:
                ev["args"] = args
            out.append(ev)
        return out


def decode_events(raw: Union[bytes, memoryview]) -> TraceEvents:
    """Every event of the trace ``raw`` (a JSON event list, or an object with ``traceEvents``) as columns.

    Raises :class:`TraceDecodeError` (orjson's message) when ``raw`` is not JSON orjson reads, and
    :class:`NoTraceEvents` when it holds no event list.
    """
    if decoder_name() == "msgspec":
        try:
            typed = _ANY_DECODER.decode(raw)
        except msgspec.MsgspecError:
            pass     # another shape (an entry not an object ...), or not JSON: orjson below says which
        else:
            events = typed if isinstance(typed, list) else typed.traceEvents
            return events_of_structs(events)
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise TraceDecodeError(str(e)) from None
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise NoTraceEvents("holds no event list")
    return _events_from_dicts(events)


# pieces of an event array decoded at a time: the structs of ~40k torch_npu events
ARRAY_CHUNK_BYTES = 8 << 20


class ChunksRefused(TraceDecodeError):
    """The file does not decode chunk by chunk (not a JSON event array, an entry msgspec refuses, damage):
    the caller decodes it whole (:func:`decode_events`), which says what is wrong with it, if anything."""


def event_array_chunks(path: Path, chunk_bytes: Optional[int] = None) -> Iterator[list]:
    """The events of the JSON event array in the file ``path`` (torch_npu's and MindSpore's
    ``trace_view.json``), ``chunk_bytes`` of the file at a time: read piece by piece, cut between two events
    (``},{``), each piece decoded by msgspec and handed over before the next is read, so neither the whole
    file's bytes nor every event's structs are in memory at once. Each chunk is msgspec's list of event
    structs (the fields as attributes, ``args`` a ``msgspec.Raw``), for a reader that takes only some fields
    of some events; :func:`events_of_structs` gives them as :func:`decode_events` does.

    Raises :class:`ChunksRefused` (possibly after some chunks were given) when msgspec is not used, the
    file is not an array, or a piece does not decode: a cut inside a string or a nested value leaves it
    open, so a wrong cut is always seen.

    Example::

        for structs in event_array_chunks(Path("trace_view.json")):
            [e.ph for e in structs[:3]], events_of_structs(structs[:1]).args_of(0)
    """
    if decoder_name() != "msgspec":
        raise ChunksRefused("msgspec is not used")
    chunk_bytes = chunk_bytes or ARRAY_CHUNK_BYTES
    with open(path, "rb") as fh:
        buf = bytearray(fh.read(chunk_bytes))
        start = len(buf) - len(buf.lstrip())
        if buf[start:start + 1] != b"[":
            raise ChunksRefused("not a JSON array")
        del buf[:start + 1]
        while True:
            block = fh.read(chunk_bytes)
            if not block:
                yield _decode_chunk(b"[" + bytes(buf))     # the rest closes the array
                return
            buf += block
            cut = _last_boundary(buf)
            if cut < 0:
                continue
            text = b"[" + bytes(memoryview(buf)[:cut + 1]) + b"]"
            del buf[:cut + 1]
            del buf[:buf.index(b",") + 1]
            yield _decode_chunk(text)
            del text


def _decode_chunk(text: bytes) -> list:
    try:
        return _ANY_EVENTS_DECODER.decode(text)
    except msgspec.MsgspecError as e:
        raise ChunksRefused(str(e)) from None


def events_of_structs(events: list) -> TraceEvents:
    """msgspec's event structs (:func:`event_array_chunks`) as :func:`decode_events` gives them."""
    def column(name: str) -> list:
        return list(map(attrgetter(name), events))

    return TraceEvents(ph=column("ph"), cat=column("cat"), name=_one_each(column("name")), pid=column("pid"),
                       tid=column("tid"), ts=column("ts"), dur=column("dur"), id=column("id"), args=column("args"),
                       decoder="msgspec")


def _one_each(texts: list) -> list:
    """``texts`` with equal strings made one object (a trace repeats its names: one copy each in memory)."""
    seen: dict = {}
    return [seen.setdefault(t, t) if type(t) is str else t for t in texts]


def _events_from_dicts(events: list) -> TraceEvents:
    objects = [e if isinstance(e, dict) else {"ph": None} for e in events]
    return TraceEvents(ph=[e.get("ph") for e in objects], cat=[e.get("cat") for e in objects],
                       name=[e.get("name", "") for e in objects], pid=[e.get("pid") for e in objects],
                       tid=[e.get("tid") for e in objects], ts=[e.get("ts") for e in objects],
                       dur=[e.get("dur", 0) for e in objects], id=[e.get("id") for e in objects],
                       args=[e.get("args") for e in objects], not_objects=len(events) - sum(map(_is_dict, events)),
                       decoder="orjson")


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def decode_json(raw: bytes) -> Any:
    """``json.loads(raw.decode("utf-8"))``: the same objects, decoded by msgspec where it takes the text
    (1.5-2.5x faster on a real CANN timeline); what msgspec refuses (NaN, Infinity, lone surrogates, damage) goes to ``json``,
    which accepts or raises exactly as it always did.

    Example::

        >>> decode_json(b'[{"ph": "X", "ts": 1.5}]')
        [{'ph': 'X', 'ts': 1.5}]
    """
    if decoder_name() == "msgspec":
        try:
            return msgspec.json.decode(raw)
        except (msgspec.MsgspecError, UnicodeDecodeError):
            pass
    return json.loads(raw.decode("utf-8"))


def decoder_name() -> str:
    """The decoder :func:`decode_trace` uses: ``msgspec`` where installed and not ruled out, else ``orjson``."""
    if msgspec is None or os.environ.get(DECODER_ENV, "").lower() == "orjson":
        return "orjson"
    return "msgspec"


def decode_trace(raw: Union[bytes, memoryview]) -> TraceColumns:
    """The trace ``raw`` (JSON bytes: an object with ``traceEvents``, or a bare event list) as columns.

    Raises :class:`TraceDecodeError` when ``raw`` is not JSON or holds no event list.
    """
    if decoder_name() == "msgspec":
        try:
            typed = _DECODER.decode(raw)
        except msgspec.ValidationError:
            pass     # valid JSON of another shape: orjson below takes it as it is
        except msgspec.DecodeError:
            pass     # maybe JSON only Python's json takes (NaN, Infinity, huge integers): decided below
        else:
            return _from_structs(typed)
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            doc = json.loads(bytes(raw))
        except (ValueError, RecursionError) as e:
            raise TraceDecodeError(f"{type(e).__name__}: {e}") from None
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise NoTraceEvents("holds no traceEvents list")
    return _from_dicts(doc)


@dataclass
class ScannedTrace:
    """The complete events of a trace as the compiled scanner reads them, in file order: what
    :class:`TraceColumns` holds, as arrays. ``ts_ns``/``dur_ns`` are ``round(v * 1000)`` of ts/dur where
    ``usable`` (both numbers, not bools, finite, below 9e15 µs, dur >= 0; else 0), without the file's base
    time; ``cat``/``name`` codes into ``texts``; ``ints`` the pid, tid, ``args.correlation/device/stream``
    columns (n x 5), each usable where its bit of ``ints_ok`` is set (a JSON integer within int64, else 0)."""

    ts_ns: np.ndarray
    dur_ns: np.ndarray
    usable: np.ndarray
    cat: np.ndarray
    name: np.ndarray
    texts: list
    ints: np.ndarray
    ints_ok: np.ndarray
    labels: list
    other: int
    doc: dict


def scan_trace(raw: Union[bytes, memoryview]) -> Optional[ScannedTrace]:
    """The trace ``raw`` as :class:`ScannedTrace`, or None where the scanner is not in use (not built,
    ``NPUPROF_PURE_PYTHON``, no msgspec or ``NPUPROF_TRACE_DECODER=orjson``) or declines the file (anything
    :func:`decode_trace`'s structs would read otherwise, or refuse): then :func:`decode_trace` reads it.

    Example::

        scanned = scan_trace(raw_bytes)
        cols = decode_trace(raw_bytes) if scanned is None else None
    """
    if _scanner is None or decoder_name() != "msgspec":
        return None
    return _scanned(_scanner.scan(raw, msgspec.json.decode))


@dataclass
class ScannedEvents:
    """The events of a trace_view.json (a JSON event array) as the compiled scanner reads them
    (``_tracescan.c``'s ``scan_array``). The read events (phase ``X``, ``C``, ``i``, ``I``), in file order,
    as arrays: ``phase`` 0 X, 1 C, 2 i/I; ``ts_ns``/``dur_ns`` ``us_text_to_ns`` of ts/dur (dur 0 but for
    complete events); ``pid``/``tid``; ``name``/``cat`` codes into ``texts`` (``cat`` -1 where None);
    ``arg`` codes into ``args``, each distinct args' JSON text (``b"null"`` where absent); ``pidc`` codes into
    ``pids``, the distinct pids in order of first appearance. ``meta`` and
    ``flows``: the structs of the ``M`` events and of the ``s``/``f`` events, as :func:`event_array_chunks`
    gives them; ``entries``: every entry of the array."""

    entries: int
    phase: np.ndarray
    ts_ns: np.ndarray
    dur_ns: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    pidc: np.ndarray
    pids: list
    name: np.ndarray
    cat: np.ndarray
    texts: list
    arg: np.ndarray
    args: list
    meta: list
    flows: list


def scan_event_array(raw: Union[bytes, memoryview]) -> Optional[ScannedEvents]:
    """The event array ``raw`` (a trace_view.json) as :class:`ScannedEvents`, or None where the scanner is not
    in use (as :func:`scan_trace`) or declines the file: anything :func:`event_array_chunks`' structs would
    read otherwise or refuse, and any read event the per-event rules would take (a pid that is not an
    integer, a time ``us_text_to_ns`` does not read ...: ``CompactTrace``'s odd events). Then the caller
    decodes the file as before.

    Example::

        scanned = scan_event_array(Path("trace_view.json").read_bytes())
        scanned is None or scanned.texts[scanned.name[0]]
    """
    if _scanner is None or decoder_name() != "msgspec":
        return None
    got = _scanner.scan_array(raw, msgspec.json.decode)
    if got is None:
        return None
    entries, n, phase, ts, dur, pid, tid, pidc, pids, name, cat, texts, arg, args, fixups, meta, flows = got
    ts_ns, dur_ns = np.frombuffer(ts, np.int64), np.frombuffer(dur, np.int64)
    if fixups:      # the times given in another form: us_text_to_ns of the value the structs hold
        ts_ns, dur_ns = ts_ns.copy(), dur_ns.copy()
        lo, hi = INT64_BOUNDS
        for row, which, text in fixups:
            try:
                ns = us_text_to_ns_or_none(msgspec.json.decode(text))
            except (msgspec.MsgspecError, UnicodeDecodeError):
                return None
            if ns is None or not lo <= ns < hi:
                return None      # an odd event: the per-event rules read the file
            (dur_ns if which else ts_ns)[row] = ns
    try:
        meta_structs, flow_structs = _ANY_EVENTS_DECODER.decode(meta), _ANY_EVENTS_DECODER.decode(flows)
    except msgspec.MsgspecError:
        return None
    return ScannedEvents(entries=entries, phase=np.frombuffer(phase, np.uint8), ts_ns=ts_ns, dur_ns=dur_ns,
                         pid=np.frombuffer(pid, np.int64), tid=np.frombuffer(tid, np.int64),
                         pidc=np.frombuffer(pidc, np.int32), pids=pids,
                         name=np.frombuffer(name, np.int32), cat=np.frombuffer(cat, np.int32), texts=texts,
                         arg=np.frombuffer(arg, np.int32), args=args, meta=meta_structs, flows=flow_structs)


def scan_event_array_file(path: Path) -> Optional[ScannedEvents]:
    """:func:`scan_event_array` of the file ``path``, mapped (not read into our heap); None also where it
    cannot be mapped (empty, not a regular file): the caller's decoder then says what is wrong with it."""
    if _scanner is None or decoder_name() != "msgspec":
        return None
    try:
        with open(path, "rb") as fh:
            if not os.fstat(fh.fileno()).st_size:
                return None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped, memoryview(mapped) as view:
                return scan_event_array(view)
    except (OSError, ValueError):
        return None


def _scanned(scanned: Optional[tuple]) -> Optional[ScannedTrace]:
    """The scanner's tuple (see ``_tracescan.c``) as :class:`ScannedTrace`; None as it declined."""
    if scanned is None:
        return None
    decode = msgspec.json.decode
    n, ts, dur, usable, cat, name, ints, ok, texts, meta, other, doc_texts = scanned
    try:   # what the structs' Any fields hold: msgspec's values of the same texts
        doc = {k: decode(doc_texts[k]) if k in doc_texts else None
               for k in ("baseTimeNanoseconds", "distributedInfo", "deviceProperties")}
        labels = [(decode(pid) if pid is not None else None, decode(lab) if lab is not None else "")
                  for code, pid, lab in meta if code >= 0 and texts[code] == "process_labels"]
    except (msgspec.MsgspecError, UnicodeDecodeError):
        return None
    return ScannedTrace(ts_ns=np.frombuffer(ts, np.int64), dur_ns=np.frombuffer(dur, np.int64),
                        usable=np.frombuffer(usable, np.bool_), cat=np.frombuffer(cat, np.int32),
                        name=np.frombuffer(name, np.int32), texts=texts,
                        ints=np.frombuffer(ints, np.int64).reshape(n, 5), ints_ok=np.frombuffer(ok, np.uint8),
                        labels=labels, other=other, doc=doc)


def _from_structs(doc: Any) -> TraceColumns:
    events = doc.traceEvents
    complete = [e for e in events if e.ph == "X"]

    def column(name: str, rows: list) -> list:      # map + attrgetter: the loop runs in C
        return list(map(attrgetter(name), rows))

    args = column("args", complete)
    if None in args:
        args = [_NO_ARGS if a is None else a for a in args]
    out = TraceColumns(
        ts=column("ts", complete), dur=column("dur", complete), cat=column("cat", complete),
        name=column("name", complete), pid=column("pid", complete), tid=column("tid", complete),
        correlation=column("correlation", args), device=column("device", args), stream=column("stream", args),
        other=len(events) - len(complete),
        doc={"baseTimeNanoseconds": doc.baseTimeNanoseconds, "distributedInfo": doc.distributedInfo,
             "deviceProperties": doc.deviceProperties},
        decoder="msgspec")
    out.labels = [(e.pid, e.args.labels if e.args is not None else "") for e in events
                  if e.ph == "M" and e.name == "process_labels"]
    return out


def _from_dicts(doc: dict) -> TraceColumns:
    events = doc["traceEvents"]
    complete = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]
    args = [a if isinstance(a := e.get("args"), dict) else None for e in complete]
    out = TraceColumns(
        ts=[e.get("ts") for e in complete], dur=[e.get("dur", 0) for e in complete],
        cat=[e.get("cat", "") for e in complete], name=[e.get("name", "") for e in complete],
        pid=[e.get("pid") for e in complete], tid=[e.get("tid") for e in complete],
        correlation=[a.get("correlation") if a is not None else None for a in args],
        device=[a.get("device") if a is not None else None for a in args],
        stream=[a.get("stream") if a is not None else None for a in args],
        other=len(events) - len(complete),
        doc={k: v for k, v in doc.items() if k != "traceEvents"}, decoder="orjson")
    out.labels = [(e.get("pid"), e["args"].get("labels", "") if isinstance(e.get("args"), dict) else "")
                  for e in events if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_labels"]
    return out


# -- gzip: decompressed in a thread, decoded chunk by chunk beside it --------------------------------------
CHUNK_BYTES = 16 << 20
# Decoded in chunks from this compressed size on (~0.5-1 GB of text): half the peak memory (0.95 instead of
# 1.95 GB for a 656 MB trace), but on 2 loaded cores 30-60% slower than decompressing first, as the
# decoder holds the GIL and the thread has no free core (docs/performance.md); below it, whole.
CHUNKED_FROM_BYTES = 64 << 20
# With the compiled scanner (scan_gzip_chunks) chunks cost no time: on the 25x trace gzipped (50 MB) the reader
# took 3.7-3.9 s of CPU in chunks against 3.8 s decompressing first, peak RSS 387 MB against 1.38 GB; so
# from this size on a gzipped trace is scanned in chunks. Below it the text is decompressed whole first: a
# Kineto trace compresses ~18x (a 157 MB one to 8.7 MB), so that text can be up to ~150 MB, several chunks.
SCANNED_IN_CHUNKS_FROM_BYTES = 8 << 20
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BOUNDARY_BEFORE = re.compile(rb"\}\s*,\s*\{\Z")


class _Chunked(Exception):
    """The stream does not split as expected: the caller decodes the whole file instead."""


def _decompressed(path: Path, out: "queue.Queue", stop: threading.Event) -> None:
    """Put the gunzipped bytes of ``path`` in ``out`` piece by piece (every member), then None; an error
    as the exception. zlib works without the GIL, so this runs beside the decoding."""
    try:
        with open(path, "rb") as fh:
            inflater = zlib.decompressobj(wbits=31)
            while not stop.is_set():
                block = fh.read(1 << 20)      # ~8 MB of text: the first events decode early
                if not block:
                    break
                while block:
                    if inflater.eof:             # the next gzip member
                        inflater = zlib.decompressobj(wbits=31)
                    piece = inflater.decompress(block)
                    if piece:
                        out.put(piece)
                    block = inflater.unused_data if inflater.eof else b""
            if not inflater.eof and not stop.is_set():
                raise EOFError("compressed file ended before the end-of-stream marker")
        out.put(None)
    except BaseException as e:      # handed to the decoding thread, which raises it
        out.put(e)


def decode_gzip_trace(path: Path) -> TraceColumns:
    """The gzipped trace at ``path`` as columns. From :data:`CHUNKED_FROM_BYTES` on it is decompressed in a
    thread while the events already decompressed are decoded (msgspec), chunk by chunk, so that neither
    the whole text nor the events' structs are ever in memory at once; a smaller file, one that does not
    split into event chunks as expected, or any file without msgspec is decompressed, then decoded whole
    (:func:`decode_trace`), with the same result.

    Raises what :func:`gzip.decompress` raises for a damaged gzip stream, and :class:`TraceDecodeError`
    as :func:`decode_trace` does.
    """
    if decoder_name() == "msgspec" and path.stat().st_size >= CHUNKED_FROM_BYTES:
        try:
            return _decode_chunks(path)
        except (_Chunked, OSError, EOFError, zlib.error):
            pass      # decoded whole below: a damaged stream raises there exactly as gzip says it
    return decode_trace(gzip.decompress(path.read_bytes()))


def scan_gzip_chunks(path: Path) -> Optional[ScannedTrace]:
    """The gzipped trace at ``path`` decompressed in a thread while the compiled scanner reads the events
    already out, chunk by chunk (as :func:`decode_gzip_trace` does with msgspec, memory bounded the same way),
    as :class:`ScannedTrace`; None where the scanner is not in use, declines a chunk, the stream does not
    split into event chunks as expected or is damaged: then :func:`decode_gzip_trace` reads the file.
    """
    if _scanner is None or decoder_name() != "msgspec":
        return None
    try:
        with _gunzipped(path) as pieces:
            return _scan_stream(pieces)
    except (_Chunked, OSError, EOFError, zlib.error):
        return None      # decode_gzip_trace reads it: a damaged stream raises there exactly as gzip says it


def _scan_events(text: Union[bytes, bytearray]) -> ScannedTrace:
    """The events of the JSON list body ``text`` (``{...},{...}``), scanned; :class:`_Chunked` where declined."""
    part = _scanned(_scanner.scan(b'{"traceEvents":[' + text + b"]}", msgspec.json.decode))
    if part is None:
        raise _Chunked()
    return part


def _scan_stream(pieces: "queue.Queue") -> ScannedTrace:
    head, buf = _up_to_event_list(pieces)
    parts: list = []
    while True:
        piece = _next_piece(pieces)
        if piece is None:
            break
        buf += piece
        if len(buf) < CHUNK_BYTES:
            continue
        cut = _last_boundary(buf)
        if cut < 0:
            continue
        parts.append(_scan_events(memoryview(buf)[:cut + 1]))
        del buf[:cut + 1]
        del buf[:buf.index(b",") + 1]
    for end, after_event in _list_ends(buf):     # the list closes at the last ] after which the rest scans
        doc = _scanned(_scanner.scan(head + b"[]" + buf[end + 1:], msgspec.json.decode))
        if doc is None:
            continue
        if after_event:
            parts.append(_scan_events(memoryview(buf)[:end]))
        return _joined(parts, doc)
    raise _Chunked()


def _joined(parts: list, doc: ScannedTrace) -> ScannedTrace:
    """The chunks' columns end to end, their codes into one list of texts; the document's keys from ``doc``."""
    index: dict = {}
    cats, names = [], []
    for p in parts:
        remap = np.array([index.setdefault(t, len(index)) for t in p.texts], dtype=np.int32)
        cats.append(remap[p.cat])
        names.append(remap[p.name])

    def joined(key: str, dtype: Any) -> np.ndarray:
        return np.concatenate([getattr(p, key) for p in parts]) if parts else np.zeros(0, dtype)

    return ScannedTrace(ts_ns=joined("ts_ns", np.int64), dur_ns=joined("dur_ns", np.int64),
                        usable=joined("usable", np.bool_),
                        cat=np.concatenate(cats) if parts else np.zeros(0, np.int32),
                        name=np.concatenate(names) if parts else np.zeros(0, np.int32),
                        texts=list(index) or [""], ints=np.concatenate([p.ints for p in parts]) if parts
                        else np.zeros((0, 5), np.int64), ints_ok=joined("ints_ok", np.uint8),
                        labels=[lab for p in parts for lab in p.labels], other=sum(p.other for p in parts),
                        doc=doc.doc)


def _decode_chunks(path: Path) -> TraceColumns:
    with _gunzipped(path) as pieces:
        return _decode_stream(pieces)


@contextmanager
def _gunzipped(path: Path) -> Iterator["queue.Queue"]:
    """The pieces of ``path`` as :func:`_decompressed` puts them, from a thread running while the block does;
    however the block ends, the thread is stopped and has ended when this returns."""
    pieces: queue.Queue = queue.Queue(maxsize=4)
    stop = threading.Event()
    worker = threading.Thread(target=_decompressed, args=(path, pieces, stop), daemon=True,
                              name="npuprof-gunzip")
    worker.start()
    try:
        yield pieces
    finally:
        stop.set()
        while worker.is_alive():      # let the worker finish its put() and see the stop
            try:
                pieces.get(timeout=0.05)
            except queue.Empty:
                pass


def _up_to_event_list(pieces: "queue.Queue") -> tuple[bytes, bytearray]:
    """The stream's bytes before its event list's first event (``head``), and those read after them."""
    buf = bytearray()
    while True:
        piece = _next_piece(pieces)
        if piece is None:
            raise _Chunked()
        buf += piece
        m = _EVENTS_KEY.search(buf)
        if m:
            return bytes(buf[:m.end() - 1]), buf[m.end():]
        if len(buf) > CHUNK_BYTES:
            raise _Chunked()


def _next_piece(pieces: "queue.Queue") -> Optional[bytes]:
    piece = pieces.get()
    if isinstance(piece, BaseException):
        raise piece
    return piece


def _decode_stream(pieces: "queue.Queue") -> TraceColumns:
    head, buf = _up_to_event_list(pieces)
    out = TraceColumns(decoder="msgspec")
    while True:
        piece = _next_piece(pieces)
        if piece is None:
            break
        buf += piece
        if len(buf) < CHUNK_BYTES:
            continue
        cut = _last_boundary(buf)
        if cut < 0:
            continue
        text = bytearray(b"[")
        text += memoryview(buf)[:cut + 1]
        text += b"]"
        _add_chunk(out, _decode_events(text))
        del text
        del buf[:cut + 1]
        del buf[:buf.index(b",") + 1]
    tail = _split_tail(buf, head)
    if tail is None:
        raise _Chunked()
    events, doc = tail
    _add_chunk(out, events)
    out.doc = {"baseTimeNanoseconds": doc.baseTimeNanoseconds, "distributedInfo": doc.distributedInfo,
               "deviceProperties": doc.deviceProperties}
    return out


def _last_boundary(buf: bytearray) -> int:
    """The index of the last ``}`` followed by ``,`` and ``{`` (white space between allowed), else -1."""
    start = len(buf)
    while True:
        start = buf.rfind(b"{", 0, start)
        if start < 0:
            return -1
        m = _BOUNDARY_BEFORE.search(buf, max(0, start - 256), start + 1)
        if m is not None:
            return m.start()


def _decode_events(text: bytearray) -> list:
    # a cut inside a string or a nested value leaves brackets or quotes open: never valid JSON, so a
    # wrong cut is seen here and the whole file is decoded instead
    try:
        return _EVENTS_DECODER.decode(text)
    except msgspec.MsgspecError:
        raise _Chunked() from None


def _split_tail(buf: bytearray, head: bytes) -> Optional[tuple]:
    """(the last events, the document's other keys) of the stream's end ``buf``: the event list closes at
    the last ``]`` after which the rest of the document decodes."""
    for end, _ in _list_ends(buf):
        try:
            doc = _DECODER.decode(head + b"[]" + buf[end + 1:])
            return _EVENTS_DECODER.decode(b"[" + buf[:end] + b"]"), doc
        except msgspec.MsgspecError:
            continue
    return None


def _list_ends(buf: bytearray) -> Iterator[tuple[int, bool]]:
    """Where in ``buf`` (a stream's end, from inside its event list) the event list may close, last first:
    each ``]`` (among its last 64) that follows an event or nothing, with whether it follows an event."""
    end = len(buf)
    for _ in range(64):
        end = buf.rfind(b"]", 0, end)
        if end < 0:
            return
        k = end - 1
        while k >= 0 and buf[k] in b" \t\r\n":
            k -= 1
        if k >= 0 and buf[k] != ord("}"):
            continue       # the list of events ends with an event: this ] closes some other list
        yield end, k >= 0


def _add_chunk(out: TraceColumns, events: list) -> None:
    part = _from_structs(_Events(events))
    for name in ("ts", "dur", "cat", "name", "pid", "tid", "correlation", "device", "stream", "labels"):
        getattr(out, name).extend(getattr(part, name))
    out.other += part.other


class _Events:
    """A chunk of events in :func:`_from_structs`'s shape."""

    def __init__(self, events: list) -> None:
        self.traceEvents = events
        self.baseTimeNanoseconds = self.distributedInfo = self.deviceProperties = None
