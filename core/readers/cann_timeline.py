"""CANN 6.x/7.0 per-device export layout of a ``PROF_*`` collection (what ``msprof --export=on`` wrote
before ``mindstudio_profiler_output/``)::

    PROF_000001_<date>_<id>/device_<N>/
        timeline/msprof_<dev>_<model>_<iteration>.json     merged timeline, one file per iteration slice
        timeline/{task_time,hccl,step_trace}_*.json        the same events per kind (read only without msprof_*)
        info.json.<N>, start_info.<N>, end_info.<N>        the collection's host, rank and clock pairs

What is read, by the process each timeline names:

==================  ========================================================================================
``Ascend Hardware``  device tasks -> KERNEL (``Task Type`` as the core type, ``Stream Id``, ``Task Id``),
                     but HCCL's and the runtime's tasks (``NOTIFY_WAIT``, ``MEMCPY_ASYNC``, ``EVENT_RECORD`` ...)
                     -> RANGE ``device_task`` (no kernel: their time is the communication's);
                     step trace: ``Iteration N`` -> STEP N (its ``Iteration ID``), ``FP_BP Time`` and
                     ``Iteration Refresh`` -> RANGE ``step_trace``
``HCCL``             operators (``Default/AllReduce-op534_0``) -> COMM operator (type ``AllReduce``);
                     their tasks (``Notify_Wait``, ``Memcpy`` ...) -> COMM tasks with their peers, sizes,
                     links and plane (the thread ``Plane N``) as :mod:`npuprof.analysis.rank_communication` reads them
``CANN``             ``GE@Infer`` ... -> API (level ``GE``)
``Overlap Analysis`` not read: CANN's own computing/communication/free split, which npuprof recomputes
==================  ========================================================================================

Times: the timeline's ``ts`` are CLOCK_MONOTONIC_RAW µs. ``start_info.<N>`` pairs a monotonic reading
(``clockMonotonicRaw``, ns) with the wall clock (``collectionTimeBegin``, µs) taken together at the start,
``end_info.<N>`` the same at the end; a time maps linearly between the two pairs (so the drift between
the two clocks over the collection is corrected), with only ``start_info`` by the one offset. The error is
that of the pairs: the wall clock is read to the µs, and on the real sample the two clocks drift 1.2 µs
over 58 s (the one-offset mapping would be off by that much at the end).

How: each file is decoded by msgspec into the columns of its events (``trace_decode.decode_events``,
from 16 MB on a piece at a time with ``event_array_chunks``; ``args`` kept as JSON text), without a dict per
event; the times are checked and mapped, the events repeated
between files dropped and the rules above applied with numpy over a device's files, each ``args`` text
decoded once per distinct text (by msgspec, as the whole file was before), each name once per distinct
name. A file that does not take that path (not JSON msgspec reads, an entry that is not an object, a pid,
tid or name not an integer/string, an empty name, times past what int64 ns hold ...) sends its device to the
event-by-event reader (:class:`_DeviceReader`), which reads every file of the device as before: the same
table, the same warnings and errors (tests/readers/test_cann_timeline_bulk.py compares both). Only the
errors such values raise hand a device over; any other (a bug in the bulk path) is raised, not hidden
behind the slower reader, and the real collection is checked to take the bulk path
(tests/readers/test_real_cann_timeline.py).

Example::

    table = read_device_timelines(Path("PROF_000001_20230818142704322_COJGGGCANRMICFBC"), warn=print)
"""
from __future__ import annotations

import json
import math
import operator
import re
from dataclasses import dataclass
from itertools import filterfalse, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from ..errors import ProfilerDataError
from ..events import EventKind, EventTable
from ..fileio import check_input_file
from .ascend_ops import hccl_task_args, op_type_of
from .event_rows import EventRows, args_text, table_of_codes
from .trace_decode import (ARRAY_CHUNK_BYTES, ChunksRefused, TraceDecodeError, collector_paused, decode_events,
                           decode_json, decoder_name, event_array_chunks, events_of_structs)

