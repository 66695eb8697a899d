"""Decode a Chrome/Kineto trace's complete events straight into column lists: only the fields the readers
use, never a Python dict per event where msgspec is installed.

With msgspec (the ``fast`` extra) the file is decoded into typed structs holding only ``ph``, ``cat``,
``name``, ``pid``, ``tid``, ``ts``, ``dur`` and ``args.correlation/device/stream/labels`` (everything else is
skipped by the parser, not built); without it, or when the file does not fit those types (an ``args`` that
is not an object, a bare event list ...), orjson decodes it and the same columns are taken from its dicts.
Both give the same :class:`TraceColumns` (docs/performance.md: the parsers measured).

Example::

    cols = decode_trace(raw_bytes)
    cols.ts[:3], cols.cat[:3], cols.other
"""
from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Optional, Union

import orjson

try:   # the optional fast path (pyproject extra "fast")
    import msgspec
except ImportError:    # pragma: no cover - exercised by NPUPROF_TRACE_DECODER=orjson in the tests
    msgspec = None

# NPUPROF_TRACE_DECODER=orjson forces the fallback (tests run both; a user can rule msgspec out)
DECODER_ENV = "NPUPROF_TRACE_DECODER"


@dataclass
class TraceColumns:
    """The complete (``ph == "X"``) events of a trace as one list per field, in file order, values as the
    file has them (None where absent; ``cat``/``name`` ``""`` and ``dur`` 0 where absent); ``meta`` the
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
    _NO_ARGS = _Args()


class TraceDecodeError(ValueError):
    """The bytes are not JSON."""


class NoTraceEvents(TraceDecodeError):
    """JSON, but no ``traceEvents`` list (nor a bare event list)."""


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
            doc = _DECODER.decode(raw)
        except msgspec.ValidationError:
            pass     # valid JSON of another shape: orjson below takes it as it is
        except msgspec.DecodeError:
            pass     # maybe JSON only Python's json takes (NaN, Infinity, huge integers): decided below
        else:
            return _from_structs(doc)
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


def gunzip_bytes(raw: bytes) -> bytes:
    """``raw`` gunzipped (every member, as :func:`gzip.decompress`)."""
    return gzip.decompress(raw)
