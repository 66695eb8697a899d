"""The event table: every parsed event of a run, as numpy columns.

Collection layers and parser plugins produce :class:`EventTable` fragments;
analysis concatenates them and works on whole columns, never on one Python
object per event.

Columns (all the same length):

=========  =======  =====================================================
column     dtype    meaning
=========  =======  =====================================================
ts         int64    start, ns since the Unix epoch (one time base per run)
dur        int64    duration in ns (0 for marks and counters)
kind       uint8    :class:`EventKind`
pid        int64    process id (or synthetic id of a device process)
tid        int64    thread id, or stream id for device events
device     int16    device id, -1 for host events
stream     int32    device stream id, -1 when none
value      float64  counter value (COUNTER), bytes (MEMORY), else 0
step       int32    step number the event belongs to, -1 when unknown
name       int32    code into ``strings``
type       int32    code into ``strings`` (op type, API level, series ...)
source     int32    code into ``strings`` (who produced it)
args       int32    code into ``strings`` (JSON object text, or "")
corr       int64    launch link: a host event (``device < 0``) and the
                    device events it launched share one value, as CANN's
                    ``connectionId`` links them; -1 when not linked
=========  =======  =====================================================

A KERNEL typed one of :data:`MEMORY_ACTIVITY_TYPES` (``Memcpy``, ``Memset``: a
device copy or fill, as Kineto's ``gpu_memcpy``/``gpu_memset``) is memory
activity: device time, never "Computing" (HTA's classes: computation,
communication, memory).

``corr`` is only set from data that records the link (never inferred from
times); one host event may launch several device tasks. Values are unique
per run (readers of several sources offset them apart, see
:func:`offset_corr`).

A column that holds one value in every row may be a read-only stride-0 view
(no memory per row): a loaded run keeps each column every raw record held as
one value that way (host events' pid, device, stream, step, source ...), and
so do :meth:`EventTable.concat`, :meth:`~EventTable.select` and
:meth:`~EventTable.sorted`. Columns are read, never written in place.

Example::

    >>> t = EventTable.from_records(
    ...     ts=[10, 20], dur=[5, 5], kind=[EventKind.OP, EventKind.OP],
    ...     name=["MatMul-op1", "BiasAdd-op2"], type=["MatMul", "BiasAdd"],
    ...     source="mindspore")
    >>> t.column_strings("type")
    ['MatMul', 'BiasAdd']
"""
from __future__ import annotations

import json
import math
from collections import Counter
from enum import IntEnum
from typing import Any, Iterable, Optional, Sequence

import numpy as np
import orjson

from .libc import libc_function


class EventKind(IntEnum):
    """What an event is; decides which analyzer looks at it."""

    STEP = 0      # ProfilerStep#N range
    RANGE = 1     # user range: record_function, mstx range
    MARK = 2      # instant: mstx.mark
    OP = 3        # framework operator executed on the host (CPU op)
    KERNEL = 4    # device task / kernel (AI Core, AI CPU, GPU kernel)
    API = 5       # timed API call (Python callable, AscendCL, runtime)
    COMM = 6      # communication operator
    COUNTER = 7   # sampled series (CPU usage, memory) -> value
    MEMORY = 8    # allocation event -> value in bytes
    STACK = 9     # Python call-stack sample or frame range


MEMCPY_TYPE, MEMSET_TYPE = "Memcpy", "Memset"
MEMORY_ACTIVITY_TYPES = (MEMCPY_TYPE, MEMSET_TYPE)     # KERNEL types that are memory activity, not compute


NUMERIC_COLUMNS: dict[str, Any] = {
    "ts": np.int64,
    "dur": np.int64,
    "kind": np.uint8,
    "pid": np.int64,
    "tid": np.int64,
    "device": np.int16,
    "stream": np.int32,
    "value": np.float64,
    "step": np.int32,
    "corr": np.int64,
}
STRING_COLUMNS = ("name", "type", "source", "args")
COLUMN_DEFAULTS = {"device": -1, "stream": -1, "step": -1, "pid": 0, "tid": 0, "dur": 0, "value": 0.0, "corr": -1}
# Columns that are usually one value for the whole table (no launch links in host-only data):
# given as a scalar they are kept as a stride-0 read-only view, 0 bytes instead of 8 per event.
CONSTANT_WHEN_SCALAR = frozenset({"corr"})
# Any column but ``ts`` that is already a stride-0 view in every part (a raw record's "const"
# columns: pid, device, stream, step, source ... of host events) stays one when parts are joined.
JOINED_CONSTANT = frozenset({*NUMERIC_COLUMNS, *STRING_COLUMNS} - {"ts"})