Warn = Callable[[str], None]
SOURCE = "cann_timeline"
DEVICE_DIR_RE = re.compile(r"^device_(\d+)$")
SLICE_RE = re.compile(r"_(\d+)\.json$")
_HCCL_OP_RE = re.compile(r"-op\d+.*$")
SKIPPED_PROCESSES = ("Overlap Analysis",)
STEP_TRACE_CATS = {"Iteration Time"}
# device tasks that run no kernel: HCCL's notify/copy/reduce tasks as the hardware saw them (the HCCL process
# holds them as communication) and the runtime's stream synchronisation
RUNTIME_TASK_PREFIXES = ("NOTIFY_", "EVENT_", "MEMCPY_", "REDUCE_", "PROFILING_", "PLACE_HOLDER", "LABEL_",
                         "STREAM_", "MODEL_", "WRITE_VALUE", "BARRIER")
HCCL_PROCESSES = ("HCCL", "Communication")
API_PROCESSES = ("CANN", "AscendCL", "Runtime", "GE")
KERNEL_ARGS_KEPT = ("Task Type", "Stream Id", "Task Id", "Batch Id", "Aicore Time(ms)", "Total Cycle")


@dataclass(frozen=True)
class DeviceClock:
    """The linear map from CLOCK_MONOTONIC_RAW ns to epoch ns of one device's collection."""

    mono0_ns: int
    real0_ns: int
    scale: float = 1.0

    def epoch_ns(self, mono_us: float) -> int:
        return self.real0_ns + round((mono_us * 1000.0 - self.mono0_ns) * self.scale)


