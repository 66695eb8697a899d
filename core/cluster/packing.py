"""A rank's summary as one compact byte string: what crosses from a worker (a pool process or a Dask
worker on another host) to the driver.

Layout: a magic tag, three lengths, then

* the summary's small fields (scalars, the per-rank rows of the cluster tables, quality issues, the
  memory summary, third-party analyzers' tables) as one JSON document, numbers as numbers; a tuple, a NaN and a dataclass of the
  summary are tagged (``{"t": [...]}``, ``{"nan": 0}``, ``{"dc": name, "f": {...}}``) and an array is a
  reference into the array section;
* the rank's ``communication.json`` and ``communication_matrix.json`` contents as one JSON document
  (they are plain JSON already: decoded by orjson in C, never walked in Python);
* every numpy array (step columns, alignment keys' times, host series, memory timeline) as its raw
  little-endian bytes, 8-byte aligned.

No pickle: nothing but data crosses, and decoding cannot run code. :func:`pack` and :func:`unpack` are
inverse on every summary :func:`~.worker.summarise_rank` returns.

Example::

    blob = pack(summarise_rank(task))        # in the worker
    summary = unpack(blob, RankSummary)      # in the driver
"""
from __future__ import annotations

import dataclasses
import math
import struct
from typing import Any

import numpy as np
import orjson

from ..analysis.memory import LiveAllocation, MemorySummary, MemoryTimeline, SeriesRange
from ..analysis.table import Table
from ..quality import QualityIssue

MAGIC = b"NPRS1\0\0\0"
_HEAD = struct.Struct("<QQQ")
_CLASSES = {c.__name__: c for c in (QualityIssue, MemoryTimeline, MemorySummary, LiveAllocation, SeriesRange, Table)}
_JSON_FIELDS = ("communication", "communication_matrix")


def pack(summary: Any) -> bytes:
    """The summary (a :class:`~.worker.RankSummary`) as bytes."""
    arrays: list[np.ndarray] = []
    small = {f.name: _encode(getattr(summary, f.name), arrays) for f in dataclasses.fields(summary)
             if f.name not in _JSON_FIELDS}
    descr, offset = [], 0
    for a in arrays:
        descr.append([a.dtype.str, list(a.shape), offset])
        offset += _aligned(a.nbytes)
    head = orjson.dumps({"fields": small, "arrays": descr})
    comm = orjson.dumps([getattr(summary, name) for name in _JSON_FIELDS])
    parts = [MAGIC, _HEAD.pack(len(head), len(comm), offset), head, comm]
    pad = -(len(MAGIC) + _HEAD.size + len(head) + len(comm)) % 8
    parts.append(b"\0" * pad)
    for a in arrays:
        raw = np.ascontiguousarray(a).tobytes()
        parts.append(raw + b"\0" * (_aligned(len(raw)) - len(raw)))
    return b"".join(parts)


def unpack(blob: bytes, cls: Any) -> Any:
    """The summary :func:`pack` made, as a ``cls`` (:class:`~.worker.RankSummary`)."""
    if blob[:len(MAGIC)] != MAGIC:
        raise ValueError("not a packed rank summary")
    pos = len(MAGIC)
    n_head, n_comm, _ = _HEAD.unpack_from(blob, pos)
    pos += _HEAD.size
    head = orjson.loads(blob[pos:pos + n_head])
    comm = orjson.loads(blob[pos + n_head:pos + n_head + n_comm])
    base = pos + n_head + n_comm
    base += -base % 8
    view = memoryview(blob)
    arrays = []
    for dtype, shape, offset in head["arrays"]:
        dt = np.dtype(dtype)
        count = int(np.prod(shape)) if shape else 1
        arrays.append(np.frombuffer(view, dtype=dt, count=count, offset=base + offset).reshape(shape).copy())
    fields = {k: _decode(v, arrays) for k, v in head["fields"].items()}
    fields.update(zip(_JSON_FIELDS, comm))
    return cls(**fields)


def _aligned(n: int) -> int:
    return n + (-n % 8)


def _encode(x: Any, arrays: list) -> Any:
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "biuf":
            x = x.tolist()
            return _encode(x, arrays)
        arrays.append(x)
        return {"nd": len(arrays) - 1}
    if isinstance(x, (str, bool, int)) or x is None:
        return x
    if isinstance(x, (float, np.floating)):
        return {"nan": 0} if math.isnan(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, tuple):
        return {"t": [_encode(v, arrays) for v in x]}
    if isinstance(x, list):
        return [_encode(v, arrays) for v in x]
    if isinstance(x, dict):
        if not all(isinstance(k, str) for k in x):
            raise TypeError(f"a packed summary's dict keys are text: {list(x)[:3]}")
        return {"d": {k: _encode(v, arrays) for k, v in x.items()}}
    if dataclasses.is_dataclass(x) and type(x).__name__ in _CLASSES:
        return {"dc": type(x).__name__, "f": {f.name: _encode(getattr(x, f.name), arrays)
                                              for f in dataclasses.fields(x)}}
    raise TypeError(f"a packed summary holds no {type(x).__name__}")


def _decode(x: Any, arrays: list) -> Any:
    if isinstance(x, list):
        return [_decode(v, arrays) for v in x]
    if not isinstance(x, dict):
        return x
    if "nd" in x:
        return arrays[x["nd"]]
    if "t" in x:
        return tuple(_decode(v, arrays) for v in x["t"])
    if "d" in x:
        return {k: _decode(v, arrays) for k, v in x["d"].items()}
    if "nan" in x:
        return math.nan
    return _CLASSES[x["dc"]](**{k: _decode(v, arrays) for k, v in x["f"].items()})
