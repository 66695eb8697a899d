"""Read the ``trace_view.json`` of a torch_npu ``*_ascend_pt`` or MindSpore ``*_ascend_ms`` run (the one in
its ``ASCEND_PROFILER_OUTPUT/``; :mod:`npuprof.readers.ascend_output` reads the directory and gives the rules
of what each event becomes, beside the directory's other files).

The file is a Chrome trace as a JSON *array*, ``ts``/``dur`` as strings of
microseconds with three decimals (exact ns), grouped in processes:
the framework's host process (``Python`` for torch_npu, ``MindSpore``;
``ProfilerStep#N``, ``cpu_op``, ``python_function``), ``CPU OP``,
``CANN`` (``AscendCL@api``, ``Node@launch``, ``Hccl@...``; the API level
is the ``level`` arg), ``Ascend Hardware`` (device tasks, threads
``Stream <id>``), ``HCCL``/``Communication`` (thread ``Group <n>
Communication``: the ``hcom_*`` operators; threads ``Plane <n>``: their
``Notify_*``/``Memcpy``/``Reduce_*`` tasks with ``src rank``, ``dst
rank``, ``size(Byte)``, ``transport type``, ``link type``, ``stream id``),
mstx, counters (``AI Core Freq``, ``HBM`` ...) and the derived ``Scope
Layer``/``Overlap Analysis``/``Step Trace`` (skipped: npuprof computes them).

It is decoded a chunk at a time into :class:`CompactTrace` (:func:`load_trace`), and
:class:`TraceReader` turns that into an event table.

Example::

    >>> is_ascend_trace(Path("/nonexistent/trace_view.json"))      # not readable: not such a trace
    False
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np
import orjson

from npuprof.events import KERNEL_TENSOR_COLUMNS, EventKind, EventTable, StringPool, distinct_codes
from npuprof.fileio import check_input_file
from npuprof.traceflows import LAUNCH_FLOW_CATS, flow_ends_of_columns, hashable, launch_category

from .ascend_ops import COMM_CORES, comm_op_type, hccl_task_args, int_or, is_comm_task, op_type_of
from .event_rows import args_text, table_of_codes
from .time_text import INT64_BOUNDS, us_text_to_ns_or_none, us_texts_to_ns, us_texts_to_ns_array
from .trace_decode import ChunksRefused, NoTraceEvents, ScannedEvents, TraceDecodeError, TraceEvents, \
    decode_events, event_array_chunks, events_of_structs, scan_event_array_file

# process name -> how its complete ("X") events are read
_DERIVED = {"Scope Layer", "Overlap Analysis", "Step Trace"}
_MSTX_PROCESSES = {"python", "python3", "MsTx", "MsprofTx"}
_COMM_PROCESSES = {"HCCL", "Communication"}
_DIGITS_RE = re.compile(r"(\d+)")
_STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)")
_GROUP_LANE_RE = re.compile(r"^Group\s+(\S+)\s+Communication")


def is_ascend_trace(path: Path) -> bool:
    """True when ``path`` is a trace written by torch_npu/MindSpore (a JSON array), not by npuprof."""
    return _head(path).startswith(b"[")


def is_damaged_trace(path: Path) -> bool:
    """True when ``path`` holds bytes no trace starts with: neither torch_npu's/MindSpore's JSON array nor
    npuprof's own JSON object (garbage, a zero-filled file ...); an empty or unreadable file is not.

    Example::

        >>> is_damaged_trace(Path("/nonexistent/trace_view.json"))      # not readable: not damaged here
        False
    """
    head = _head(path)
    return bool(head) and not head.startswith((b"[", b"{"))


def _head(path: Path) -> bytes:
    """The file's first bytes, white space before them skipped; b"" where unreadable."""
    try:
        with open(path, "rb") as fh:
            return fh.read(64).lstrip()
    except OSError:
        return b""


def load_trace(path: Path, problems: list[str]) -> "CompactTrace":
    """The trace's events, compact: scanned into columns by the compiled scanner, else (not built, or a file
    it declines) decoded chunk by chunk (msgspec), else whole (orjson, or a file that does not split into
    event chunks); the same trace each way."""
    check_input_file(path)
    scanned = None if _PER_EVENT_ONLY else scan_event_array_file(path)
    if scanned is not None:
        return CompactTrace.of_scanned(scanned)
    try:
        trace = CompactTrace()
        for chunk in event_array_chunks(path):
            trace.add_structs(chunk)
        return trace.finish()
    except ChunksRefused:
        pass
    try:
        events = decode_events(path.read_bytes())
    except NoTraceEvents:
        problems.append(f"{path}: no event list; file skipped")
    except TraceDecodeError as e:
        problems.append(f"{path}: not valid JSON, cut short or damaged ({e}); file skipped")
    else:
        trace = CompactTrace()
        trace.add(events)
        return trace.finish()
    return CompactTrace()


@dataclass
class TraceMeta:
    """The trace's metadata events: process and thread names, labels, sort indexes."""

    proc_name: dict = field(default_factory=dict)
    proc_device: dict = field(default_factory=dict)     # pid -> device id from its label (-2: "NPU", no id)
    proc_sort: dict = field(default_factory=dict)
    thread_name: dict = field(default_factory=dict)

    @classmethod
    def of(cls, events: Iterable[Any]) -> "TraceMeta":
        meta = cls()
        for ev in events:
            if not isinstance(ev, dict) or ev.get("ph") != "M":
                continue
            args = ev.get("args")
            if not isinstance(args, dict) or not _is_key(ev.get("pid")) or not _is_key(ev.get("tid")):
                continue
            what, epid = ev.get("name"), ev.get("pid")
            if what == "process_name":
                meta.proc_name[epid] = str(args.get("name", ""))
            elif what == "process_labels":
                label = str(args.get("labels", ""))
                if label.startswith("NPU"):
                    m = _DIGITS_RE.search(label)
                    meta.proc_device[epid] = int(m.group(1)) if m else -2
            elif what == "process_sort_index":
                meta.proc_sort[epid] = args.get("sort_index")
            elif what == "thread_name":
                meta.thread_name[(epid, ev.get("tid"))] = str(args.get("name", ""))
        return meta

    def encoded_devices(self) -> set:
        """Device ids of msprof's device process ids whose encoding the sort index confirms."""
        found = set()
        for epid, label_device in self.proc_device.items():
            sort = self.proc_sort.get(epid)
            if label_device != -2 or not isinstance(epid, int) or not isinstance(sort, int):
                continue
            if epid > 1023 and (epid >> 5) & 31 == sort:
                found.add(epid & 31)
        return found