def parse_args_text(text: str) -> dict:
    """An args text (a JSON object) as a dict; ``{}`` for anything else. Never raises.

    Example::

        >>> parse_args_text('{"group": "hccl_world"}'), parse_args_text("not json"), parse_args_text("[1]")
        ({'group': 'hccl_world'}, {}, {})
    """
    if not text or not text.startswith("{"):
        return {}
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:   # Python's json writes NaN/Infinity (a user's record_function args), which orjson refuses
            obj = json.loads(text)
        except ValueError:
            return {}
    return obj if isinstance(obj, dict) else {}


class EventTable:
    """Columns of events sharing one string pool (see module doc)."""

    __slots__ = ("cols", "strings", "_args")

    def __init__(self, cols: dict[str, np.ndarray], strings: list[str],
                 _args: Optional[dict[int, dict]] = None) -> None:
        self.cols = cols
        self.strings = strings
        self._args: dict[int, dict] = {} if _args is None else _args   # code -> parsed args, shared with derived tables

    # -- construction -------------------------------------------------------
    @classmethod
    def empty(cls) -> "EventTable":
        cols = {k: np.zeros(0, dtype=d) for k, d in NUMERIC_COLUMNS.items()}
        cols.update({k: np.zeros(0, dtype=np.int32) for k in STRING_COLUMNS})
        return cls(cols, [""])

    @classmethod
    def from_records(cls, **columns: Any) -> "EventTable":
        """Build a table from per-column sequences or scalars.

        Numeric columns take sequences or one scalar for all rows; string
        columns take sequences of ``str`` or one ``str``. ``ts`` is required.
        """
        n = len(columns["ts"])
        pool = StringPool()
        cols: dict[str, np.ndarray] = {}
        for key, dtype in NUMERIC_COLUMNS.items():
            cols[key] = _column(key, columns.get(key, COLUMN_DEFAULTS.get(key, 0)), n, dtype)
        for key in STRING_COLUMNS:
            val = columns.get(key, "")
            if isinstance(val, str):
                cols[key] = np.full(n, pool.code(val), dtype=np.int32)
            else:
                cols[key] = pool.codes(val)
        unknown = set(columns) - set(NUMERIC_COLUMNS) - set(STRING_COLUMNS)
        if unknown:
            raise TypeError(f"unknown event columns: {sorted(unknown)}")
        return cls(cols, pool.strings)

    @classmethod
    def from_codes(cls, numeric: dict[str, np.ndarray], codes: dict[str, np.ndarray],
                   strings: list[str]) -> "EventTable":
        """Build from already-encoded columns (fast path for readers)."""
        n = len(numeric["ts"])
        cols = {k: _column(k, numeric.get(k, COLUMN_DEFAULTS.get(k, 0)), n, d) for k, d in NUMERIC_COLUMNS.items()}
        for key in STRING_COLUMNS:
            cols[key] = _broadcast(codes.get(key, 0), n, np.int32)
        return cls(cols, list(strings))

    @staticmethod
    def concat(tables: Iterable["EventTable"], consume: bool = False) -> "EventTable":
        """Concatenate tables, merging their string pools.

        Each output column is allocated once and filled part by part. With
        ``consume=True`` every input column is dropped from its table as
        soon as it is copied, so peak memory is the output plus one column
        instead of twice the data (the inputs are unusable afterwards).
        """
        tables = [t for t in tables if t is not None and len(t)]
        if not tables:
            return EventTable.empty()
        if len(tables) == 1:
            return tables[0]
        pool = StringPool()
        remaps = [pool_remap(pool, t.strings) for t in tables]
        n = sum(len(t) for t in tables)
        cols: dict[str, np.ndarray] = {}
        for key in (*NUMERIC_COLUMNS, *STRING_COLUMNS):
            same = _common_constant(key, [t.cols[key] for t in tables], remaps)
            if same is not None:
                cols[key] = constant_column(same, n, NUMERIC_COLUMNS.get(key, np.int32))
                if consume:
                    for t in tables:
                        del t.cols[key]
                continue
            out = np.empty(n, dtype=NUMERIC_COLUMNS.get(key, np.int32))
            lo = 0
            for t, remap in zip(tables, remaps):
                src = t.cols[key]
                hi = lo + len(src)
                put_column(out[lo:hi], src, remap if key in STRING_COLUMNS else None)
                lo = hi
                if consume:
                    del t.cols[key]
            cols[key] = out
            if consume:
                release_free_memory()
        return EventTable(cols, pool.strings)

    # -- access -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.cols["ts"])

    def __getitem__(self, key: str) -> np.ndarray:
        return self.cols[key]

    def select(self, index: Any) -> "EventTable":
        """Rows by boolean mask or index array (string pool shared)."""
        picked = {k: v[index] for k, v in self.cols.items() if not is_constant_column(v)}
        n = len(picked["ts"])
        return EventTable({k: picked[k] if k in picked else constant_column(_value_of(k, v), n, v.dtype)
                           for k, v in self.cols.items()}, self.strings, self._args)

    def of_kind(self, *kinds: EventKind) -> "EventTable":
        return self.select(np.isin(self.cols["kind"], np.array([int(k) for k in kinds], dtype=np.uint8)))

    def sorted(self, release: bool = False) -> "EventTable":
        """Rows ordered by start time (stable); the table itself when already in order.

        With ``release=True`` this table is reordered in place, one column
        at a time, so each old column is freed as soon as it is replaced.
        """
        ts = self.cols["ts"]
        if len(ts) < 2 or bool((ts[1:] >= ts[:-1]).all()):
            return self
        order = np.argsort(ts, kind="stable")
        if not release:
            return self.select(order)
        # each column is gathered into the memory a column gathered before it left (a fresh page
        # costs a fault on first touch, more than copying into it, and a host fault as well in a VM
        # whose free memory goes back to the host), widest first, so only the first column takes fresh memory; only
        # memory no other column shares is reused
        owners = Counter(id(_owner(c)) for c in self.cols.values())
        spare: list[np.ndarray] = []   # bytes no column uses any more
        for key in sorted(self.cols, key=lambda k: -self.cols[k].dtype.itemsize):
            col = self.cols[key]
            if is_constant_column(col):
                continue
            need = len(col) * col.dtype.itemsize
            fits = [b for b in spare if b.nbytes >= need]
            if fits:
                free = min(fits, key=len)
                spare.remove(free)
                out = free[:need].view(col.dtype)
            else:
                out = np.empty(len(col), dtype=col.dtype)
            np.take(col, order, out=out, mode="clip")   # order is a permutation: no index to clip
            self.cols[key] = out
            if col.flags.writeable and col.flags.c_contiguous and owners[id(_owner(col))] == 1:
                spare.append(col.view(np.uint8))
        return self

    def code_of(self, text: str) -> int:
        """Code of ``text`` in the pool, or -1 when absent."""
        try:
            return self.strings.index(text)
        except ValueError:
            return -1

    def column_strings(self, key: str) -> list[str]:
        """Decoded strings of a string column (allocates: for small tables/output)."""
        pool = np.asarray(self.strings, dtype=object)
        return pool[self.cols[key]].tolist()

    def string_array(self, key: str) -> np.ndarray:
        """Decoded strings as an object array."""
        return np.asarray(self.strings, dtype=object)[self.cols[key]]

    def has_links(self) -> bool:
        """Whether any event carries a launch link (``corr >= 0``)."""
        corr = self.cols["corr"]
        return bool(len(corr)) and int(corr.max()) >= 0

    def with_column(self, key: str, values: np.ndarray) -> "EventTable":
        cols = dict(self.cols)
        cols[key] = values
        return EventTable(cols, self.strings, self._args)

    def args_object(self, code: int) -> dict:
        """The ``args`` string ``code`` as a dict (``{}`` when empty, not JSON or not an object).

        Each distinct text is parsed once for this table and every table derived
        from it (``select``, ``of_kind``, ``sorted``, ``with_column``): the
        analyzers and exporters share one parse. The dicts are shared: read them,
        never change them.

        Example::

            >>> t = EventTable.from_records(ts=[0], dur=[1], kind=[int(EventKind.KERNEL)], name=["k"],
            ...                             args=['{"Task ID": 3}'])
            >>> t.args_object(int(t["args"][0]))["Task ID"]
            3
        """
        obj = self._args.get(code)
        if obj is None:
            obj = self._args[code] = parse_args_text(self.strings[code] if code else "")
        return obj

    def args_objects(self, codes: np.ndarray) -> list[dict]:
        """:meth:`args_object` of each code, in order."""
        get = self.args_object
        return [get(c) for c in codes.tolist()]

    def __repr__(self) -> str:
        return f"<EventTable {len(self)} events, {len(self.strings)} strings>"


