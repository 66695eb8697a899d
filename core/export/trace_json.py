"""Chrome / Kineto trace JSON that Perfetto, chrome://tracing, HTA and
MindStudio Insight open.

Kineto conventions kept (reference/formats.md §1): a top-level object with
``schemaVersion``, ``"distributedInfo": {"rank": N, ...}`` written with a space
after each colon (HTA finds the rank with the regex ``"rank":\\s+(\\d+)``),
``baseTimeNanoseconds``, numeric ``ts``/``dur`` in µs with 3 decimals relative
to that base, ``ProfilerStep#N`` as ``user_annotation`` spans, and a final
``Record Window End`` instant. Events are written one per line.

Events are rendered per column, never per Python dict: each chunk of rows
becomes byte matrices (string pools, digits of integers and fixed-point
times) laid side by side (:mod:`npuprof.export.textrows`). Rows carrying
very long strings (call stacks) are formatted one by one instead, in place.

Launch links (the ``corr`` column, e.g. CANN's ``connectionId``) become
Kineto's: ``"correlation": id`` in the args of the launching host event and of
each device event it launched, and one flow per device event, ``s`` on the
launch and ``f`` (``"bp":"e"``) on the device event, cat ``ac2g`` (what HTA
and Perfetto read; :mod:`.trace_array` uses msprof's ``HostToDevice``). Flow
ids are 1..n per file; events whose partner is absent get neither.

Example::

    write_trace(result.events, Path("trace_view.json"), rank=0, world_size=1)
"""
from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Optional, Sequence

import numpy as np
import orjson

from ..analysis.grouping import small_unique
from .textrows import BackgroundWriter, Pool, RowBuilder, chunk_rows, compiled_rows
from ..events import EventKind, EventTable
from ..fileio import WriteBehind, atomic_write, open_private, secure_mkdir, temporary_name
from .forked import ForkedChild, available_cores, receive, send, wait_for_forked_files

DAY_NS = 86_400 * 10**9
CATEGORY = {
    EventKind.STEP: "user_annotation", EventKind.RANGE: "user_annotation", EventKind.OP: "cpu_op",
    EventKind.KERNEL: "kernel", EventKind.API: "cpu_op", EventKind.COMM: "collective_comm",
    EventKind.STACK: "python_function",
}
DEVICE_PID_BASE = 1 << 24   # synthetic pid for device d: DEVICE_PID_BASE + d
CHUNK = 200_000
BACKGROUND_MIN_EVENTS = 100_000   # larger traces are written from a second thread
FORK_MIN_EVENTS = 1_000_000       # larger traces may be rendered by a forked child (see write_trace_beside)
LONG_ROW = 512              # rows with more pooled text than this are formatted one by one
# chunks rendered in one compiled call: at most this many rows, their text about this many bytes
BATCH_ROWS = 200_000
BATCH_BYTES = 8 << 20
ROW_BYTES = 200             # a row's text beside its pooled strings, about
_MARK, _COUNTER, _MEMORY = int(EventKind.MARK), int(EventKind.COUNTER), int(EventKind.MEMORY)
FLOW_CAT = "ac2g"           # Kineto's CPU launch -> device flow category


def _json_strings(strings: list[str]) -> list[str]:
    return [orjson.dumps(s).decode() for s in strings]


def _args_json(strings: list[str]) -> list[str]:
    out = []
    for s in strings:
        if s.startswith("{"):
            try:
                out.append(orjson.dumps(orjson.loads(s)).decode())
                continue
            except orjson.JSONDecodeError:
                pass
        out.append("{}" if not s else orjson.dumps({"info": s}).decode())
    return out


def _value_json(v: float) -> str:
    return repr(v) if math.isfinite(v) else "null"   # a Python float: numpy's ufunc costs ~1 µs a call