def _stream(v: Any, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 else \
        (default if -1 <= default < 2**31 else -1)


def _finite(v: Any) -> bool:
    """A usable µs value: a finite number whose ns fit the event table's int64."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and abs(v) < 9e15


def has_device_timelines(prof_dir: Path) -> bool:
    """Whether ``prof_dir`` holds the per-device export layout."""
    return any(prof_dir.glob("device_*/timeline/*.json"))


def _pair(path: Path, time_key: str) -> Optional[tuple[int, int]]:
    """(monotonic ns, epoch ns) of a start_info/end_info file, or None."""
    if not path.is_file():
        return None
    check_input_file(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return int(doc["clockMonotonicRaw"]), int(doc[time_key]) * 1000
    except (ValueError, KeyError, TypeError) as e:
        raise ProfilerDataError(path, f"has no usable clock pair ({type(e).__name__}: {e})") from None


def device_clock(device_dir: Path, index: str, warn: Optional[Warn] = None) -> DeviceClock:
    """The clock map of one device from its start_info (and end_info when present; ``warn`` is told
    when it is not: times then move by the clocks' drift over the collection)."""
    start = _pair(device_dir / f"start_info.{index}", "collectionTimeBegin")
    if start is None:
        raise ProfilerDataError(device_dir, f"has timelines but no start_info.{index}: their monotonic times "
                                            "cannot be placed on the wall clock")
    end = _pair(device_dir / f"end_info.{index}", "collectionTimeEnd")
    if end is None and warn is not None:
        warn(f"{device_dir / f'end_info.{index}'}: missing or unreadable; times placed on the wall clock by the "
             "start pair alone (off by the clocks' drift over the collection)")
    scale = 1.0
    if end is not None and end[0] > start[0]:
        scale = (end[1] - start[1]) / (end[0] - start[0])
    return DeviceClock(start[0], start[1], scale)


def _rank(device_dir: Path, index: str) -> Optional[int]:
    info = device_dir / f"info.json.{index}"
    try:
        doc = json.loads(info.read_text(encoding="utf-8")) if info.is_file() else {}
    except (OSError, ValueError):
        return None
    rank = doc.get("rank_id") if isinstance(doc, dict) else None
    return rank if isinstance(rank, int) and rank >= 0 else None


def read_device_timelines(prof_dir: Path, warn: Warn, note: Optional[Warn] = None) -> EventTable:
    """Every device's timeline events of ``prof_dir`` on the epoch time base (see the module doc).

    ``warn`` is told of every input lost (a slice missing, events skipped, a clock pair missing), ``note``
    (default ``warn``) of what is left out on purpose (CANN's own overlap analysis)."""
    note = note or warn
    tables = []
    for device_dir in sorted(p for p in prof_dir.glob("device_*") if p.is_dir()):
        m = DEVICE_DIR_RE.match(device_dir.name)
        if not m or not (device_dir / "timeline").is_dir():
            continue
        files = sorted((device_dir / "timeline").glob("msprof_*.json"), key=_slice_order)
        if not files:
            files = sorted([p for pat in ("task_time_*.json", "hccl_*.json", "step_trace_*.json")
                            for p in (device_dir / "timeline").glob(pat)], key=_slice_order)
        _check_slices(device_dir / "timeline", warn)
        clock = device_clock(device_dir, m.group(1), warn)
        read = _BulkDeviceReader(int(m.group(1)), clock).read(files, warn)
        if read is None:      # a file the bulk path does not take: the whole device event by event
            reader = _DeviceReader(int(m.group(1)), clock, warn)
            for path in files:
                reader.read(path)
            read = reader.cols.table(), reader.skipped, reader.skipped_names
        table, skipped, skipped_names = read
        if skipped:
            note(f"{device_dir}: {skipped} event(s) of {', '.join(sorted(skipped_names))} not read "
                 "(CANN's own overlap analysis; npuprof recomputes it)")
        tables.append(table)
    return EventTable.concat(tables)


def _check_slices(timeline: Path, warn: Warn) -> None:
    """Tell ``warn`` of each iteration slice one kind of timeline file lacks that another kind has, or that
    lies in a gap of the slices numbered (msprof writes every kind for every slice, numbered from 1)."""
    slices: dict[str, set] = {}
    for path in timeline.glob("*.json"):
        m = SLICE_RE.search(path.name)
        kind = path.name.split("_")[0] if "_" in path.name else path.stem
        if m and kind in ("msprof", "task", "hccl", "step"):
            slices.setdefault(kind, set()).add(int(m.group(1)))
    every = set().union(*slices.values()) if slices else set()
    if not every:
        return
    expected = set(range(1, max(every) + 1)) if min(every) >= 1 else every
    for kind, have in sorted(slices.items()):
        missing = sorted(expected - have)
        if missing:
            warn(f"{timeline}: {kind}_* slice(s) {missing[:10]} missing (other kinds or the numbering have them); "
                 "their events are not in the analysis")


def _slice_order(path: Path) -> tuple:
    m = SLICE_RE.search(path.name)
    return (path.name.split("_")[0], int(m.group(1)) if m else 0, path.name)


class _DeviceReader:
    """The events of one device's files read one by one (what :class:`_BulkDeviceReader` declines)."""

    def __init__(self, device: int, clock: DeviceClock, warn: Warn) -> None:
        self.device, self.clock, self.warn = device, clock, warn
        self.cols = EventRows(SOURCE)
        self.seen: set[tuple] = set()
        self.skipped = 0
        self.skipped_names: set[str] = set()

    def read(self, path: Path) -> None:
        check_input_file(path)
        with collector_paused():      # the events' dicts and rows hold no cycles: no collection walks them
            try:
                data = decode_json(path.read_bytes())
            except ValueError as e:
                raise ProfilerDataError(path, f"is not valid JSON ({e})") from None
            self._read_events(path, data)

    def _read_events(self, path: Path, data: Any) -> None:
        events = data.get("traceEvents", []) if isinstance(data, dict) else data
        if not isinstance(events, list):
            raise ProfilerDataError(path, "holds neither a JSON array nor traceEvents")
        process: dict[Any, str] = {}
        for ev in events:
            if isinstance(ev, dict) and ev.get("ph") == "M" and ev.get("name") == "process_name":
                args = ev.get("args")
                process[ev.get("pid")] = str(args.get("name", "")) if isinstance(args, dict) else ""
        bad = 0
        for ev in events:
            if not isinstance(ev, dict) or ev.get("ph") != "X":
                continue
            ts, dur = ev.get("ts"), ev.get("dur", 0)
            if not _finite(ts) or not _finite(dur) or dur < 0:
                bad += 1
                continue
            key = (ev.get("pid"), ev.get("tid"), ts, ev.get("name"))
            if key in self.seen:              # a kind file repeating the merged timeline
                continue
            self.seen.add(key)
            self._event(process.get(ev.get("pid"), ""), ev, self.clock.epoch_ns(ts), round(dur * 1000))
        if bad:
            self.warn(f"{path}: {bad} event(s) without a numeric ts/dur skipped")

    def _event(self, proc: str, ev: dict, ts: int, dur: int) -> None:
        name = str(ev.get("name", ""))
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        tid = ev.get("tid") if isinstance(ev.get("tid"), int) and abs(ev.get("tid")) < 2**62 else 0
        add = self.cols.add
        if proc in SKIPPED_PROCESSES:
            self.skipped += 1
            self.skipped_names.add(proc)
        elif "Iteration ID" in args:              # step trace, in the device's timeline or its own file
            it = args.get("Iteration ID")
            step = it if isinstance(it, int) and 0 <= it < 2**31 else -1
            if ev.get("cat") in STEP_TRACE_CATS:
                add(ts, dur, EventKind.STEP, name, "Iteration", tid=tid, device=self.device, step=step)
            else:
                add(ts, dur, EventKind.RANGE, name, "step_trace", tid=tid, device=self.device, step=step)
        elif proc in ("HCCL", "Communication") or "task type" in args:
            if "task type" in args:
                task = hccl_task_args(args, "default")
                task["plane_id"] = tid
                add(ts, dur, EventKind.COMM, name, str(args.get("task type", name)), tid=tid, device=self.device,
                    stream=_stream(args.get("stream id"), -1),
                    args=args_text(task))
            else:
                leaf = name.rsplit("/", 1)[-1]
                add(ts, dur, EventKind.COMM, name, _HCCL_OP_RE.sub("", leaf) or leaf, tid=tid, device=self.device,
                    args=args_text({"group": "default"}))
        elif proc in ("CANN", "AscendCL", "Runtime", "GE") or "@" in name:
            level, _, api = name.partition("@") if "@" in name else (proc, "", name)
            add(ts, dur, EventKind.API, api, level, tid=tid)
        elif "Task Type" in args:
            stream = _stream(args.get("Stream Id"), tid)
            task_type = str(args.get("Task Type", ""))
            kept = args_text({k: v for k, v in args.items() if k in ("Task Type", "Stream Id", "Task Id", "Batch Id",
                                                                     "Aicore Time(ms)", "Total Cycle")})
            if task_type.startswith(RUNTIME_TASK_PREFIXES):   # the device's side of HCCL and stream sync, no kernel
                add(ts, dur, EventKind.RANGE, task_type, "device_task", tid=tid, device=self.device,
                    stream=stream, args=kept)
            else:
                add(ts, dur, EventKind.KERNEL, name, op_type_of(name), tid=tid, device=self.device,
                    stream=stream, args=kept)
        else:
            self.skipped += 1
            self.skipped_names.add(proc or "an unnamed process")


class _Declined(Exception):
    """A file (or a value in it) the bulk path does not read exactly as the event-by-event one."""


class _Texts:
    """Distinct values (texts, bytes, None) coded as they come (in no order that matters: the table's string
    pool is laid out from the rows at the end)."""

    def __init__(self) -> None:
        self.index: dict = {}

    def codes(self, values: list) -> np.ndarray:
        index = self.index
        new = list(filterfalse(index.__contains__, dict.fromkeys(values)))     # in C: no Python loop per value
        index.update(zip(new, range(len(index), len(index) + len(new))))
        return np.fromiter(map(index.__getitem__, values), np.int32, len(values))

    def values(self) -> list:
        return list(self.index)


@dataclass
class _FileEvents:
    """The complete events of one file with usable times, in file order: the key that finds an event
    repeated by another file (pid, tid, ts as the file has it), the mapped times and the texts as codes."""

    pid: np.ndarray
    tid: np.ndarray
    ts_us: np.ndarray
    ts_ns: np.ndarray
    dur_ns: np.ndarray
    name: np.ndarray
    cat: np.ndarray
    args: np.ndarray
    proc: np.ndarray


_ARRAYS = ("pid", "tid", "ts_us", "ts_ns", "dur_ns", "name", "cat", "args", "proc")
# from this size on a file is decoded a piece at a time (trace_decode.event_array_chunks): the structs of one
# piece, not of the whole file, are alive at once
CHUNKED_FROM_BYTES = 2 * ARRAY_CHUNK_BYTES
ARGS_BATCH = 8192         # distinct args texts decoded at a time
_INT_OK = (-2**62, 2**62)      # bounds inside which the int64 arithmetic below is exact


def _take(values: list, idx: np.ndarray) -> list:
    if len(idx) == 0:
        return []
    got = itemgetter(*idx.tolist())(values)
    return [got] if len(idx) == 1 else list(got)


def _types(values: list) -> set:
    return set(map(type, values))


def _equal_to(values: list, text: str) -> np.ndarray:
    return np.fromiter(map(operator.eq, values, repeat(text)), bool, len(values))


class _BulkDeviceReader:
    """One device's files read column by column (see the module doc); :meth:`read` gives None for a device
    with a file it declines."""

    def __init__(self, device: int, clock: DeviceClock) -> None:
        self.device, self.clock = device, clock
        self.names, self.cats, self.args, self.procs = _Texts(), _Texts(), _Texts(), _Texts()

    def read(self, files: list, warn: Warn) -> Optional[tuple[EventTable, int, set]]:
        if decoder_name() != "msgspec" or not all(_INT_OK[0] < v < _INT_OK[1] for v in
                                                  (self.clock.mono0_ns, self.clock.real0_ns)):
            return None
        import msgspec       # decoder_name() == "msgspec": installed

        # what a value the bulk path does not take raises (a decoder's error, a value of a type or size the
        # columns or orjson refuse): the event-by-event reader meets it. Anything else is a bug, raised here
        declined = (_Declined, ValueError, TypeError, ArithmeticError, LookupError, msgspec.MsgspecError)
        parts, told = [], []
        try:
            for path in files:
                check_input_file(path)
                parts += self._file(path, told)
        except declined:
            return None
        except BaseException:
            for message in told:      # what the event-by-event reader said before this file's error
                warn(message)
            raise
        try:
            table = self._table(parts)
        except declined:
            return None
        for message in told:
            warn(message)
        return table

    def _file(self, path: Path, told: list) -> list[_FileEvents]:
        process: dict = {}     # pid -> process name, the file's last process_name event of each pid
        parts, bad = [], 0
        with collector_paused():
            try:
                if path.stat().st_size < CHUNKED_FROM_BYTES:
                    raise ChunksRefused("small")
                for structs in event_array_chunks(path):      # a large file: a piece at a time
                    part, lost = self._columns(events_of_structs(structs), process)
                    parts.append(part)
                    bad += lost
            except ChunksRefused:      # read whole: a small file, or one not cut into pieces as expected
                process.clear()
                raw = path.read_bytes()
                try:
                    events = decode_events(raw)
                except TraceDecodeError:
                    raise _Declined() from None
                del raw
                if events.decoder != "msgspec":
                    raise _Declined()
                part, bad = self._columns(events, process)
                parts = [part]
        for part in parts:         # each event's process, by the process names of the whole file
            pids = np.unique(part.pid)
            part.proc = self.procs.codes([process.get(p, "") for p in pids.tolist()])[
                np.searchsorted(pids, part.pid)]
        if bad:
            told.append(f"{path}: {bad} event(s) without a numeric ts/dur skipped")
        return parts

    def _columns(self, events: Any, process: dict) -> tuple[_FileEvents, int]:
        """The usable complete events of ``events`` (their process left to the caller), and how many are not
        usable; the process_name events' names put in ``process``."""
        import msgspec       # decoder_name() == "msgspec": installed

        meta = np.flatnonzero(_equal_to(events.ph, "M") & _equal_to(events.name, "process_name"))
        for i in meta.tolist():
            try:
                args = msgspec.json.decode(events.args[i])
                process[events.pid[i]] = str(args.get("name", "")) if isinstance(args, dict) else ""
            except (TypeError, msgspec.MsgspecError, UnicodeDecodeError):    # an unhashable pid ...
                raise _Declined() from None      # the event-by-event reader meets it as it always did
        idx = np.flatnonzero(_equal_to(events.ph, "X"))
        ts, dur = _take(events.ts, idx), _take(events.dur, idx)
        pid, tid = _take(events.pid, idx), _take(events.tid, idx)
        name, cat = _take(events.name, idx), _take(events.cat, idx)
        if not (_types(ts) <= {int, float} and _types(dur) <= {int, float} and _types(pid) <= {int}
                and _types(tid) <= {int} and _types(name) <= {str} and _types(cat) <= {str, type(None)}):
            raise _Declined()
        try:
            ts_f, dur_f = np.array(ts, dtype=np.float64), np.array(dur, dtype=np.float64)
            pid_a, tid_a = np.array(pid, dtype=np.int64), np.array(tid, dtype=np.int64)
        except OverflowError:
            raise _Declined() from None
        with np.errstate(invalid="ignore"):
            usable = (np.isfinite(ts_f) & (np.abs(ts_f) < 9e15) & np.isfinite(dur_f) & (np.abs(dur_f) < 9e15)
                      & (dur_f >= 0))
        bad = len(idx) - int(usable.sum())
        keep = np.flatnonzero(usable)
        ts_f, dur_f = ts_f[keep], dur_f[keep]
        clock = self.clock
        scaled = (ts_f * 1000.0 - float(clock.mono0_ns)) * clock.scale       # DeviceClock.epoch_ns, in bulk
        if len(scaled) and not np.abs(scaled).max() < _INT_OK[1]:
            raise _Declined()
        ts_ns = clock.real0_ns + np.rint(scaled).astype(np.int64)
        dur_ns = np.rint(dur_f * 1000.0).astype(np.int64)
        if int in _types(dur) and len(dur_f) and dur_f.max() > 2**53 / 1000:     # an integer's ns exactly
            is_int = np.fromiter((type(v) is int for v in dur), bool, len(dur))[keep]
            dur_ns[is_int] = dur_f[is_int].astype(np.int64) * 1000
        name_codes = self.names.codes(name)
        if "" in self.names.index:       # an empty name and none are one key here, not there
            raise _Declined()
        part = _FileEvents(pid=pid_a[keep], tid=tid_a[keep], ts_us=ts_f + 0.0, ts_ns=ts_ns, dur_ns=dur_ns,
                           name=name_codes[keep], cat=self.cats.codes(cat)[keep],
                           args=self.args.codes(list(map(bytes, _take(events.args, idx[keep])))),
                           proc=np.zeros(0, np.int32))
        return part, bad

    def _table(self, parts: list) -> tuple[EventTable, int, set]:
        import msgspec

        if not sum(len(p.ts_ns) for p in parts):
            return EventTable.empty(), 0, set()
        ev = _FileEvents(**{k: np.concatenate([getattr(p, k) for p in parts]) for k in _ARRAYS})
        parts.clear()
        # the first of the events with one key (a kind file or an overlapping slice repeating it) is read
        order = np.lexsort((ev.name, ev.ts_us, ev.tid, ev.pid))
        first = np.ones(len(order), dtype=bool)
        if len(order) > 1:
            k = [getattr(ev, c)[order] for c in ("pid", "tid", "ts_us", "name")]
            first[1:] = ~((k[0][1:] == k[0][:-1]) & (k[1][1:] == k[1][:-1]) & (k[2][1:] == k[2][:-1])
                          & (k[3][1:] == k[3][:-1]))
        rows = np.sort(order[first])
        proc, args, name = ev.proc[rows], ev.args[rows], ev.name[rows]
        procs, names, cats = self.procs.values(), self.names.values(), self.cats.values()
        texts, self.args = self.args.values(), _Texts()      # the texts' index no longer needed
        skipped_proc = np.array([p in SKIPPED_PROCESSES for p in procs], dtype=bool)[proc]
        # each distinct args text of the events read, decoded once: which rule it takes, what it gives
        used = np.unique(args[~skipped_proc])
        a = _ArgsRules(len(texts))
        used_codes = used.tolist()
        for lo in range(0, len(used_codes), ARGS_BATCH):      # a batch's dicts alive at a time, not every one
            batch = used_codes[lo:lo + ARGS_BATCH]
            try:
                decoded = msgspec.json.decode(b"[" + b",".join(texts[c] for c in batch) + b"]")
            except (msgspec.MsgspecError, UnicodeDecodeError):    # what the whole file's decode would have refused
                raise _Declined() from None
            for code, obj in zip(batch, decoded):
                a.add(code, obj if isinstance(obj, dict) else {})
        del texts
        is_step = ~skipped_proc & a.has_iteration[args]
        is_comm = ~skipped_proc & ~is_step & (np.array([p in HCCL_PROCESSES for p in procs], bool)[proc]
                                               | a.has_hccl_task[args])
        rest = ~skipped_proc & ~is_step & ~is_comm
        is_api = rest & (np.array([p in API_PROCESSES for p in procs], bool)[proc]
                         | np.array(["@" in n for n in names], bool)[name])
        is_task = rest & ~is_api & a.has_task_type[args]
        unread = rest & ~is_api & ~is_task
        skipped_names = {procs[p] for p in np.unique(proc[skipped_proc]).tolist()} | \
            {procs[p] or "an unnamed process" for p in np.unique(proc[unread]).tolist()}
        skipped = int(skipped_proc.sum() + unread.sum())
        out = np.flatnonzero(is_step | is_comm | is_api | is_task)
        table = self._rows(ev, rows[out], a, is_step[out], is_comm[out], is_api[out], procs, names, cats)
        return table, skipped, skipped_names

    def _rows(self, ev: _FileEvents, rows: np.ndarray, a: "_ArgsRules", is_step: np.ndarray,
              is_comm: np.ndarray, is_api: np.ndarray, procs: list, names: list, cats: list) -> EventTable:
        n = len(rows)
        pool: dict = {"": 0}

        def code(text: str) -> int:
            return pool.setdefault(text, len(pool))

        def codes_of(values: list) -> np.ndarray:
            return np.array([code(v) for v in values], dtype=np.int64)

        name, args, proc = ev.name[rows], ev.args[rows], ev.proc[rows]
        tid = ev.tid[rows]
        tid = np.where((tid > _INT_OK[0]) & (tid < _INT_OK[1]), tid, 0)
        name_out = codes_of(names)[name]
        type_out = np.zeros(n, dtype=np.int64)
        args_out = np.zeros(n, dtype=np.int64)
        kind = np.full(n, int(EventKind.KERNEL), dtype=np.uint8)
        device = np.full(n, self.device, dtype=np.int64)
        stream = np.full(n, -1, dtype=np.int64)
        step = np.full(n, -1, dtype=np.int64)
        is_task = ~is_step & ~is_comm & ~is_api

        sel = np.flatnonzero(is_step)      # step trace: STEP (the iteration) or RANGE step_trace
        iteration = np.array([c in STEP_TRACE_CATS for c in cats], dtype=bool)[ev.cat[rows[sel]]]
        kind[sel] = np.where(iteration, int(EventKind.STEP), int(EventKind.RANGE))
        type_out[sel] = np.where(iteration, code("Iteration"), code("step_trace"))
        step[sel] = a.step[args[sel]]

        sel = np.flatnonzero(is_comm)
        kind[sel] = int(EventKind.COMM)
        task = a.has_hccl_task[args[sel]]
        ops, tasks = sel[~task], sel[task]
        op_codes = np.unique(name[ops])
        op_type = np.zeros(len(names), dtype=np.int64)
        for c in op_codes.tolist():
            leaf = names[c].rsplit("/", 1)[-1]
            op_type[c] = code(_HCCL_OP_RE.sub("", leaf) or leaf)
        type_out[ops] = op_type[name[ops]]
        args_out[ops] = code(args_text({"group": "default"}))
        type_out[tasks] = a.coded(a.hccl_type, code)[args[tasks]]
        stream[tasks] = a.hccl_stream[args[tasks]]
        if len(tasks):
            pairs, where = np.unique(np.stack([args[tasks], tid[tasks]]), axis=1, return_inverse=True)
            pair_codes = []
            for c, t in zip(pairs[0].tolist(), pairs[1].tolist()):     # once per distinct (args, plane)
                # args_text of the task's args with "plane_id" added last: orjson's compact text of the others
                # (never empty: "group" and "task_type" are always there) with the integer appended
                pair_codes.append(code(f'{a.hccl_text[c][:-1]},"plane_id":{t}}}'))
            args_out[tasks] = np.array(pair_codes, dtype=np.int64)[where.reshape(-1)]

        sel = np.flatnonzero(is_api)       # GE@Infer -> API Infer (level GE); else the process is the level
        kind[sel] = int(EventKind.API)
        device[sel] = -1
        at_codes = np.unique(name[sel])
        api_name, api_level = np.zeros(len(names), np.int64), np.zeros(len(names), np.int64)
        for c in at_codes.tolist():
            if "@" in names[c]:
                level, _, api = names[c].partition("@")
                api_name[c], api_level[c] = code(api), code(level)
        at = np.array(["@" in n for n in names], dtype=bool)[name[sel]]
        name_out[sel] = np.where(at, api_name[name[sel]], name_out[sel])
        type_out[sel] = np.where(at, api_level[name[sel]], codes_of(procs)[proc[sel]])

        sel = np.flatnonzero(is_task)      # device tasks: KERNEL, or the runtime's RANGE device_task
        valid = a.task_stream_ok[args[sel]]
        tids = tid[sel]
        stream[sel] = np.where(valid, a.task_stream[args[sel]], np.where((tids >= -1) & (tids < 2**31), tids, -1))
        args_out[sel] = a.coded(a.kept, code)[args[sel]]
        runtime = a.runtime[args[sel]]
        ranges, kernels = sel[runtime], sel[~runtime]
        kind[ranges] = int(EventKind.RANGE)
        name_out[ranges] = a.coded(a.task_type, code)[args[ranges]]
        type_out[ranges] = code("device_task")
        op_of = np.zeros(len(names), dtype=np.int64)
        for c in np.unique(name[kernels]).tolist():
            op_of[c] = code(op_type_of(names[c]))
        type_out[kernels] = op_of[name[kernels]]

        cols = {"ts": ev.ts_ns[rows], "dur": ev.dur_ns[rows], "kind": kind, "tid": tid, "device": device,
                "stream": stream, "step": step, "name": name_out, "type": type_out, "args": args_out}
        return table_of_codes(cols, list(pool), SOURCE)


class _ArgsRules:
    """What each distinct args text gives, by its code: the rule it takes and the values the rows use
    (each computed as the event-by-event reader computes it from that args dict)."""

    def __init__(self, n: int) -> None:
        self.hccl_text: dict[int, str] = {}     # an HCCL task's args in npuprof's convention, but its plane
        self.has_iteration = np.zeros(n, dtype=bool)
        self.has_hccl_task = np.zeros(n, dtype=bool)
        self.has_task_type = np.zeros(n, dtype=bool)
        self.step = np.full(n, -1, dtype=np.int64)
        self.hccl_stream = np.full(n, -1, dtype=np.int64)
        self.task_stream = np.full(n, -1, dtype=np.int64)
        self.task_stream_ok = np.zeros(n, dtype=bool)
        self.runtime = np.zeros(n, dtype=bool)
        self.hccl_type: dict[int, str] = {}
        self.task_type: dict[int, str] = {}
        self.kept: dict[int, str] = {}
        self.size = n

    def coded(self, by_code: dict, code: Callable[[str], int]) -> np.ndarray:
        """The texts of ``by_code`` (args code -> text) as ``code`` codes them, indexed by args code."""
        out = np.zeros(self.size, dtype=np.int64)
        if by_code:
            out[np.fromiter(by_code, np.int64, len(by_code))] = np.fromiter(map(code, by_code.values()), np.int64,
                                                                            len(by_code))
        return out

    def add(self, c: int, args: dict) -> None:
        if "Iteration ID" in args:
            self.has_iteration[c] = True
            it = args.get("Iteration ID")
            self.step[c] = it if isinstance(it, int) and 0 <= it < 2**31 else -1
        elif "task type" in args:
            self.hccl_text[c] = args_text(hccl_task_args(args, "default"))     # its plane added per row
            self.has_hccl_task[c] = True
            self.hccl_type[c] = str(args.get("task type"))
            self.hccl_stream[c] = _stream(args.get("stream id"), -1)
        elif "Task Type" in args:
            self.has_task_type[c] = True
            v = args.get("Stream Id")
            self.task_stream_ok[c] = isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31
            self.task_stream[c] = v if self.task_stream_ok[c] else -1
            task_type = self.task_type[c] = str(args.get("Task Type", ""))
            self.runtime[c] = task_type.startswith(RUNTIME_TASK_PREFIXES)
            self.kept[c] = args_text({k: v for k, v in args.items() if k in KERNEL_ARGS_KEPT})