def _is_key(value: Any) -> bool:
    """pid/tid values usable as dict keys (JSON gives lists/objects in damaged files)."""
    return value is None or isinstance(value, (int, str, float))


def _as_int(value: Any) -> int:
    if isinstance(value, int):
        return value
    m = _DIGITS_RE.search(str(value))
    return int(m.group(1)) if m else 0


# -- trace_view.json ----------------------------------------------------------------------------------
@dataclass
class _CommEvent:
    ts: int
    dur: int
    name: str
    epid: Any
    tid: int
    device: int
    lane: str
    args: dict
    corr: int


_READ_PHASES = ("X", "C", "i", "I")
_PHASE = {"X": 0, "C": 1, "i": 2, "I": 2}      # read events' phases: complete, counter, instant
_PH_X, _PH_C, _PH_I = 0, 1, 2
_PLAIN = (int, str)       # pid/tid types that are their own flow key (traceflows.hashable)
_COUNTER, _MARK, _STEP, _API, _RANGE, _OP, _STACK, _KERNEL, _COMM = (
    int(k) for k in (EventKind.COUNTER, EventKind.MARK, EventKind.STEP, EventKind.API, EventKind.RANGE,
                     EventKind.OP, EventKind.STACK, EventKind.KERNEL, EventKind.COMM))
_STEPS: dict = {}
_ROW_FIELDS = ("ts", "dur", "kind", "name", "type", "tid", "device", "stream", "value", "step", "args", "corr")
# what an event becomes (decided once per distinct process, category, name and phase)
_SKIP, _ROW, _MSTX_SPAN, _CANN_API, _COUNTERS, _HARDWARE, _HCCL = range(7)
# every event through the per-event rules (tests: the reference the bulk rules must equal)
_PER_EVENT_ONLY = False
_READ_FIELDS = ("ph", "ts", "dur", "pid", "tid", "name", "cat", "args")
_PLAIN_COLUMNS = ("pid", "tid", "phase", "name", "cat", "arg", "pidc", "ts", "dur")   # what the bulk rules read


def _step_of(name: str) -> Optional[int]:
    """The N of a ``ProfilerStep#N`` name, else None (remembered per name: a trace repeats its names)."""
    try:
        return _STEPS[name]
    except KeyError:
        m = _STEP_RE.match(name)
        step = int(m.group(1)) if m else None
        if len(_STEPS) < 1 << 16:
            _STEPS[name] = step
        return step


def _codes(values: list, index: dict, table: list) -> np.ndarray:
    """The code of each value in ``table`` (``index``: value -> code), new values added in order."""
    found = list(map(index.get, values))
    if None in found:
        for v in values:
            if v not in index:
                index[v] = len(table)
                table.append(v)
        found = list(map(index.__getitem__, values))
    return np.array(found, dtype=np.int64)