def _value_texts(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    """(texts, codes): the JSON text of each distinct value of ``values``, and each value's code into them.
    Equal values share a text: ``np.unique``'s, from a stable sort, which unlike its default one does not
    slow down on counters' many repeated values (~6x here). -0.0 equals 0.0 but prints apart: where it is
    among the values, ``np.unique``'s own texts (whichever of the two its sort keeps, as the grouped
    rendering always printed; the one-pass rendering keeps such chunks out, :func:`_renders_long_rows`)."""
    if ((values == 0) & np.signbit(values)).any():
        uniq, at = np.unique(values, return_inverse=True)
        return [_value_json(v) for v in uniq.tolist()], at.reshape(-1)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    first = np.ones(len(values), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]     # NaN != NaN: each NaN its own text, "null" all the same
    codes = np.empty(len(values), dtype=np.int64)
    codes[order] = np.cumsum(first) - 1
    return [_value_json(v) for v in ordered[first].tolist()], codes


def trace_header(rank: int, world_size: int, base_ns: int, metadata: Optional[dict] = None) -> str:
    """The object prefix up to ``"traceEvents": [``; keys in Kineto's order."""
    head = {"schemaVersion": 1, "deviceProperties": [],
            "distributedInfo": {"backend": "none", "rank": rank, "world_size": world_size}}
    head.update(metadata or {})
    head.update({"displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns})
    body = json.dumps(head)  # default separators keep '": ' so HTA's rank regex matches
    return body[:-1] + ', "traceEvents": [\n'


def _host_threads(events: EventTable) -> list[tuple[int, int]]:
    """Distinct (pid, tid) of host events, without sorting the whole table."""
    pid, tid, dev = events["pid"], events["tid"], events["device"]
    keys: set = set()
    step = 1 << 20
    for lo in range(0, len(events), step):
        host = dev[lo:lo + step] < 0
        if not host.any():
            continue
        p, t = pid[lo:lo + step], tid[lo:lo + step]
        for pv in small_unique(p, host).tolist():
            sel = host & (p == pv)
            keys.update((pv, tv) for tv in small_unique(t, sel).tolist())
    return sorted(keys)


def metadata_events(events: EventTable, base_pid: int, host_name: Callable[[int], str] = "Host {}".format,
                     device_name: Callable[[int], str] = "Ascend Hardware {}".format,
                     thread_name: Callable[[int, int], str] = lambda pid, tid: f"Thread {tid}") -> list[str]:
    """``M`` events naming every process (``host_name(pid)``, ``device_name(d)``) and host thread
    (``thread_name(pid, tid)``)."""
    lines = []
    pids = set(small_unique(events["pid"]).tolist()) if len(events) else set()
    devices = set(small_unique(events["device"], events["device"] >= 0).tolist()) if len(events) else set()
    for pid in sorted(pids | {base_pid}):
        name = orjson.dumps(host_name(pid)).decode()
        lines.append(f'{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"args":{{"name":{name}}}}}')
        lines.append(f'{{"ph":"M","name":"process_labels","pid":{pid},"tid":0,"args":{{"labels":"CPU"}}}}')
        lines.append(f'{{"ph":"M","name":"process_sort_index","pid":{pid},"tid":0,"args":{{"sort_index":{pid}}}}}')
    for d in sorted(devices):
        pid = DEVICE_PID_BASE + d
        name = orjson.dumps(device_name(d)).decode()
        lines.append(f'{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"args":{{"name":{name}}}}}')
        lines.append(f'{{"ph":"M","name":"process_labels","pid":{pid},"tid":0,"args":{{"labels":"NPU {d}"}}}}')
    if len(events):
        for pid, tid in _host_threads(events):
            name = orjson.dumps(thread_name(pid, tid)).decode()
            lines.append(f'{{"ph":"M","name":"thread_name","pid":{pid},"tid":{tid},"args":{{"name":{name}}}}}')
    return lines


class _Pools:
    """Per-table text pools: JSON of every string, and the args bodies."""

    def __init__(self, strings: list[str]) -> None:
        # Pools: laid out once for every chunk when small (see textrows.Pool)
        names, args = _json_strings(strings), _args_json(strings)
        self.names, self.args = Pool(names), Pool(args)
        # X events: args object is {"Op Type":..,"Step":..[,device,stream]} + the event's own args
        self.rest = Pool(["," + a[1:] if len(a) > 2 else "}" for a in args])
        self.name_len = np.fromiter(map(len, names), dtype=np.int64, count=len(strings))
        self.args_len = np.fromiter(map(len, args), dtype=np.int64, count=len(strings))
        cats = {int(k): v for k, v in CATEGORY.items()}
        cat = [cats.get(k, "cpu_op") for k in range(256)]
        self.cat = Pool(cat)
        self.prefix = [f'{{"ph":"X","cat":"{c}","name":' for c in cat]
        # each kind's text up to its name, instants included (_render_in_place)
        heads = list(self.prefix)
        heads[_COUNTER] = '{"ph":"C","name":'
        heads[_MARK] = '{"ph":"i","s":"t","cat":"cpu_instant_event","name":'
        heads[_MEMORY] = '{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]"'
        self.heads = Pool(heads)


def _row_python(p: _Pools, kind: int, name: int, pid: int, tid: int, ts: float, dur: float, typ: int, step: int,
                device: int, args: int, value: float, corr: int = -1) -> str:
    """One event formatted by hand (rows with very long strings)."""
    if kind == _COUNTER:
        return (f'{{"ph":"C","name":{p.names[name]},"pid":{pid},"tid":{tid},'
                f'"ts":{ts:.3f},"args":{{"value":{_value_json(value)}}}}}')
    if kind == _MARK:
        return (f'{{"ph":"i","s":"t","cat":"cpu_instant_event","name":{p.names[name]},'
                f'"pid":{pid},"tid":{tid},"ts":{ts:.3f},"args":{p.args[args]}}}')
    if kind == _MEMORY:
        return (f'{{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":{pid},'
                f'"tid":{tid},"ts":{ts:.3f},"args":{{"Bytes":{_value_json(value)}}}}}')
    extra = f'"Op Type":{p.names[typ]},"Step":{step}'
    if device >= 0:
        extra += f',"device":{device},"stream":{tid}'
    if corr >= 0:
        extra += f',"correlation":{corr}'
    return (f'{p.prefix[kind]}{p.names[name]},"pid":{pid},"tid":{tid},"ts":{ts:.3f},"dur":{dur:.3f},'
            f'"args":{{{extra}{p.rest[args]}}}')


def _render_place(rows: RowBuilder, c: dict, base_ns: int) -> None:
    """The ``,"pid":…,"tid":…,"ts":…`` fields every rendered event has."""
    rows.literal(',"pid":')
    rows.integer(c["pid"])
    rows.literal(',"tid":')
    rows.integer(c["tid"])
    rows.literal(',"ts":')
    rows.fixed3(c["ts"] - base_ns)


def _render_device_and_link(rows, c: dict, on_dev: np.ndarray, linked: Optional[np.ndarray]) -> None:
    """The ``"device"``/``"stream"`` args of the rows ``on_dev`` and the ``"correlation"`` of those ``linked``."""
    if on_dev.any():
        flag = on_dev.astype(np.int64)
        rows.pooled(flag, ["", ',"device":'])
        rows.integer(c["device"], on_dev)
        rows.pooled(flag, ["", ',"stream":'])
        rows.integer(c["tid"], on_dev)
    if linked is not None and linked.any():
        rows.pooled(linked.astype(np.int64), ["", ',"correlation":'])
        rows.integer(c["corr"], linked)


def _render_x(p: _Pools, c: dict, base_ns: int) -> bytes:
    """Complete events (spans): every kind but marks, counters and memory."""
    rows = RowBuilder(len(c["kind"]))
    rows.literal('{"ph":"X","cat":"')
    rows.pooled(c["kind"], p.cat)
    rows.literal('","name":')
    rows.pooled(c["name"], p.names)
    _render_place(rows, c, base_ns)
    rows.literal(',"dur":')
    rows.fixed3(c["dur"])
    rows.literal(',"args":{"Op Type":')
    rows.pooled(c["type"], p.names)
    rows.literal(',"Step":')
    rows.integer(c["step"])
    _render_device_and_link(rows, c, c["device"] >= 0, c.get("linked"))
    rows.pooled(c["args"], p.rest)
    rows.literal("},\n")
    return rows.render()


def _render_instants(p: _Pools, c: dict, base_ns: int, kind: int) -> bytes:
    """Marks (thread instants with args), counters and memory instants (numeric value)."""
    rows = RowBuilder(len(c["kind"]))
    if kind == _COUNTER:
        rows.literal('{"ph":"C","name":')
        rows.pooled(c["name"], p.names)
    elif kind == _MARK:
        rows.literal('{"ph":"i","s":"t","cat":"cpu_instant_event","name":')
        rows.pooled(c["name"], p.names)
    else:
        rows.literal('{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]"')
    _render_place(rows, c, base_ns)
    if kind == _MARK:
        rows.literal(',"args":')
        rows.pooled(c["args"], p.args)
        rows.literal("},\n")
    else:
        rows.literal(',"args":{"value":' if kind == _COUNTER else ',"args":{"Bytes":')
        texts, inv = _value_texts(c["value"])
        rows.pooled(inv, texts)
        rows.literal("}},\n")
    return rows.render()


def _render_rows(p: _Pools, cols: dict, base_ns: int) -> list[bytes]:
    """Trace lines (each followed by ``,\\n``) of a chunk of short rows, as one block per group
    (written one after another, not joined: a join would copy every byte once more).

    Spans come first, then marks, counters and memory instants: each group
    keeps time order, and one template per group keeps the rendering tight
    (trace viewers order events themselves, as Kineto's own files are grouped
    by activity type too).
    """
    kind = cols["kind"]
    group = _GROUP[kind]   # 0: span, else the instant kind's place in _INSTANTS
    if not group.any():
        return [_render_x(p, cols, base_ns)]
    out = []
    rows = np.flatnonzero(group == 0)
    if len(rows):   # each group takes only the columns its template reads
        out.append(_render_x(p, {k: cols[k][rows] for k in _X_COLUMNS if k in cols}, base_ns))
    for g, k in enumerate(_INSTANTS, start=1):
        rows = np.flatnonzero(group == g)
        if len(rows):
            out.append(_render_instants(p, {key: cols[key][rows] for key in _INSTANT_COLUMNS}, base_ns, k))
    return out


_INSTANTS = (_MARK, _COUNTER, _MEMORY)
_GROUP = np.zeros(256, dtype=np.uint8)
_GROUP[list(_INSTANTS)] = np.arange(1, len(_INSTANTS) + 1)
_X_COLUMNS = ("kind", "name", "type", "args", "pid", "tid", "ts", "dur", "step", "device", "linked", "corr")
_INSTANT_COLUMNS = ("kind", "name", "args", "pid", "tid", "ts", "value")


def _trace_pid_tid(events: EventTable, rows: Any) -> tuple[np.ndarray, np.ndarray]:
    """The pid and tid rows are drawn on: device events in their device's process, one thread per stream."""
    c = events.cols
    device = c["device"][rows]
    on_dev = device >= 0
    pid, tid = c["pid"][rows], c["tid"][rows]
    if on_dev.any():
        pid = np.where(on_dev, DEVICE_PID_BASE + device.astype(np.int64), pid)
        tid = np.where(on_dev, np.maximum(c["stream"][rows], 0).astype(np.int64), tid)
    return pid, tid


def _chunk_columns(events: EventTable, lo: int, hi: int, linked: Optional[np.ndarray] = None) -> dict:
    c = events.cols
    pid, tid = _trace_pid_tid(events, slice(lo, hi))
    out = {"kind": c["kind"][lo:hi], "name": c["name"][lo:hi], "type": c["type"][lo:hi],
           "args": c["args"][lo:hi], "pid": pid, "tid": tid, "ts": c["ts"][lo:hi], "dur": c["dur"][lo:hi],
           "step": c["step"][lo:hi], "device": c["device"][lo:hi], "value": c["value"][lo:hi]}
    if linked is not None:
        out["linked"], out["corr"] = linked[lo:hi], c["corr"][lo:hi]
    return out


def launch_links(events: EventTable) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(linked, launch_rows, device_rows)``: which rows carry a link whose
    other end is in the table, and one (launch, device event) pair per linked
    device event, in table order. None when nothing is linked.

    Per ``corr`` value the launch is its shortest host span (the innermost
    call when nested API levels share an id); each device span with that
    value is one of its targets. Example::

        >>> t = EventTable.from_records(ts=[0, 5, 9], dur=[10, 3, 1], device=[-1, 0, 0],
        ...                             stream=[-1, 2, 2], corr=[7, 7, 8])
        >>> linked, src, dst = launch_links(t)
        >>> linked.tolist(), src.tolist(), dst.tolist()
        ([True, True, False], [0], [1])
    """
    corr = events["corr"]
    if not len(corr) or int(corr.max()) < 0:
        return None
    kind = events["kind"][corr >= 0]
    idx = np.flatnonzero(corr >= 0)[(kind != _MARK) & (kind != _COUNTER) & (kind != _MEMORY)]
    on_dev = events["device"][idx] >= 0
    hosts, devs = idx[~on_dev], idx[on_dev]
    if not len(hosts) or not len(devs):
        return None
    order = np.argsort(corr[hosts], kind="stable")
    hc = corr[hosts][order]
    first = np.ones(len(hc), dtype=bool)
    first[1:] = hc[1:] != hc[:-1]
    if not first.all():   # ids shared by nested host calls: the shortest comes first
        order = np.lexsort((events["dur"][hosts], corr[hosts]))
        hc = corr[hosts][order]
    hosts = hosts[order]
    launch, launch_c = hosts[first], hc[first]
    pos = np.minimum(np.searchsorted(launch_c, corr[devs]), len(launch_c) - 1)
    hit = launch_c[pos] == corr[devs]
    if not hit.any():
        return None
    dst, src = devs[hit], launch[pos[hit]]
    linked = np.zeros(len(events), dtype=bool)
    linked[dst] = True
    linked[src] = True
    return linked, src, dst


def _flow_blocks(events: EventTable, src: np.ndarray, dst: np.ndarray, base_ns: int, cat: str,
                 first_id: int = 1) -> Iterable[bytes]:
    """``s`` (on the launch) and ``f`` (``bp:"e"``, on the device event) per link, ids from ``first_id``."""
    tail = f',"cat":"{cat}","name":"{cat}"'
    for lo in range(0, len(dst), CHUNK):
        for rows, ph, end in ((src[lo:lo + CHUNK], "s", "},\n"), (dst[lo:lo + CHUNK], "f", ',"bp":"e"},\n')):
            pid, tid = _trace_pid_tid(events, rows)
            out = RowBuilder(len(rows))
            out.literal(f'{{"ph":"{ph}","id":')
            out.integer(np.arange(first_id + lo, first_id + lo + len(rows), dtype=np.int64))
            out.literal(',"pid":')
            out.integer(pid)
            out.literal(',"tid":')
            out.integer(tid)
            out.literal(',"ts":')
            out.fixed3(events["ts"][rows] - base_ns)
            out.literal(tail + end)
            yield out.render()


def event_blocks(events: EventTable, base_ns: int, flow_cats: Sequence[str] = (FLOW_CAT,), first_chunk: int = 0,
                 stop: Optional[Callable[[int, int], bool]] = None) -> Iterable[bytes]:
    """Trace event lines for a table, each followed by ``,\\n``, in chunks (bounded memory);
    the flows of its launch links come last, one set per category in ``flow_cats`` (distinct ids).

    Two processes can share the work: chunks start at number ``first_chunk``,
    and the blocks end (flows not written) before chunk ``j`` when ``stop(j, number of chunks)`` is true.
    The chunks' size keeps the cell renderer's matrices small; the compiled renderer takes a run of them
    in one call (about :data:`BATCH_BYTES` of text: a block each), with the bytes of one chunk at a time
    (``stop`` is asked for each chunk of a run before it is rendered).
    """
    if not len(events):
        return
    links = launch_links(events)
    linked = links[0] if links is not None else None
    p = _Pools(events.strings)
    # bytes of pooled text per row decide both the chunk size and the rows done by hand
    longest_name = int(p.name_len.max(initial=2))
    step = chunk_rows(2 * longest_name + ROW_BYTES, CHUNK)
    count = -(-len(events) // step)
    may_be_long = 2 * longest_name + int(p.args_len.max(initial=0)) > LONG_ROW
    # the compiled renderer has no matrix to bound: a run of chunks is rendered in one call (_render_batch)
    most = max(1, min(BATCH_BYTES // ROW_BYTES, BATCH_ROWS) // step) if compiled_rows() else 1
    j = first_chunk
    while j < count:
        if stop is not None and stop(j, count):
            return
        lo = j * step
        text_len = None
        end = min(count, j + most)
        if end - j > 1:
            text_len, chunks = _batch_text(events, p, lo, step, end - j)
            end = j + chunks
        for k in range(j + 1, end):   # asked before rendering: the run ends where stop says
            if stop is not None and stop(k, count):
                end = k
                break
        hi = min(len(events), end * step)
        cols = _chunk_columns(events, lo, hi, linked)
        if text_len is not None and end - j > 1:
            block = _render_batch(p, cols, base_ns, step, text_len[:hi - lo])
            if block is not None:
                yield block
                j = end
                continue
        for c in range(j, end):
            part = {k: v[(c - j) * step:(c + 1 - j) * step] for k, v in cols.items()}
            yield from _chunk_blocks(p, part, base_ns, may_be_long, linked is not None)
        j = end
    if links is not None:
        for k, cat in enumerate(flow_cats):
            yield from _flow_blocks(events, links[1], links[2], base_ns, cat, first_id=1 + k * len(links[2]))


def _chunk_blocks(p: _Pools, cols: dict, base_ns: int, may_be_long: bool, linked: bool) -> Iterable[bytes]:
    """The lines of one chunk: group by group (:func:`_render_rows`), its long rows in place or by hand."""
    n = len(cols["kind"])
    if not may_be_long:   # no pooled text is long enough: no row to look at one by one
        yield from _render_rows(p, cols, base_ns)
        return
    text_len = p.name_len[cols["name"]] + p.name_len[cols["type"]] + p.args_len[cols["args"]]
    long_rows = np.flatnonzero(text_len > LONG_ROW)
    if len(long_rows) and _renders_long_rows(cols, long_rows, base_ns):
        yield _render_in_place(p, cols, base_ns, long_rows)
        return
    start = 0
    for r in long_rows.tolist() + [n]:
        if r > start:
            yield from _render_rows(p, {k: v[start:r] for k, v in cols.items()}, base_ns)
        if r < n:
            yield (_row_python(p, int(cols["kind"][r]), int(cols["name"][r]), int(cols["pid"][r]),
                               int(cols["tid"][r]), (int(cols["ts"][r]) - base_ns) / 1000.0,
                               int(cols["dur"][r]) / 1000.0, int(cols["type"][r]), int(cols["step"][r]),
                               int(cols["device"][r]), int(cols["args"][r]), float(cols["value"][r]),
                               int(cols["corr"][r]) if linked and cols["linked"][r] else -1)
                   + ",\n").encode()
        start = r + 1


def _batch_text(events: EventTable, p: _Pools, lo: int, step: int, most: int) -> tuple[np.ndarray, int]:
    """The pooled text length of the rows of ``most`` chunks from row ``lo`` on, and how many of those chunks
    (at least one) one compiled render takes: their text, with :data:`ROW_BYTES` a row, under
    :data:`BATCH_BYTES`."""
    c = events.cols
    hi = min(len(events), lo + most * step)
    text_len = p.name_len[c["name"][lo:hi]] + p.name_len[c["type"][lo:hi]] + p.args_len[c["args"][lo:hi]]
    per_chunk = np.add.reduceat(text_len + ROW_BYTES, np.arange(0, hi - lo, step))
    return text_len, max(1, int(np.searchsorted(np.cumsum(per_chunk), BATCH_BYTES, side="right")))


def _render_batch(p: _Pools, cols: dict, base_ns: int, step: int, text_len: np.ndarray) -> Optional[bytes]:
    """Consecutive chunks of ``step`` rows (``text_len``: each row's pooled text) in one compiled render: the
    bytes :func:`_chunk_blocks` gives chunk after chunk (each chunk's rows in their groups, see
    :func:`_render_in_place`); None where that render would not give them (no compiled renderer, a long
    row's times, a -0.0 value)."""
    long_rows = np.flatnonzero(text_len > LONG_ROW)
    if not _renders_long_rows(cols, long_rows, base_ns):
        return None
    return _render_in_place(p, cols, base_ns, long_rows, step)


# |ns| below this prints the same through ``f"{ns / 1000.0:.3f}"`` (:func:`_row_python`) as exactly
# (``fixed3``): half a double's ulp at 2**43 µs is under half a thousandth
_FLOAT_EXACT_NS = 2 ** 43 * 1000


def _renders_long_rows(cols: dict, long_rows: np.ndarray, base_ns: int) -> bool:
    """Whether :func:`_render_in_place` gives this chunk's bytes: the compiled renderer is built (it has no
    per-row width limit) and every long row's times print alike both ways."""
    if not compiled_rows():
        return False
    ts = cols["ts"][long_rows].astype(np.int64) - base_ns
    dur = cols["dur"][long_rows]
    if not ((np.abs(ts) < _FLOAT_EXACT_NS).all() and (np.abs(dur) < _FLOAT_EXACT_NS).all()):
        return False
    # each group prints the value its np.unique keeps for 0.0 and -0.0 alike: only without -0.0 is that
    # the same text whichever rows share the unique
    value = cols["value"]
    return not bool(((value == 0) & np.signbit(value)).any())


def _render_in_place(p: _Pools, cols: dict, base_ns: int, long_rows: np.ndarray, step: int = 0) -> bytes:
    """A chunk with long rows in one compiled render, the same bytes as rendering each stretch between
    two long rows group by group (:func:`_render_rows`) and each long row by hand (:func:`_row_python`):
    the rows are put in that order, and one template with every group's pieces (each present in its
    group's rows only) renders them. Thousands of stretches of a few rows each (torch_npu's operators
    with call stacks) cost a render call each otherwise. With ``step``, the rows are chunks of ``step``
    rows, each ending its last stretch: the bytes of rendering them one after another."""
    n = len(cols["kind"])
    is_long = np.zeros(n, dtype=bool)
    is_long[long_rows] = True
    before = np.cumsum(is_long) - is_long          # long rows before each row
    if step:                                       # and a chunk's start ends a stretch, as a long row does
        before += np.arange(n) // step
    stretch = 2 * before + is_long                 # a long row sorts after the stretch before it
    group = np.where(is_long, 0, _GROUP[cols["kind"]])
    order = np.lexsort((group, stretch))           # stable: time order kept within a group
    c = {k: v[order] for k, v in cols.items()}
    kind = c["kind"].astype(np.int64)
    grp = group[order]
    span, mark = grp == 0, kind == _MARK
    valued = (kind == _COUNTER) | (kind == _MEMORY)
    span &= ~(mark | valued)                       # a long mark/counter keeps its own template
    rows = RowBuilder(n)
    rows.pooled(kind, p.heads)
    rows.pooled(c["name"], p.names, kind != _MEMORY)
    _render_place(rows, c, base_ns)
    rows.pooled(span.astype(np.int64), ["", ',"dur":'])
    rows.fixed3(c["dur"], span)
    rows.pooled(span.astype(np.int64), ["", ',"args":{"Op Type":'])
    rows.pooled(c["type"], p.names, span)
    rows.pooled(span.astype(np.int64), ["", ',"Step":'])
    rows.integer(c["step"], span)
    linked = c.get("linked")
    _render_device_and_link(rows, c, span & (c["device"] >= 0), None if linked is None else linked & span)
    rows.pooled(c["args"], p.rest, span)
    rows.pooled(mark.astype(np.int64), ["", ',"args":'])
    rows.pooled(c["args"], p.args, mark)
    if valued.any():
        rows.pooled(np.where(kind == _COUNTER, 1, np.where(kind == _MEMORY, 2, 0)),
                    ["", ',"args":{"value":', ',"args":{"Bytes":'])
        texts, inv = _value_texts(c["value"][valued])
        codes = np.zeros(n, dtype=np.int64)
        codes[valued] = inv
        rows.pooled(codes, texts, valued)
        rows.pooled(valued.astype(np.int64), ["", "}"])
    rows.literal("},\n")
    return rows.render()


def event_lines(events: EventTable, base_ns: int) -> Iterable[str]:
    """Trace event JSON lines joined by ``,\\n`` per chunk (kept for callers of the text form)."""
    for block in event_blocks(events, base_ns):
        yield block.decode("utf-8")[:-2]


def base_time_ns(events: EventTable) -> int:
    """Base for relative ``ts``: the start of the UTC day of the first event."""
    if not len(events):
        return 0
    return int(events["ts"].min()) // DAY_NS * DAY_NS


def write_event_blocks(fh: IO[bytes], events: EventTable, base_ns: int,
                       flow_cats: Sequence[str] = (FLOW_CAT,)) -> None:
    """Every event line of the table (each followed by ``,\\n``), then its flows (one set per category
    in ``flow_cats``); large tables are rendered in a second thread."""
    if len(events) >= BACKGROUND_MIN_EVENTS:
        with BackgroundWriter(fh) as w:   # render the next chunk while this one is written
            for block in event_blocks(events, base_ns, flow_cats):
                w.write(block)
    else:
        for block in event_blocks(events, base_ns, flow_cats):
            fh.write(block)


def window_end_event(events: EventTable, base_ns: int, host_pid: int = 0) -> str:
    """The closing ``Record Window End`` global instant, at the end of the last event."""
    ts, dur, step = events["ts"], events["dur"], 1 << 20   # in slices: no table-sized temporary to fault in
    end = max((int((ts[i:i + step] + dur[i:i + step]).max()) for i in range(0, len(ts), step)), default=None)
    end_ts = (end - base_ns) / 1000.0 if end is not None else 0.0
    return f'{{"ph":"i","s":"g","name":"Record Window End","pid":{host_pid},"tid":0,"ts":{end_ts:.3f}}}'


def _trace_head(events: EventTable, base: int, rank: int = 0, world_size: int = 1,
                metadata: Optional[dict] = None, host_pid: int = 0) -> bytes:
    """The header object and the metadata events."""
    head = trace_header(rank, world_size, base, metadata)
    meta = metadata_events(events, host_pid)
    if meta:
        head += ",\n".join(meta) + ",\n"
    return head.encode()


def _trace_tail(events: EventTable, base: int, host_pid: int = 0) -> bytes:
    return (window_end_event(events, base, host_pid) + "\n]}\n").encode()


def write_trace_to(fh: IO[bytes], events: EventTable, rank: int = 0, world_size: int = 1,
                   metadata: Optional[dict] = None, host_pid: int = 0) -> None:
    base = base_time_ns(events)
    fh.write(_trace_head(events, base, rank, world_size, metadata, host_pid))
    write_event_blocks(fh, events, base)
    fh.write(_trace_tail(events, base, host_pid))


def trace_settings(result: Any) -> dict:
    """The rank, world size, metadata and host pid an analysed run's (an
    :class:`~npuprof.analysis.result.AnalysisResult`) Kineto trace is written with.

    Example::

        write_trace(result.events, Path("trace.json"), **trace_settings(result))
    """
    return info_trace_settings(result.info)


def info_trace_settings(info: Any) -> dict:
    """:func:`trace_settings` from a run's :class:`~npuprof.runinfo.RunInfo` alone."""
    meta: dict = {"npuprof_version": info.version, "partial": info.partial}
    if info.record_shapes is True:
        meta["record_shapes"] = 1   # Kineto's metadata pair
    return {"rank": info.rank, "world_size": max(info.world_size, info.rank + 1), "metadata": meta,
            "host_pid": info.pid}


def write_trace(events: EventTable, path: Path, rank: int = 0, world_size: int = 1,
                metadata: Optional[dict] = None, use_gzip: bool = False, host_pid: int = 0) -> Path:
    """Write a Kineto-style trace atomically (gzip when asked or path ends .gz)."""
    return write_trace_file(path, lambda fh: write_trace_to(fh, events, rank, world_size, metadata, host_pid),
                            use_gzip)


def write_trace_file(path: Path, body: Callable[[IO[bytes]], None], use_gzip: bool = False) -> Path:
    """Run ``body`` on the file at ``path``, atomically; gzip when asked or the path ends .gz."""
    use_gzip = use_gzip or str(path).endswith(".gz")

    def write(fh: IO[bytes]) -> None:
        if use_gzip:
            with gzip.GzipFile(fileobj=fh, mode="wb", compresslevel=6, mtime=0) as gz:
                body(gz)
        else:
            body(fh)

    return atomic_write(path, write)


def load_trace(path: Path) -> Any:
    """Read a trace written by npuprof or another tool (object or array form)."""
    raw = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        raw = gzip.decompress(raw)
    return orjson.loads(raw)


class ForkedTrace(ForkedChild):
    """A Kineto trace rendered by a forked child process into a temporary file
    next to ``path``; :meth:`finish` renames it in place (or raises the
    child's error), :meth:`discard` stops the child and removes the file.

    The child shares the parent's event table copy-on-write (it only reads
    it), so the trace renders on a second core while the parent analyses and
    writes the other outputs. When the parent comes to :meth:`finish` before
    the child is done, the chunks left are shared: the child, asked at its
    next chunk, renders the first half of them on, the parent renders the
    second half (and the flows and the end) into a second temporary file,
    copied after the child's bytes once their length is known (in the
    kernel: ``copy_file_range``).

    Messages child -> parent: ``S`` (asked: next chunk, byte offset, chunk
    count; the child then reads ``L`` and the chunk it stops at on the control pipe),
    ``D`` (every event rendered), ``P`` (its share rendered: its byte count),
    ``E`` (an error, pickled), ``K`` (file closed, done).
    """

    def __init__(self, events: EventTable, path: Path, settings: dict) -> None:
        self.events = events
        self.path = Path(path)
        self.settings = settings
        self.tmp = temporary_name(self.path)
        self.part = self.tmp.with_name(self.tmp.name + ".part")
        self.temporaries = (self.tmp, self.part)
        self.made_dir = not self.path.parent.exists()
        self._start(self._render, control=True)

    def _render(self, msg: int, ctl: int) -> None:
        """The child's work: the trace into ``tmp``, up to the chunk the parent says when it asks."""
        os.set_blocking(ctl, False)
        events, base = self.events, base_time_ns(self.events)
        written = 0
        limit: Optional[int] = None   # the chunk the child stops at, once the parent has said
        total = 0

        def stop(j: int, count: int) -> bool:
            nonlocal limit, total
            total = count
            if limit is None:
                try:
                    asked = os.read(ctl, 1)
                except BlockingIOError:
                    return False
                if not asked:   # the parent is gone
                    return False
                send(msg, b"S", f"{j} {written} {count}".encode())
                os.set_blocking(ctl, True)
                answer = b""
                while len(answer) < 9:   # b"L" and the chunk to stop at (more requests before it: skipped)
                    data = os.read(ctl, 9 - len(answer))
                    if not data:
                        break
                    answer = (answer + data).lstrip(b"s")
                limit = int.from_bytes(answer[1:], "little") if len(answer) == 9 else count
            return j >= limit

        secure_mkdir(self.path.parent)
        fd = open_private(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "wb") as fh:
            head = _trace_head(events, base, **self.settings)
            fh.write(head)
            written += len(head)
            with BackgroundWriter(fh) as w:
                for block in event_blocks(events, base, stop=stop):
                    w.write(block)
                    written += len(block)
                if limit is None or limit >= total:
                    w.write(_trace_tail(events, base, self.settings.get("host_pid", 0)))
                    send(msg, b"D")
                else:
                    send(msg, b"P", str(written).encode())

    def finish(self, help: bool = True) -> Path:
        """Wait for the child (rendering the second half of the chunks it has not reached here when
        ``help``); the trace at ``path``, or the child's error raised here. Interrupted (Ctrl-C),
        the child is stopped and its files removed."""
        try:
            return self._finish(help)
        except BaseException:
            self.discard()
            raise

    def _finish(self, help: bool) -> Path:
        if help:
            try:
                os.write(self._ctl, b"s")
            except OSError:   # the child is gone already: its message tells why
                pass
        error: Optional[BaseException] = None
        child_bytes: Optional[int] = None
        while True:
            kind, payload = receive(self._msg)
            if kind == b"S":
                j, _, count = map(int, payload.split())
                # the parent takes 2/5 of what is left: it also copies its part into the child's file
                # afterwards, which costs about half of rendering it (make bench's trace rows)
                split = j + (count - j) * 3 // 5
                os.write(self._ctl, b"L" + split.to_bytes(8, "little"))
                if split < count:   # raising (Ctrl-C too): finish's discard stops the child, not waiting for it
                    self._render_part(split)
            elif kind == b"P":
                child_bytes = int(payload)
            elif kind == b"E":
                error = self._child_error(payload)
            elif kind in (b"K", b""):
                break
        status = self._reap()
        if error is None and status != 0:
            error = RuntimeError(f"the process writing {self.path.name} ended with wait status {status}")
        if error is None and child_bytes is not None:
            try:
                _append_file(self.part, self.tmp, child_bytes)
            except BaseException as e:
                error = e
        if error is not None:
            self._remove()
            raise error
        self._remove(self.part)
        os.replace(self.tmp, self.path)
        return self.path

    def _render_part(self, first_chunk: int) -> None:
        """Chunks from ``first_chunk`` on, the flows and the end, into the second temporary file."""
        events, base = self.events, base_time_ns(self.events)
        fd = open_private(self.part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "wb") as fh:
            with BackgroundWriter(fh, write_behind=False) as w:   # read back right away: kept cached
                for block in event_blocks(events, base, first_chunk=first_chunk):
                    w.write(block)
                w.write(_trace_tail(events, base, self.settings.get("host_pid", 0)))

    def discard(self) -> None:
        """Stop the child and remove what it wrote, and the folder when the trace made it."""
        super().discard()
        if self.made_dir:
            try:
                os.rmdir(self.path.parent)
            except OSError:
                pass


def _append_file(src: Path, dst: Path, offset: int) -> None:
    """Copy the file ``src`` into ``dst`` from ``offset`` on (in the kernel where it can), window
    by window, written behind."""
    size = os.path.getsize(src)
    fin = os.open(src, os.O_RDONLY)
    try:
        fout = os.open(dst, os.O_WRONLY)
        try:
            with WriteBehind(fout, start=offset) as behind:
                done = 0
                fast = hasattr(os, "copy_file_range")
                while done < size:
                    step = min(size - done, behind.window)
                    if fast:
                        try:
                            n = os.copy_file_range(fin, fout, step, done, offset + done)
                        except OSError:   # not here (another file system, an old kernel): read and write
                            fast = False
                            continue
                    else:
                        data = os.pread(fin, min(step, 8 << 20), done)
                        n = os.pwrite(fout, data, offset + done) if data else 0
                    if not n:
                        raise OSError(f"{src} ended after {done} of {size} bytes")
                    done += n
                    behind.update(offset + done)
        finally:
            os.close(fout)
    finally:
        os.close(fin)


def write_trace_beside(events: EventTable, path: Path, may_fork: bool,
                       help_after: Optional[Callable[[], Any]] = None, **settings: Any) -> Path:
    """:func:`write_trace`, rendered by a forked child (:class:`ForkedTrace`) that shares the table
    copy-on-write when the table has at least :data:`FORK_MIN_EVENTS` events, ``os.fork`` exists and
    the caller says a fork is safe (``may_fork``: no live thread holds a lock the child would take; the
    child renders with numpy, writes its own file and sends its stdout/stderr to /dev/null). Where the
    system refuses the fork (no process to give), the trace is rendered here.

    Once ``help_after()`` returns (the process's other work done: the analyzers, say) and every other
    file's child is collected (:func:`~npuprof.export.forked.wait_for_forked_files`), this thread
    renders part of the chunks the child has not reached (where the process may use two cores or
    more), so the end of the trace takes two cores;
    helping earlier would only take a core from that other work and cost a copy of its part. When
    ``help_after`` raises, the child is stopped, its file removed and the error raised.

    Example::

        write_trace_beside(result.events, out / "trace_view.json", may_fork=False, **trace_settings(result))
    """
    job = None
    if may_fork and len(events) >= FORK_MIN_EVENTS and hasattr(os, "fork"):
        try:
            job = ForkedTrace(events, Path(path), settings)
        except OSError:   # the system has no process to give: rendered here, as a CSV is (csvfiles.start_csv)
            job = None
    if job is None:
        if help_after is not None:
            help_after()
        return write_trace(events, path, **settings)
    help = _cores() > 1   # on one core helping only adds the copy of this thread's part
    try:
        if help_after is not None:
            help_after()
        if help:   # a share taken while another file's child runs (a CSV's) would only take a core from it
            wait_for_forked_files()
    except BaseException:
        job.discard()
        raise
    return job.finish(help=help)


def _cores() -> int:
    """The cores this process may run on."""
    return available_cores()