def offset_corr(tables: Sequence[Optional["EventTable"]]) -> list:
    """Shift a table's ``corr`` values past those of the tables before it where
    they would collide, so links read from separate sources (two PROF_ dirs
    numbering their ``connectionId`` from 1) stay apart once concatenated.
    A table whose links are all above the previous ones keeps its values,
    so the ids a single source recorded (torch_npu's ``connectionId``) stay
    the tool's own. Tables are changed in place and returned.

    Example::

        >>> a = EventTable.from_records(ts=[0, 1], corr=[1, 1])
        >>> b = EventTable.from_records(ts=[2], corr=[1])
        >>> [t["corr"].tolist() for t in offset_corr([a, None, b])]
        [[1, 1], [], [2]]
    """
    out, base = [], 0
    for t in tables:
        if t is None or not len(t):
            out.append(t if t is not None else EventTable.empty())
            continue
        corr = t.cols["corr"]
        linked = corr >= 0
        if linked.any():
            lo = int(corr[linked].min())
            if lo < base:
                t.cols["corr"] = np.where(linked, corr - lo + base, -1).astype(np.int64)
            base = int(t.cols["corr"].max()) + 1
        out.append(t)
    return out


class StringPool:
    """String interning for building tables: ``code(s)`` is the index of
    ``s`` in ``strings``, appended on first use.

    Example::

        >>> pool = StringPool(["", "npuprof"])
        >>> pool.code("MatMul"), pool.code("npuprof"), pool.strings
        (2, 1, ['', 'npuprof', 'MatMul'])
    """

    def __init__(self, initial: Sequence[str] = ("",)) -> None:
        self.strings: list[str] = list(initial)
        self._index: dict[str, int] = {s: i for i, s in enumerate(self.strings)}

    def code(self, s: str) -> int:
        c = self._index.get(s)
        if c is None:
            c = self._index[s] = len(self.strings)
            self.strings.append(s)
        return c

    def codes(self, values: Sequence[Any]) -> np.ndarray:
        """The code of each value's text, new texts added in order. The lookups run in one
        ``map`` (a table's pool: ~110k strings per 10M events on the bench run)."""
        strings = list(map(str, values))
        found = list(map(self._index.get, strings))
        if None in found:     # the new texts, once each in order of first appearance; then every lookup in C
            index = self._index
            for s in dict.fromkeys(strings):
                if s not in index:
                    self.code(s)
            found = list(map(index.__getitem__, strings))
        return np.array(found, dtype=np.int32)