def _pairs(a: np.ndarray, b: np.ndarray) -> tuple[list, np.ndarray]:
    """The distinct (a, b) pairs of two int64 columns in order (as ``np.unique(axis=0)``), and each row's pair:
    one dense key where both are small non-negative codes, else a sort on both (not ``np.unique``'s
    row-as-bytes one, ~20x slower)."""
    if not len(a):
        return [], np.zeros(0, dtype=np.int64)
    base = int(b.max()) + 1
    if int(min(a.min(), b.min())) >= 0 and int(a.max()) < (1 << 62) // base:
        keys, at = distinct_codes(a * base + b)
        return [(k // base, k % base) for k in keys.tolist()], at
    order = np.lexsort((b, a))
    sa, sb = a[order], b[order]
    first = np.ones(len(a), dtype=bool)
    first[1:] = (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])
    at = np.empty(len(a), dtype=np.int64)
    at[order] = np.cumsum(first) - 1
    return list(zip(sa[first].tolist(), sb[first].tolist())), at


def _flow_links(flows: dict, pid: np.ndarray, tid: np.ndarray, ts: np.ndarray) -> Optional[np.ndarray]:
    """``flows.get((pid, tid, ts), -1)`` of each row, in bulk (the flow ends by time, then pid and tid compared);
    None where a flow end is not three integers (a float pid equals an int one as a dict key), or many ends
    share one time: then row by row."""
    ends = list(flows)
    if set(map(type, chain.from_iterable(ends))) != {int}:
        return None
    try:
        end_pid, end_tid, end_ts = (np.array(col, dtype=np.int64) for col in zip(*ends))
        link = np.array(list(flows.values()), dtype=np.int64)
    except OverflowError:
        return None
    order = np.argsort(end_ts, kind="stable")
    end_pid, end_tid, end_ts, link = end_pid[order], end_tid[order], end_ts[order], link[order]
    first = np.searchsorted(end_ts, ts, side="left")
    same_time = np.searchsorted(end_ts, ts, side="right") - first
    if len(same_time) and int(same_time.max()) > 16:
        return None
    out = np.full(len(ts), -1, dtype=np.int64)
    for k in range(int(same_time.max()) if len(same_time) else 0):
        rows = np.flatnonzero(same_time > k)
        at = first[rows] + k
        hit = (end_pid[at] == pid[rows]) & (end_tid[at] == tid[rows])
        out[rows[hit]] = link[at[hit]]
    return out


def _launch_flows(flows: dict) -> dict:
    """(pid, tid, ts ns) -> link of the flow events (``flows``: their fields as lists) of the launch category
    the trace has (:func:`~npuprof.traceflows.flow_ends_of_columns`); only that category's times converted."""
    if not flows:
        return {}
    chosen = launch_category(flows["cat"], LAUNCH_FLOW_CATS)
    if chosen is None:
        return {}
    at = [i for i, c in enumerate(flows["cat"]) if c == chosen]
    cat, pid, tid, ts, ids = ([flows[key][i] for i in at] for key in ("cat", "pid", "tid", "ts", "id"))
    return flow_ends_of_columns(cat, pid, tid, us_texts_to_ns(ts), ids, (chosen,))


def _only(values: list, *types: type) -> bool:
    return set(map(type, values)) <= set(types)


@dataclass
class CompactTrace:
    """A trace_view.json's events, compact (one chunk of decoded events at a time goes in, see
    :meth:`add`): the metadata events as dicts, the flow events' fields as lists; every event read (phase
    ``X``, ``C``, ``i``, ``I``) as one array entry per column, in file order, names, categories and args as
    codes into the distinct values (args: each distinct JSON text, or orjson's objects). An event whose values are not
    of the usual types (pid/tid not integers, a name not a string, an unreadable time ...) is ``odd``:
    its values are kept as the file has them and read by the per-event rules."""

    raw_args: bool = True
    meta: list = field(default_factory=list)
    flows: dict = field(default_factory=dict)     # the flow events (s/f): cat, pid, tid, ts, id as lists
    names: list = field(default_factory=list)
    cats: list = field(default_factory=list)
    args: list = field(default_factory=list)
    odd: dict = field(default_factory=dict)       # position -> (ph, cat, name, pid, tid, ts ns, dur ns)
    not_objects: int = 0
    columns: dict = field(default_factory=dict)   # phase, plain, ts, dur, pid, tid, name, cat, arg
    _parts: list = field(default_factory=list)
    pids: list = field(default_factory=list)
    _index: dict = field(default_factory=lambda: {"names": {}, "cats": {}, "args": {}, "pids": {}})
    _count: int = 0
    _entries: int = 0

    def __len__(self) -> int:
        return self._entries

    def add(self, events: TraceEvents) -> None:
        """Take one chunk of decoded events (``events`` is left empty)."""
        self.raw_args = events.decoder == "msgspec"
        self.not_objects += events.not_objects
        self._entries += len(events)
        ph = events.ph
        self.meta += events.dicts(i for i, p in enumerate(ph) if p == "M")
        flows = [i for i, p in enumerate(ph) if p == "s" or p == "f"]
        for key, values in (("cat", events.cat), ("pid", events.pid), ("tid", events.tid), ("ts", events.ts),
                            ("id", events.id)):
            self.flows.setdefault(key, []).extend([values[i] for i in flows])
        read = [i for i, p in enumerate(ph) if p in _READ_PHASES]
        if read:
            take = itemgetter(*read) if len(read) > 1 else (lambda values: (values[read[0]],))
            self._add_read(*(take(getattr(events, k)) for k in _READ_FIELDS))
        events.release()

    @classmethod
    def of_scanned(cls, scanned: ScannedEvents) -> "CompactTrace":
        """The trace the compiled scanner read (:func:`scan_event_array_file`): what :meth:`add_structs` makes
        of the same file (the scanner declines any file with an odd event)."""
        trace = cls(raw_args=True, _entries=scanned.entries)
        if scanned.meta:
            trace.meta = events_of_structs(scanned.meta).dicts(range(len(scanned.meta)))
        flows = scanned.flows
        trace.flows = {key: list(map(attrgetter(key), flows)) for key in ("cat", "pid", "tid", "ts", "id")}
        n = len(scanned.phase)
        if not n:
            return trace
        texts = scanned.texts
        cat = scanned.cat.astype(np.int64)
        cat[cat < 0] = len(texts)      # None: after the texts
        trace.pids, trace.names, trace.cats, trace.args = scanned.pids, texts, texts + [None], scanned.args
        trace.columns = {"ts": scanned.ts_ns, "dur": scanned.dur_ns, "phase": scanned.phase,
                         "plain": np.ones(n, dtype=bool), "pid": scanned.pid, "tid": scanned.tid,
                         "pidc": scanned.pidc.astype(np.int64), "name": scanned.name.astype(np.int64), "cat": cat,
                         "arg": scanned.arg.astype(np.int64)}
        return trace

    def add_structs(self, structs: list) -> None:
        """Take one chunk of msgspec's event structs (:func:`event_array_chunks`): only the
        fields used are taken, each from the events that use it."""
        self.raw_args = True
        self._entries += len(structs)
        ph = list(map(attrgetter("ph"), structs))
        meta = [e for e, p in zip(structs, ph) if p == "M"]
        if meta:
            self.meta += events_of_structs(meta).dicts(range(len(meta)))
        flows = [e for e, p in zip(structs, ph) if p == "s" or p == "f"]
        for key in ("cat", "pid", "tid", "ts", "id"):
            self.flows.setdefault(key, []).extend(map(attrgetter(key), flows))
        read = [e for e, p in zip(structs, ph) if p in _READ_PHASES]
        del structs[:], ph, meta, flows
        if read:
            self._add_read(*(list(map(attrgetter(k), read)) for k in _READ_FIELDS))

    def _add_read(self, phases: Sequence[Any], ts_in: Sequence[Any], dur_in: Sequence[Any], pids: Sequence[Any],
                  tids: Sequence[Any], names: Sequence[Any], cats: Sequence[Any], args: Sequence[Any]) -> None:
        n = len(phases)
        phase = np.fromiter(map(_PHASE.__getitem__, phases), dtype=np.uint8, count=n)
        ts, ts_ok = us_texts_to_ns_array(ts_in)
        spans = phase == _PH_X
        if spans.all():
            dur, dur_ok = us_texts_to_ns_array(dur_in)
        else:      # a duration only for complete events
            dur, dur_ok = np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool)
            x = np.flatnonzero(spans)
            if len(x):
                dur[x], dur_ok[x] = us_texts_to_ns_array([dur_in[i] for i in x.tolist()])
        if self.raw_args:
            arg = _codes(list(map(bytes, args)), self._index["args"], self.args)
        else:      # orjson's objects: one code each
            arg = np.arange(len(self.args), len(self.args) + n, dtype=np.int64)
            self.args += list(args)
        cols = None
        plain_all = (not _PER_EVENT_ONLY and _only(pids, int) and _only(tids, int) and _only(names, str)
                     and _only(cats, str, type(None)) and bool(ts_ok.all()) and bool(dur_ok.all()))
        if plain_all:
            try:
                cols = {"pid": np.array(pids, dtype=np.int64), "tid": np.array(tids, dtype=np.int64)}
            except OverflowError:
                plain_all = False
            plain = np.ones(n, dtype=bool)
        if cols is None:     # some odd events: each one looked at
            lo, hi = INT64_BOUNDS
            ok = [type(p) is int and type(t) is int and type(nm) is str and (c is None or type(c) is str)
                  and lo <= p < hi and lo <= t < hi and not _PER_EVENT_ONLY
                  for p, t, nm, c in zip(pids, tids, names, cats)]
            plain = np.array(ok, dtype=bool) & ts_ok & dur_ok
            for j in np.flatnonzero(~plain).tolist():
                self.odd[self._count + j] = (phases[j], cats[j], names[j], pids[j], tids[j],
                                             us_text_to_ns_or_none(ts_in[j]),
                                             us_text_to_ns_or_none(dur_in[j]) if phases[j] == "X" else 0)
            good = plain.tolist()
            cols = {"pid": np.array([v if g else 0 for v, g in zip(pids, good)], dtype=np.int64),
                    "tid": np.array([v if g else 0 for v, g in zip(tids, good)], dtype=np.int64)}
            names = [v if g else "" for v, g in zip(names, good)]
            cats = [v if g else None for v, g in zip(cats, good)]
        cols["ts"], cols["dur"] = ts, dur
        cols["phase"] = phase
        cols["plain"] = plain
        cols["pidc"] = _codes(pids if plain_all else cols["pid"].tolist(), self._index["pids"], self.pids)
        cols["name"] = _codes(names, self._index["names"], self.names)
        cols["cat"] = _codes(cats, self._index["cats"], self.cats)
        cols["arg"] = arg
        self._parts.append(cols)
        self._count += n

    def finish(self) -> "CompactTrace":
        """The columns of every chunk added, joined."""
        if self._parts:
            self.columns = {k: np.concatenate([p[k] for p in self._parts]) for k in self._parts[0]}
        self._parts = []
        self._index = {}
        return self


