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

Example::

    table = read_device_timelines(Path("PROF_000001_20230818142704322_COJGGGCANRMICFBC"), warn=print)
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from ..errors import ProfilerDataError
from ..events import EventKind, EventTable
from ..fileio import check_input_file
from .ascend_ops import hccl_task_args, op_type_of
from .event_rows import EventRows, args_text
from .trace_decode import collector_paused, decode_json

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
        reader = _DeviceReader(int(m.group(1)), clock, warn)
        for path in files:
            reader.read(path)
        if reader.skipped:
            note(f"{device_dir}: {reader.skipped} event(s) of {', '.join(sorted(reader.skipped_names))} not read "
                 "(CANN's own overlap analysis; npuprof recomputes it)")
        tables.append(reader.cols.table())
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