def release_free_memory() -> None:
    """Hand freed heap pages back to the OS (glibc), so RSS follows what is in use.

    Many small chunk columns freed one by one leave holes in the heap that
    glibc keeps; without this, concatenating chunks peaks at twice the data.
    """
    trim = libc_function("malloc_trim", "c_size_t")
    if trim is not None:
        trim(0)


def _column(key: str, value: Any, n: int, dtype: Any) -> np.ndarray:
    if key in CONSTANT_WHEN_SCALAR and np.isscalar(value):
        return constant_column(value, n, dtype)
    return _broadcast(value, n, dtype)


def take_rows(col: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``col[rows]`` for an index array; a one-value column stays a stride-0 view of its value
    (no gather), as :meth:`EventTable.select` keeps it.

    Example::

        >>> take_rows(constant_column(7, 5, np.int32), np.array([4, 0])).tolist()
        [7, 7]
    """
    return constant_column(col[0], len(rows), col.dtype) if is_constant_column(col) else col[rows]


def constant_column(value: Any, n: int, dtype: Any) -> np.ndarray:
    """``n`` times ``value`` as a read-only stride-0 view (no memory per row)."""
    return np.broadcast_to(np.asarray(value, dtype=dtype), (n,))


def used_strings(seen: np.ndarray, strings: list) -> tuple[Optional[np.ndarray], list]:
    """The strings marked in ``seen`` (a bool per string of ``strings``), in order, as a new list,
    and the code remap to them (None when every string is used: codes stay as they are)."""
    if seen.all():
        return None, list(strings)
    used = np.flatnonzero(seen)
    remap = np.zeros(len(strings), dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    return remap, [strings[i] for i in used.tolist()]


def distinct_codes(codes: np.ndarray, size: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` of non-negative codes (into a pool of ``size`` strings): the
    distinct codes in order and each code's place among them, counted into slots without a sort where the
    codes are dense enough (below ``size``, or a few times the number of codes).

    Example::

        >>> uniq, at = distinct_codes(np.array([5, 2, 5]), 8)
        >>> uniq.tolist(), at.tolist()
        ([2, 5], [1, 0, 1])
    """
    top = size if size is not None else (int(codes.max()) + 1 if len(codes) else 0)
    if top > 4 * len(codes) + (1 << 20):
        uniq, at = np.unique(codes, return_inverse=True)
        return uniq, at.reshape(-1)
    seen = np.zeros(top, dtype=bool)
    seen[codes] = True
    uniq = np.flatnonzero(seen)
    where = np.zeros(top, dtype=np.int64)
    where[uniq] = np.arange(len(uniq))
    return uniq, where[codes]


def pool_remap(pool: StringPool, strings: Sequence[str]) -> Optional[np.ndarray]:
    """Codes of a table's ``strings`` in ``pool`` (added to it), as a remap of the table's
    string codes; None when the codes stay as they are."""
    remap = pool.codes(strings)
    return None if not len(remap) or bool((remap == np.arange(len(remap))).all()) else remap


def put_column(out: np.ndarray, src: np.ndarray, remap: Optional[np.ndarray] = None) -> None:
    """Copy ``src`` into ``out`` (same length), through ``remap`` (string codes) when given."""
    if remap is None:
        out[...] = src
    else:   # codes of a table are always in its pool: "clip" takes the unbuffered path ("raise" copies out)
        np.take(remap, src, out=out, mode="clip")


def _owner(col: np.ndarray) -> np.ndarray:
    """The array that owns ``col``'s memory (numpy points a view's ``base`` at it)."""
    return col if col.base is None else col.base


def is_constant_column(col: np.ndarray) -> bool:
    # numpy gives empty arrays stride 0 too; from 2 rows on, stride 0 means a broadcast view
    return col.ndim == 1 and len(col) > 1 and col.strides == (0,)


def _value_of(key: str, col: np.ndarray) -> Any:
    return col[0] if len(col) else COLUMN_DEFAULTS.get(key, 0)


def _common_constant(key: str, cols: list, remaps: Sequence[Optional[np.ndarray]]) -> Any:
    """The one value of these parts of a column when each part is a constant view of it (or
    a single row), else None. String codes are compared through each part's ``remap`` into
    the joined pool (:func:`pool_remap`): equal codes of two pools may be different strings."""
    if key not in JOINED_CONSTANT or not all(is_constant_column(c) or len(c) <= 1 for c in cols):
        return None
    values = [joined_value(key, c[0].item(), remap) for c, remap in zip(cols, remaps) if len(c)]
    return values[0] if values and all(same_value(values[0], v) for v in values[1:]) else None


def joined_value(key: str, value: Any, remap: Optional[np.ndarray]) -> Any:
    """``value`` of column ``key`` in a part, as it reads in the joined table (string codes remapped)."""
    return int(remap[value]) if remap is not None and key in STRING_COLUMNS else value


def same_value(a: Any, b: Any) -> bool:
    """Whether two cells hold the same value: -0.0 is not 0.0 (a trace writes them apart), NaN is never
    the same (its payload is not compared: such a column is filled in)."""
    return a == b and (type(a) is not float or math.copysign(1.0, a) == math.copysign(1.0, b))


def _broadcast(value: Any, n: int, dtype: Any) -> np.ndarray:
    if np.isscalar(value):
        return np.full(n, value, dtype=dtype)
    arr = np.asarray(value, dtype=dtype)
    if arr.shape != (n,):
        raise ValueError(f"column length {arr.shape} does not match {n} rows")
    return arr


# op_summary's tensor columns: readers keep them in a KERNEL event's args; kernel_details gets them when the
# kernels carry them (not at Level0)
KERNEL_TENSOR_COLUMNS = ("Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
                         "Output Formats")