class _ArgsTable:
    """Each distinct ``args`` of a trace as a dict (``{}`` where not an object) and as the event table's args
    text, parsed once (a trace repeats its args: the same call stacks, the same task fields)."""

    def __init__(self, values: list, raw: bool) -> None:
        self.values, self.raw = values, raw
        self.parsed: dict = {}
        self.texts: dict = {}

    def dict(self, code: int) -> dict:
        """Raises ValueError where orjson does not read the args."""
        got = self.parsed.get(code)
        if got is None:
            v = self.values[code]
            if self.raw:
                v = orjson.loads(v)
            got = self.parsed[code] = v if isinstance(v, dict) else {}
        return got

    def text(self, code: int) -> str:
        got = self.texts.get(code)
        if got is None:
            got = self.texts[code] = args_text(self.dict(code))
        return got

    def readable(self, codes: np.ndarray) -> np.ndarray:
        """Whether each code's args parse (orjson reads every args of a trace that msgspec decoded but
        integers beyond 64 bits)."""
        uniq, inverse = distinct_codes(codes, len(self.values))
        ok = np.ones(len(uniq), dtype=bool)
        for k, c in enumerate(uniq.tolist()):
            try:
                self.dict(c)
            except ValueError:
                ok[k] = False
        return ok[inverse]


def _text_codes(codes: np.ndarray, args: _ArgsTable, strings: StringPool) -> np.ndarray:
    """The local string code of the args text of each args code."""
    uniq, at = distinct_codes(codes, len(args.values))
    return np.array([strings.code(args.text(a)) for a in uniq.tolist()], dtype=np.int64)[at]


def _hardware_task(args: dict) -> dict:
    """A hardware task's args in the table (kernel_details' names)."""
    task = {"Accelerator Core": str(args.get("Task Type", "")), "Task ID": args.get("Task Id"),
            "Model ID": args.get("Model Id")}
    task.update((k, args[k]) for k in KERNEL_TENSOR_COLUMNS if isinstance(args.get(k), str))
    return {k: v for k, v in task.items() if v not in (None, "")}


def _cann_level(args: dict, name: str) -> str:
    """A CANN event's API level: its ``level`` arg, else its name's ``<level>@``, else CANN."""
    level, _, api = name.partition("@")
    return str(args.get("level") or (level if api else "CANN"))


def _hardware_kind(name: str, task: dict) -> int:
    return _COMM if name.startswith("hcom_") or str(task.get("Accelerator Core", "")).upper() in COMM_CORES \
        else _KERNEL


class _Rows:
    """Rows being built, as column arrays per part (``pos``/``sub``: the event and its row's place)."""

    def __init__(self) -> None:
        self.parts: list[dict] = []

    def add(self, **cols: Any) -> None:
        n = len(cols["ts"])
        if n:
            self.parts.append({k: np.broadcast_to(np.asarray(v), (n,)) if np.ndim(v) == 0 else np.asarray(v)
                               for k, v in cols.items()})

    def add_tuples(self, rows: list, strings: StringPool, pos: Optional[list] = None) -> None:
        """Rows as tuples of :data:`_ROW_FIELDS` (strings as text)."""
        if not rows:
            return
        cols = dict(zip(_ROW_FIELDS, map(list, zip(*rows))))
        for k in ("name", "type", "args"):
            cols[k] = strings.codes(cols[k])
        if pos is not None:
            cols["pos"], cols["sub"] = [p for p, _ in pos], [s for _, s in pos]
        self.add(**cols)

    def joined(self, order_by_pos: bool) -> dict:
        """Every part's rows, column by column (each part's column released once copied); in event order
        (``pos``, then ``sub``) when asked."""
        if not self.parts:
            return {}
        keys = [k for k in (*_ROW_FIELDS, "pos", "sub") if k in self.parts[0]]
        out = {k: np.concatenate([p.pop(k).astype(_ROW_DTYPES.get(k, np.int64), copy=False) for p in self.parts])
               for k in keys}
        self.parts = []
        if order_by_pos:
            order = np.lexsort((out.pop("sub"), out.pop("pos")))
            for k in list(out):
                out[k] = out[k][order]
        return out


_ROW_DTYPES = {"value": np.float64, "kind": np.uint8}


def _table(cols: dict, strings: list, pid: int, source: str) -> EventTable:
    """The event table of the rows ``cols`` (strings as codes into ``strings``), every row in process ``pid``."""
    return table_of_codes({**cols, "pid": np.full(len(cols["ts"]), pid, dtype=np.int64)}, strings, source)


class TraceReader:
    """Turns a trace's events into an event table (the rules: this module's doc and
    :mod:`npuprof.readers.ascend_output`'s)."""

    def __init__(self, meta: TraceMeta, device: int, pid: int, source: str, skip_cpu_ops: bool,
                 skip_hardware: bool, skip_mstx: bool, groups: dict[str, str]) -> None:
        self.meta, self.device, self.pid, self.source = meta, device, pid, source
        self.skip_cpu_ops, self.skip_hardware, self.skip_mstx = skip_cpu_ops, skip_hardware, skip_mstx
        self.groups = groups
        self.task_links: dict = {}        # (start ns, name) -> link of hardware tasks not read
        self.op_groups: dict = {}         # (op name, occurrence) -> group, of HCCL operators not read
        self.comm: list[_CommEvent] = []

    def read(self, trace: CompactTrace, path: Path, problems: list[str]) -> EventTable:
        """The trace's events; launch links from its ``HostToDevice`` flows, else its ``async_npu`` ones.
        ``trace`` is consumed (released once read).

        What each event becomes is decided once per distinct (process, category, name, phase) and applied
        to every event in bulk; the args are parsed once per distinct text, only where the event's kind
        uses them. The odd events (see :class:`CompactTrace`) go through the same rules one by one."""
        flows = _launch_flows(trace.flows)
        trace.flows = {}
        args = _ArgsTable(trace.args, trace.raw_args)
        strings = StringPool()     # local codes of the rows being built (the pool is laid out from them at the end)
        comm_streams = self._comm_streams(trace, args)
        main, hardware = _Rows(), _Rows()
        comm: list = []          # (position, _CommEvent)
        links: list = []         # (position, (ts, name), link) of hardware tasks not read
        bad = trace.not_objects
        c = trace.columns
        if c:
            bad += self._plain(trace, args, flows, strings, comm_streams, main, hardware, comm, links)
            bad += self._odd(trace, args, flows, strings, comm_streams, main, hardware, comm, links)
        trace.columns, trace.odd, trace.args = {}, {}, []
        for _, key, link in sorted(links, key=lambda x: x[0]):
            self.task_links[key] = link
        self.comm = [e for _, e in sorted(comm, key=lambda x: x[0])]
        tail: list = []
        self._add_comm(tail)
        if bad:
            problems.append(f"{path}: {bad} malformed event(s) skipped")
        parts = [p for p in (main.joined(True), hardware.joined(True)) if p]
        tail_rows = _Rows()
        tail_rows.add_tuples(tail, strings)
        parts += [p for p in (tail_rows.joined(False),) if p]
        if not parts:
            return EventTable.empty()
        cols = {k: np.concatenate([p.pop(k) for p in parts]) for k in _ROW_FIELDS}
        del parts
        return _table(cols, strings.strings, self.pid, self.source)

    def _plain(self, trace: CompactTrace, args: _ArgsTable, flows: dict, strings: StringPool, comm_streams: set,
               main: _Rows, hardware: _Rows, comm: list, links: list) -> int:
        """The rows of the plain events, in bulk; returns how many were malformed."""
        c = trace.columns
        rows = np.flatnonzero(c["plain"])
        if not len(rows):
            return 0
        # every event plain (whatever the scanner took): the columns themselves, read only, not a copy of each
        plain = c if len(rows) == len(c["plain"]) else {k: c[k][rows] for k in _PLAIN_COLUMNS}
        pid, tid, phase = plain["pid"], plain["tid"], plain["phase"]
        name, cat, arg = plain["name"], plain["cat"], plain["arg"]
        pid_at = plain["pidc"]
        process = [self.meta.proc_name.get(v, "") for v in trace.pids]
        device = [self._device_of(v) for v in trace.pids]
        n_cat, n_name = len(trace.cats) + 1, len(trace.names) + 1
        if len(trace.pids) * n_cat * n_name * 3 < 1 << 62:
            # the distinct (category, name) pairs first, then with the process and phase: two dense keys, in
            # the order of the one key (process, category, name, phase)
            pairs, pair_at = distinct_codes(cat * n_name + name)
            combos, at = distinct_codes((pid_at * len(pairs) + pair_at) * 3 + phase)
            ph_of, rest = combos % 3, combos // 3
            pair_of, pid_of = pairs[rest % len(pairs)], rest // len(pairs)
            cat_of, name_of = pair_of // n_name, pair_of % n_name
        else:
            stacked = np.stack([pid_at, cat, name, phase.astype(np.int64)], axis=1)
            combos, at = np.unique(stacked, axis=0, return_inverse=True)
            pid_of, cat_of, name_of, ph_of = combos.T
        at = at.reshape(-1)
        rule = [self._rule(process[p], device[p], trace.cats[ct], trace.names[nm], ph, strings)
                for p, ct, nm, ph in zip(pid_of.tolist(), cat_of.tolist(), name_of.tolist(), ph_of.tolist())]
        action = np.array([r[0] for r in rule], dtype=np.int8)[at]
        kind = np.array([r[1] for r in rule], dtype=np.int64)[at]
        out_name = np.array([r[2] for r in rule], dtype=np.int64)[at]
        out_type = np.array([r[3] for r in rule], dtype=np.int64)[at]
        out_device = np.array([r[4] for r in rule], dtype=np.int64)[at]
        step = np.array([r[5] for r in rule], dtype=np.int64)[at]
        with_args = np.array([r[6] for r in rule], dtype=bool)[at]
        with_corr = np.array([r[7] for r in rule], dtype=bool)[at]
        del rule, at
        ts, dur = plain["ts"], plain["dur"]
        needs_args = with_args | (action == _COUNTERS) | (action == _HCCL)
        if not self.skip_hardware:      # tasks not read: only their links are kept
            needs_args |= action == _HARDWARE
        bad = np.zeros(len(rows), dtype=bool)
        if needs_args.any():
            sel = np.flatnonzero(needs_args)
            bad[sel] = ~args.readable(arg[sel])
        corr = np.full(len(rows), -1, dtype=np.int64)
        linked = (with_corr | (action == _HARDWARE) | (action == _HCCL)) & ~bad
        if flows and linked.any():
            sel = np.flatnonzero(linked)
            found = _flow_links(flows, pid[sel], tid[sel], ts[sel])
            if found is None:
                get = flows.get
                found = [get(k, -1) for k in zip(pid[sel].tolist(), tid[sel].tolist(), ts[sel].tolist())]
            corr[sel] = found
        pos = rows
        # one row per event
        one = np.flatnonzero(((action == _ROW) | (action == _MSTX_SPAN) | (action == _CANN_API)) & ~bad)
        if len(one):
            k = kind[one]
            span = action[one] == _MSTX_SPAN
            if span.any():
                k = np.where(span, np.where(dur[one] > 0, _RANGE, _MARK), k)
            typ = out_type[one]
            cann = np.flatnonzero(action[one] == _CANN_API)
            if len(cann):
                typ = typ.copy()
                typ[cann] = self._cann_levels(arg[one][cann], name[one][cann], trace.names, args, strings)
            a = np.zeros(len(one), dtype=np.int64)
            wa = np.flatnonzero(with_args[one])
            if len(wa):
                a[wa] = _text_codes(arg[one][wa], args, strings)
            main.add(pos=pos[one], sub=0, ts=ts[one], dur=dur[one], kind=k, name=out_name[one], type=typ,
                     tid=tid[one], device=out_device[one], stream=-1, value=0.0, step=step[one], args=a,
                     corr=np.where(with_corr[one], corr[one], -1))
        counters = np.flatnonzero((action == _COUNTERS) & ~bad)
        if len(counters):
            self._counters(counters, pos, ts, tid, name, arg, out_type, out_device, trace.names, args, strings, main)
        tasks = np.flatnonzero((action == _HARDWARE) & ~bad)
        if len(tasks):
            if self.skip_hardware:
                names = trace.names
                links += [(p, (t, names[nm]), link) for p, t, nm, link in
                          zip(pos[tasks].tolist(), ts[tasks].tolist(), name[tasks].tolist(), corr[tasks].tolist())
                          if link >= 0]
            else:
                self._hardware(tasks, pos, ts, dur, pid, tid, name, arg, out_device, corr, trace.names, args,
                               strings, comm_streams, hardware)
        hccl = np.flatnonzero((action == _HCCL) & ~bad)
        names, lanes = trace.names, self.meta.thread_name
        for p, t, d, nm, epid, etid, dev, a, link in zip(*(v[hccl].tolist() for v in (pos, ts, dur, name, pid, tid,
                                                                                     out_device, arg, corr))):
            comm.append((p, _CommEvent(t, d, names[nm], epid, etid, dev, lanes.get((epid, etid), ""), args.dict(a),
                                       link)))
        return int(bad.sum())

    def _rule(self, process: str, device: int, cat: Any, name: str, phase: int, strings: StringPool) -> tuple:
        """(action, kind, name, type, device, step, with args, with link) of the events of one process,
        category, name and phase (:class:`TraceReader`'s rules)."""
        code = strings.code
        skip = (_SKIP, 0, 0, 0, -1, -1, False, False)
        if self._unread(process, cat):
            return skip
        if phase == _PH_C:
            return (_COUNTERS, _COUNTER, 0, code(process), device, -1, False, False)
        if phase == _PH_I:
            return (_ROW, _MARK, code(name), code(process), device, -1, False, False)
        step = _step_of(name)
        if step is not None:   # whatever process carries it: torch_npu's "Python", MindSpore's "MindSpore"
            return (_ROW, _STEP, code(name), code("ProfilerStep"), -1, step, False, False)
        if process == "CANN":
            api = name.partition("@")[2]
            return (_CANN_API, _API, code(api if api else name), -1, -1, -1, True, True)
        if process == "Ascend Hardware":
            return (_HARDWARE, _KERNEL, 0, 0, device, -1, False, True)
        if process in _COMM_PROCESSES:
            return (_HCCL, _COMM, 0, 0, device, -1, False, True)
        if process in _MSTX_PROCESSES or cat == "MsTx":
            return (_MSTX_SPAN, _RANGE, code(name), code("mstx"), -1, -1, False, False)
        if process == "CPU OP":
            if self.skip_cpu_ops:
                return skip
            return (_ROW, _OP, code(name), code(op_type_of(name)), -1, -1, False, False)
        if cat == "python_function":
            return (_ROW, _STACK, code(name), code("python_function"), -1, -1, False, False)
        if cat == "cpu_op" or (process == "MindSpore" and "::" not in name):
            op_type = name if cat == "cpu_op" else op_type_of(name)
            return (_ROW, _OP, code(name), code(op_type), -1, -1, True, True)
        if process == "MindSpore":     # Kernel::KernelLaunch::... and the like
            return (_ROW, _API, code(name), code(name.split("::", 1)[0]), -1, -1, True, True)
        return (_ROW, _RANGE, code(name), code(str(cat or process)), device, -1, True, False)

    def _unread(self, process: str, cat: Any) -> bool:
        """Events no rule reads, whatever their phase or time: the derived processes', and mstx's where
        npuprof recorded the user's ranges itself."""
        return process in _DERIVED or (self.skip_mstx and (process in _MSTX_PROCESSES or cat == "MsTx"))

    @staticmethod
    def _cann_levels(arg: np.ndarray, name: np.ndarray, names: list, args: _ArgsTable,
                     strings: StringPool) -> np.ndarray:
        """The API level of CANN events: their ``level`` arg, else the name's ``<level>@``, else CANN."""
        pairs, at = _pairs(arg, name)
        return np.array([strings.code(_cann_level(args.dict(a), names[nm])) for a, nm in pairs], dtype=np.int64)[at]

    @staticmethod
    def _counters(rows: np.ndarray, pos: np.ndarray, ts: np.ndarray, tid: np.ndarray, name: np.ndarray,
                  arg: np.ndarray, out_type: np.ndarray, out_device: np.ndarray, names: list, args: _ArgsTable,
                  strings: StringPool, main: _Rows) -> None:
        """One row per numeric series of each counter event's args, named ``<event name> <series>``."""
        uniq, at = distinct_codes(arg[rows], len(args.values))
        series_text: list = []
        series_index: dict = {}
        count = np.zeros(len(uniq), dtype=np.int64)
        flat_series: list = []
        flat_value: list = []
        for k, a in enumerate(uniq.tolist()):
            for series, value in args.dict(a).items():
                try:
                    val = float(value)
                except (TypeError, ValueError):
                    continue
                s = series_index.get(series)
                if s is None:
                    s = series_index[series] = len(series_text)
                    series_text.append(series)
                flat_series.append(s)
                flat_value.append(val)
                count[k] += 1
        per_event = count[at]
        if not per_event.sum():
            return
        start = np.zeros(len(uniq), dtype=np.int64)
        np.cumsum(count[:-1], out=start[1:])
        event = np.repeat(np.arange(len(rows)), per_event)
        first = np.zeros(len(rows), dtype=np.int64)
        np.cumsum(per_event[:-1], out=first[1:])
        sub = np.arange(len(event)) - first[event]
        flat = start[at[event]] + sub
        series = np.array(flat_series, dtype=np.int64)[flat]
        ev = rows[event]
        pairs, pair_at = _pairs(name[ev], series)
        row_name = np.array([strings.code(f"{names[nm]} {series_text[s]}".strip()) for nm, s in pairs],
                            dtype=np.int64)[pair_at]
        main.add(pos=pos[ev], sub=sub, ts=ts[ev], dur=0, kind=_COUNTER, name=row_name, type=out_type[ev],
                 tid=tid[ev], device=out_device[ev], stream=-1, value=np.array(flat_value, dtype=np.float64)[flat],
                 step=-1, args=0, corr=-1)

    def _hardware(self, rows: np.ndarray, pos: np.ndarray, ts: np.ndarray, dur: np.ndarray, pid: np.ndarray,
                  tid: np.ndarray, name: np.ndarray, arg: np.ndarray, out_device: np.ndarray, corr: np.ndarray,
                  names: list, args: _ArgsTable, strings: StringPool, comm_streams: set, hardware: _Rows) -> None:
        """Device tasks: kernels, or communication where HCCL's (not on HCCL's own streams)."""
        threads, thread_at = _pairs(pid[rows], tid[rows])        # pids and tids: any int64, few pairs
        stream = np.array([_as_int(self.meta.thread_name.get((p, t), t)) for p, t in threads],
                          dtype=np.int64)[thread_at]
        keep = ~np.isin(stream, np.array(sorted(comm_streams), dtype=np.int64)) if comm_streams else \
            np.ones(len(rows), dtype=bool)
        rows, stream = rows[keep], stream[keep]
        if not len(rows):
            return
        pairs, at = _pairs(name[rows], arg[rows])
        kinds, types, texts = [], [], []
        for nm, a in pairs:
            task = _hardware_task(args.dict(a))
            kind = _hardware_kind(names[nm], task)
            kinds.append(kind)
            types.append(strings.code(comm_op_type(names[nm]) if kind == _COMM else op_type_of(names[nm])))
            texts.append(strings.code(args_text(task)))
        hardware.add(pos=pos[rows], sub=0, ts=ts[rows], dur=dur[rows], kind=np.array(kinds, dtype=np.int64)[at],
                     name=np.array([strings.code(names[nm]) for nm, _ in pairs], dtype=np.int64)[at],
                     type=np.array(types, dtype=np.int64)[at], tid=stream, device=out_device[rows], stream=stream,
                     value=0.0, step=-1, args=np.array(texts, dtype=np.int64)[at], corr=corr[rows])

    def _odd(self, trace: CompactTrace, args: _ArgsTable, flows: dict, strings: StringPool, comm_streams: set,
             main: _Rows, hardware: _Rows, comm: list, links: list) -> int:
        """The odd events, one by one, by the same rules (:meth:`_rule`); returns how many were malformed."""
        if not trace.odd:
            return 0
        thread_name, text_of = self.meta.thread_name, strings.strings
        arg_of = trace.columns["arg"]
        rows: list = []
        at: list = []
        tasks: list = []
        task_at: list = []
        bad = 0
        for i, (p, cat, name, epid, etid, ts, dur) in trace.odd.items():
            a = int(arg_of[i])
            try:
                process, device = self.meta.proc_name.get(epid, ""), self._device_of(epid)
                if self._unread(process, cat):
                    continue
                if type(name) is not str:
                    name = str(name)
                if ts is None or dur is None:       # dur: None only where unreadable on a complete event
                    raise ValueError("time")
                action, kind, name_code, type_code, out_device, step, with_args, with_corr = \
                    self._rule(process, device, cat, name, _PHASE[p], strings)
                if action == _SKIP:
                    continue
                tid = etid if type(etid) is int else _as_int(etid)
                corr = -1
                if flows and (with_corr or action == _HARDWARE or action == _HCCL):
                    key = (epid if type(epid) in _PLAIN else hashable(epid),
                           etid if type(etid) in _PLAIN else hashable(etid), ts)
                    corr = flows.get(key, -1)
                if action == _COUNTERS:
                    sub = 0
                    for series, value in args.dict(a).items():
                        try:
                            val = float(value)
                        except (TypeError, ValueError):
                            continue
                        rows.append((ts, 0, _COUNTER, f"{name} {series}".strip(), text_of[type_code], tid,
                                     out_device, -1, val, -1, "", -1))
                        at.append((i, sub))
                        sub += 1
                elif action == _HARDWARE:
                    if self.skip_hardware:
                        if corr >= 0:
                            links.append((i, (ts, name), corr))
                        continue
                    task = _hardware_task(args.dict(a))
                    stream = _as_int(thread_name.get((epid, etid), etid))
                    tasks.append((ts, dur, name, task, stream, out_device, corr))
                    task_at.append((i, 0))
                elif action == _HCCL:
                    lane = thread_name.get((epid, etid), "")
                    comm.append((i, _CommEvent(ts, dur, name, epid, tid, out_device, lane, args.dict(a), corr)))
                else:       # one row: _ROW, _MSTX_SPAN, _CANN_API
                    if action == _MSTX_SPAN:
                        kind = _RANGE if dur > 0 else _MARK
                    typ = _cann_level(args.dict(a), name) if action == _CANN_API else text_of[type_code]
                    rows.append((ts, dur, kind, text_of[name_code], typ, tid, out_device, -1, 0.0, step,
                                 args.text(a) if with_args else "", corr if with_corr else -1))
                    at.append((i, 0))
            except (TypeError, ValueError, KeyError, AttributeError, OverflowError):
                bad += 1
        main.add_tuples(rows, strings, at)
        kept = [(t, where) for t, where in zip(tasks, task_at) if t[4] not in comm_streams]
        hardware.add_tuples([(ts, dur, _hardware_kind(name, task), name,
                              comm_op_type(name) if _hardware_kind(name, task) == _COMM else op_type_of(name),
                              stream, device, stream, 0.0, -1, args_text(task), corr)
                             for (ts, dur, name, task, stream, device, corr), _ in kept],
                            strings, [where for _, where in kept])
        return bad

    def _comm_streams(self, trace: CompactTrace, args: _ArgsTable) -> set:
        """Streams named by the HCCL process's tasks (``stream id`` arg)."""
        comm_pids = {p for p, n in self.meta.proc_name.items() if n in _COMM_PROCESSES}
        c = trace.columns
        if not comm_pids or not c:
            return set()
        codes: set = set()
        mine = np.array([p in comm_pids for p in trace.pids], dtype=bool)    # by each read pid's code
        if mine.any():
            x = c["plain"] & (c["phase"] == _PH_X) & mine[c["pidc"]]
            codes.update(distinct_codes(c["arg"][x], len(args.values))[0].tolist())
        codes.update(int(c["arg"][i]) for i, v in trace.odd.items()
                     if v[0] == "X" and _is_key(v[3]) and v[3] in comm_pids)
        streams = set()
        for a in codes:
            try:
                got = args.dict(a)
            except ValueError:
                continue
            if "stream id" in got:
                streams.add(int_or(got.get("stream id"), -1))
        return streams

    def _device_of(self, epid: Any) -> int:
        dev = self.meta.proc_device.get(epid)
        return -1 if dev is None else (self.device if dev == -2 else dev)

    def _add_comm(self, rows: list) -> None:
        """HCCL operators and their tasks; a task takes the group of the operator holding it."""
        is_task = [is_comm_task(e.args) for e in self.comm]
        ops = sorted((e for e, t in zip(self.comm, is_task) if not t), key=lambda e: e.ts)
        op_group: dict[int, str] = {}
        seen: dict[str, int] = {}
        for e in ops:
            m = _GROUP_LANE_RE.match(e.lane)
            group = self.groups.get(e.name) or (m.group(1) if m else str(e.args.get("group", "default")))
            op_group[id(e)] = group
            if self.skip_hardware:     # kernel_details.csv has these operators; keep their group for it
                nth = seen.get(e.name, 0)
                seen[e.name] = nth + 1
                self.op_groups[(e.name, nth)] = group
                continue
            args = {k: v for k, v in e.args.items() if k in ("alg_type", "count", "data_type", "connection_id")}
            args["group"] = group
            args["Accelerator Core"] = "HCCL"
            rows.append((e.ts, e.dur, _COMM, e.name, comm_op_type(e.name), e.tid, e.device, -1, 0.0, -1,
                         args_text(args), e.corr))
        starts = np.array([e.ts for e in ops], dtype=np.int64)
        tasks = [e for e, task in zip(self.comm, is_task) if task]
        before = (np.searchsorted(starts, np.array([e.ts for e in tasks], dtype=np.int64), side="right") - 1).tolist()
        # (args, group) -> text and stream: the tasks share their args dicts (one per distinct text)
        texts: dict = {}
        op_types: dict = {}
        for e, j in zip(tasks, before):
            holder = None
            while j >= 0:
                o = ops[j]
                if o.epid == e.epid and o.ts + o.dur >= e.ts:
                    holder = o
                    break
                j -= 1
                if e.ts - ops[j + 1].ts > 10**10:
                    break
            group = op_group[id(holder)] if holder is not None else "default"
            text_stream = texts.get((id(e.args), group))
            if text_stream is None:
                text_stream = texts[(id(e.args), group)] = (args_text(hccl_task_args(e.args, group)),
                                                            int_or(e.args.get("stream id"), -1))
            if holder is not None:
                op_type = op_types.get(holder.name)
                if op_type is None:
                    op_type = op_types[holder.name] = comm_op_type(holder.name)
            else:
                op_type = e.name
            rows.append((e.ts, e.dur, _COMM, e.name, op_type, e.tid, e.device, text_stream[1], 0.0, -1,
                         text_stream[0], -1))
