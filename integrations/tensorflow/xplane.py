"""Read TensorFlow profiler XSpace files (``*.xplane.pb``) into an EventTable.

TensorFlow's native profiler (``tf.profiler.experimental.start/stop``,
Keras' TensorBoard callback) writes one XSpace per host under
``<logdir>/plugins/profile/<timestamp>/<host>.xplane.pb``. This module turns
the host plane's operator events (``"<node>:<OpType>"``, e.g.
``"MatMul:_MklMatMul"``) into :data:`EventKind.OP` rows with ``name`` = the
node name and ``type`` = the op type, TensorFlow runtime events (SessionRun,
EagerExecute, ...) into :data:`EventKind.API` rows of type ``TensorFlow``,
``TraceMe`` step markers (events carrying ``step_num``) into step rows, and
device planes (``/device:GPU:N``): what ran on the device (the ``Stream #N``
lines; on a plane without streams, TPU's ``XLA Ops`` line) into
:data:`EventKind.KERNEL` rows (type: the ``tf_op`` type, else the HLO category,
else the HLO op), every other line (``XLA Modules``, ``TensorFlow Ops``,
``TensorFlow Name Scope``, ``Steps``) into RANGE rows typed by the line, so a
module's time is never counted next to its own ops.

The proto comes from ``tensorflow.tsl.profiler.protobuf.xplane_pb2`` (TF >= 2.12)
or ``tensorflow.core.profiler.protobuf.xplane_pb2`` (older TF), or from the
``xprof`` / ``tensorboard_plugin_profile`` packages when TensorFlow is absent.

Example::

    >>> table = read_xspace("logs/plugins/profile/2026_01_01_00_00_00/host.xplane.pb")  # doctest: +SKIP
    >>> sorted(set(table.of_kind(EventKind.OP).column_strings("type")))[:2]            # doctest: +SKIP
    ['AddV2', 'ReluGrad']
"""
from __future__ import annotations

import importlib
import json
import importlib.util
import logging
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

import numpy as np

from npuprof.clock import ns_to_us_text
from npuprof.errors import ProfilerDataError
from npuprof.events import EventKind, EventTable, StringPool

log = logging.getLogger("npuprof")
Warn = Callable[[str], None]
SOURCE = "tensorflow"
API_TYPE = "TensorFlow"
XPLANE_GLOB = "plugins/profile/*/*.xplane.pb"
_PROTO_MODULES = (
    "tensorflow.tsl.profiler.protobuf.xplane_pb2",
    "tensorflow.core.profiler.protobuf.xplane_pb2",
    "tsl.profiler.protobuf.xplane_pb2",
    "xprof.protobuf.xplane_pb2",
    "tensorboard_plugin_profile.protobuf.xplane_pb2",
)
_PROTO_FILES = (
    ("tsl/profiler/protobuf/xplane_pb2.py", "tensorflow.tsl.profiler.protobuf.xplane_pb2"),
    ("core/profiler/protobuf/xplane_pb2.py", "tensorflow.core.profiler.protobuf.xplane_pb2"),
)
# "<node name>:<OpType>": TF's own TfOp naming (ParseTfOpFullname). The node part
# has no spaces and does not end in ':' (which rules out "ExecutorState::Process").
_TF_OP_RE = re.compile(r"^(?P<name>[^\s:][^\s]*?[^\s:]|[^\s:]):(?P<type>[A-Za-z_][A-Za-z0-9_]*)$")
_DEVICE_RE = re.compile(r"^/device:(?P<kind>[A-Z]+):(?P<id>\d+)")
_HLO_OP_RE = re.compile(r"=\s*[^\s]+\s+([A-Za-z][\w-]*)\(")    # "%fusion.1 = f32[8] fusion(...)" -> fusion
# Before this many ns since the epoch (~1973) a timestamp is relative to profile start.
_EPOCH_FLOOR_NS = 10 ** 17
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INT32_MAX = (1 << 31) - 1
_INT16_MAX = (1 << 15) - 1


_pb2_cache: list = []


def xplane_pb2() -> Any:
    """The ``xplane_pb2`` module: TF's tsl location first, then the older ones.

    When TensorFlow is installed but not imported, the generated module is
    loaded straight from TensorFlow's package directory (it needs only
    protobuf), so that ``npuprof analyse`` does not pay for importing all of
    TensorFlow; the message classes are the same ones TF registers later.
    """
    if _pb2_cache:
        return _pb2_cache[0]
    module = None if "tensorflow" in sys.modules else _load_without_tensorflow()
    errors = []
    if module is None:
        for name in _PROTO_MODULES:
            try:
                module = importlib.import_module(name)
                break
            except ImportError as e:  # try the next location
                errors.append(f"{name}: {e}")
    if module is None:
        raise ImportError("no XSpace protobuf module found (install tensorflow or xprof): " + "; ".join(errors))
    _pb2_cache.append(module)
    return module


def _load_without_tensorflow() -> Any:
    try:
        spec = importlib.util.find_spec("tensorflow")
    except (ImportError, ValueError):
        return None
    for base in (spec.submodule_search_locations or []) if spec else []:
        for rel, name in _PROTO_FILES:
            path = Path(base) / rel
            if not path.is_file():
                continue
            file_spec = importlib.util.spec_from_file_location(name, path)
            if file_spec is None or file_spec.loader is None:
                continue
            module = importlib.util.module_from_spec(file_spec)
            try:
                file_spec.loader.exec_module(module)
            except Exception:  # a protobuf version mismatch: fall back to the regular import
                continue
            return module
    return None


def find_xspace_files(root: Union[str, Path]) -> list[Path]:
    """``*.xplane.pb`` files of a TF logdir (``<root>/plugins/profile/*/``), oldest first."""
    root = Path(root)
    return sorted(root.glob(XPLANE_GLOB))


def load_xspace(path: Union[str, Path]) -> Any:
    """Parse one ``*.xplane.pb`` file into an XSpace message."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ProfilerDataError(path, f"cannot read: {e}") from None
    if not data:
        raise ProfilerDataError(path, "empty XSpace file (TF writes 0 bytes when the profile exceeds 2 GB)")
    space = xplane_pb2().XSpace()
    try:
        space.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError has no stable import path
        raise ProfilerDataError(path, f"not a valid XSpace protobuf: {e}") from None
    return space


def profile_window_ns(space: Any) -> tuple[Optional[int], Optional[int]]:
    """(profile_start_time, profile_stop_time) in epoch ns from the "Task Environment" plane."""
    for plane in space.planes:
        if plane.name != "Task Environment":
            continue
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        found = {names.get(s.metadata_id): s.uint64_value or s.int64_value for s in plane.stats}
        return found.get("profile_start_time"), found.get("profile_stop_time")
    return None, None


def read_xspace(path: Union[str, Path], pid: int = 0, step_kind: EventKind = EventKind.RANGE,
                warn: Optional[Warn] = None) -> EventTable:
    """Events of one XSpace file (epoch-ns timestamps).

    ``step_kind`` decides what TraceMe step markers become: RANGE (when the
    run already has npuprof's own ProfilerStep rows) or STEP (a bare TF
    logdir, so that step analysis has steps to work with). Events the file
    describes inconsistently (an unknown metadata id, a time out of range)
    are skipped and reported through ``warn(message)`` (default: the
    ``npuprof`` logger), each message naming the file.
    """
    path = Path(path)
    notes: list[str] = []
    table = xspace_to_table(load_xspace(path), pid=pid, step_kind=step_kind, warn=notes.append)
    for note in notes:
        (warn or log.warning)(f"{path}: {note}")
    return table


def xspace_to_table(space: Any, pid: int = 0, step_kind: EventKind = EventKind.RANGE,
                    warn: Optional[Warn] = None) -> EventTable:
    """Convert an XSpace message into an EventTable (see module doc)."""
    warn = warn or log.warning
    start_ns, _ = profile_window_ns(space)
    if not isinstance(start_ns, int) or not 0 <= start_ns <= _INT64_MAX:
        start_ns = None
    parts = []
    for plane in space.planes:
        if plane.name == "Task Environment" or not plane.lines:
            continue
        dev = _DEVICE_RE.match(plane.name)
        if plane.name.startswith("/host:"):
            parts.append(_host_plane(plane, start_ns, pid, step_kind, warn))
            parts.append(_memory_events(plane, start_ns, pid))
        elif dev is not None and int(dev.group("id")) > _INT16_MAX:
            warn(f"plane {plane.name}: device id out of range, plane skipped")
        elif dev is not None:
            parts.append(_device_plane(plane, start_ns, pid, int(dev.group("id")), dev.group("kind"), warn))
    return EventTable.concat(parts)


def _line_base_ns(line: Any, start_ns: Optional[int]) -> int:
    # TF >= 2.x normalises line timestamps to the profile start; add it back.
    base = int(line.timestamp_ns)
    if base < _EPOCH_FLOOR_NS and start_ns:
        base += int(start_ns)
    return base


def _host_plane(plane: Any, start_ns: Optional[int], pid: int, step_kind: EventKind, warn: Warn) -> EventTable:
    # Classify each event metadata once, then handle events in bulk per line.
    meta_kind: dict[int, tuple[int, str, str]] = {}
    for mid, md in plane.event_metadata.items():
        m = _TF_OP_RE.match(md.name)
        if m is not None and (not md.display_name or md.display_name == m.group("type")):
            meta_kind[mid] = (int(EventKind.OP), m.group("name"), m.group("type"))
        else:
            meta_kind[mid] = (int(EventKind.API), md.name, API_TYPE)
    stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
    step_stat = {k for k, n in stat_names.items() if n == "step_num"}
    non_op_ids = np.array([k for k, v in meta_kind.items() if v[0] != EventKind.OP], dtype=np.int64)

    ids = np.array(sorted(meta_kind), dtype=np.int64)
    ts_parts, dur_parts, tid_parts, mid_parts = [], [], [], []
    step_rows: list[tuple[int, int, int, int, str]] = []
    unknown = bad_time = 0
    for line in plane.lines:
        events = line.events
        if not len(events):
            continue
        base_ns = _line_base_ns(line, start_ns)  # ns: epoch ps overflow int64
        if not _INT64_MIN <= base_ns <= _INT64_MAX:
            bad_time += len(events)
            continue
        offs = np.fromiter((e.offset_ps for e in events), dtype=np.int64, count=len(events))
        durs = np.fromiter((e.duration_ps for e in events), dtype=np.int64, count=len(events))
        mids = np.fromiter((e.metadata_id for e in events), dtype=np.int64, count=len(events))
        known = _known_ids(ids, mids)
        unknown += int(np.count_nonzero(~known))
        # zero-length TraceMe bookkeeping (ThreadpoolListener::Record, ...) is noise
        keep = (durs > 0) & known
        ts_parts.append(base_ns + offs[keep] // 1000)
        dur_parts.append(durs[keep] // 1000)
        mids_kept = mids[keep]
        mid_parts.append(mids_kept)
        tid_parts.append(np.full(len(mids_kept), int(line.id), dtype=np.int64))
        if step_stat:
            # Only non-op events can be step markers: look at their stats alone.
            for i in np.flatnonzero(keep & np.isin(mids, non_op_ids)):
                e = events[int(i)]
                for s in e.stats:
                    if s.metadata_id in step_stat:
                        num = s.int64_value or s.uint64_value
                        t = base_ns + e.offset_ps // 1000
                        if not (0 <= num <= _INT32_MAX and _INT64_MIN <= t <= _INT64_MAX):
                            continue   # not a step the table can hold: it stays an API row
                        name = plane.event_metadata[e.metadata_id].name
                        step_rows.append((t, e.duration_ps // 1000, int(line.id), int(num), name))
                        break
    if unknown:
        warn(f"plane {plane.name}: {unknown} event(s) with a metadata id the plane does not define were skipped")
    if bad_time:
        warn(f"plane {plane.name}: {bad_time} event(s) on lines whose start time is out of range were skipped")
    if not ts_parts:
        return EventTable.empty()
    ts = np.concatenate(ts_parts)
    dur = np.concatenate(dur_parts)
    tid = np.concatenate(tid_parts)
    mid = np.concatenate(mid_parts)
    # Map metadata ids -> (kind, name code, type code) through small lookup arrays.
    pool = StringPool(["", SOURCE])
    strings, code = pool.strings, pool.code

    kinds = np.array([meta_kind[i][0] for i in ids], dtype=np.uint8)
    names = np.array([code(meta_kind[i][1]) for i in ids], dtype=np.int32)
    types = np.array([code(meta_kind[i][2]) for i in ids], dtype=np.int32)
    pos = np.searchsorted(ids, mid)
    table = EventTable.from_codes(
        {"ts": ts, "dur": dur, "kind": kinds[pos], "pid": pid, "tid": tid},
        {"name": names[pos], "type": types[pos], "source": 1},
        strings)
    # Step markers are already in the table as API rows; re-label them.
    if step_rows:
        markers = EventTable.from_records(
            ts=[r[0] for r in step_rows], dur=[r[1] for r in step_rows], kind=int(step_kind), pid=pid,
            tid=[r[2] for r in step_rows], step=[r[3] for r in step_rows],
            name=[f"ProfilerStep#{r[3]}" if step_kind == EventKind.STEP else r[4] for r in step_rows],
            type="tf.step_marker", source=SOURCE)
        marker_keys = {(r[0], r[2]) for r in step_rows}
        is_marker = np.fromiter(((int(a), int(b)) in marker_keys for a, b in zip(ts, tid)), dtype=bool,
                                count=len(ts)) if len(marker_keys) else np.zeros(len(ts), bool)
        table = EventTable.concat([table.select(~is_marker), markers])
    return table


_MB = 1024.0 * 1024.0
MEMORY_EVENT_NAMES = ("MemoryAllocation", "MemoryDeallocation")
_CPU_DEVICE_ARGS = json.dumps({"Device Type": "CPU"})


def _stat_value(stat: Any, ref_names: dict) -> Any:
    which = stat.WhichOneof("value")
    if which == "ref_value":
        return ref_names.get(stat.ref_value, "")
    return getattr(stat, which) if which else None


def _memory_events(plane: Any, start_ns: Optional[int], pid: int) -> EventTable:
    """TF's allocator events (``MemoryAllocation``/``MemoryDeallocation`` TraceMes, recorded on CPU
    when TensorFlow uses its BFC allocator there) -> one MEMORY event per allocation, as an
    operator_memory row: ``ts`` the allocation, ``dur`` until its deallocation (paired by
    allocator and address; 0 when the window holds none), ``value`` the bytes, name the TF op;
    args: the allocator's totals after each (``Allocation/Release Total Allocated(MB)``,
    ``... Reserved(MB)``), ``Release Time(us)``, allocator, requested bytes, peak in use, shape.
    Plus the allocator's series ``<allocator> Total Allocated(MB)`` / ``Total Reserved(MB)`` (COUNTER, type
    ``memory``: ``memory_record.csv``'s rows, component = the allocator)."""
    mem_ids = {k: md.name for k, md in plane.event_metadata.items() if md.name in MEMORY_EVENT_NAMES}
    if not mem_ids:
        return EventTable.empty()
    stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
    wanted = np.array(sorted(mem_ids), dtype=np.int64)
    records = []
    for line in plane.lines:
        events = line.events
        if not len(events):
            continue
        base_ns = _line_base_ns(line, start_ns)
        mids = np.fromiter((e.metadata_id for e in events), dtype=np.int64, count=len(events))
        for i in np.flatnonzero(np.isin(mids, wanted)).tolist():     # stats decoded for memory events only
            e = events[i]
            st = {stat_names.get(x.metadata_id, ""): _stat_value(x, stat_names) for x in e.stats}
            records.append((base_ns + e.offset_ps // 1000, mem_ids[e.metadata_id] == "MemoryAllocation", st))
    records.sort(key=lambda r: r[0])
    open_allocs: dict[tuple, int] = {}
    rows: list[dict] = []
    series: list[tuple[int, str, float]] = []
    for t, is_alloc, st in records:
        allocator = str(st.get("allocator_name") or "allocator")
        in_use = st.get("bytes_allocated")
        if isinstance(in_use, int):
            series.append((t, f"{allocator} Total Allocated(MB)", in_use / _MB))
        if isinstance(st.get("bytes_reserved"), int):
            series.append((t, f"{allocator} Total Reserved(MB)", st["bytes_reserved"] / _MB))
        key = (allocator, st.get("addr"))
        if is_alloc:
            args = {"allocator": allocator, "Device Type": "CPU", "Allocation Total Allocated(MB)": _mb(in_use),
                    "Allocation Total Reserved(MB)": _mb(st.get("bytes_reserved")),
                    "requested_bytes": st.get("requested_bytes"), "peak_bytes_in_use": st.get("peak_bytes_in_use"),
                    "region_type": st.get("region_type"), "shape": st.get("shape")}
            open_allocs[key] = len(rows)
            rows.append({"ts": t, "dur": 0, "bytes": st.get("allocation_bytes") or st.get("requested_bytes") or 0,
                         "name": str(st.get("tf_op") or "(unknown op)"), "args": args})
        elif key in open_allocs:
            row = rows[open_allocs.pop(key)]
            row["dur"] = t - row["ts"]
            row["args"].update({"Release Time(us)": ns_to_us_text(t), "Duration(us)": ns_to_us_text(row["dur"]),
                                "Release Total Allocated(MB)": _mb(in_use),
                                "Release Total Reserved(MB)": _mb(st.get("bytes_reserved"))})
    allocs = EventTable.from_records(
        ts=[r["ts"] for r in rows], dur=[r["dur"] for r in rows], kind=int(EventKind.MEMORY), pid=pid,
        value=[float(r["bytes"]) for r in rows], name=[r["name"] for r in rows], type="operator_memory",
        source=SOURCE, args=[json.dumps({k: v for k, v in r["args"].items() if v not in (None, "")}) for r in rows])
    counters = EventTable.from_records(
        ts=[x[0] for x in series], dur=0, kind=int(EventKind.COUNTER), pid=pid, value=[x[2] for x in series],
        name=[x[1] for x in series], type="memory", source=SOURCE, args=_CPU_DEVICE_ARGS)
    return EventTable.concat([allocs, counters])


def _mb(value: Any) -> Optional[str]:
    return str(value / _MB) if isinstance(value, int) else None


def _known_ids(ids: np.ndarray, mids: np.ndarray) -> np.ndarray:
    """Which of ``mids`` are in the sorted array ``ids``."""
    if not len(ids):
        return np.zeros(len(mids), dtype=bool)
    pos = np.minimum(np.searchsorted(ids, mids), len(ids) - 1)
    return ids[pos] == mids


def kernel_lines(lines: Any) -> set[int]:
    """The ids of a device plane's lines that hold what ran on the device: its ``Stream #N`` lines (GPU);
    on a plane without streams (TPU), its ``XLA Ops`` line. The other lines (``XLA Modules``, ``TensorFlow
    Ops``, ``TensorFlow Name Scope``, ``Steps`` ...) annotate the same time again: read as ranges, never
    counted next to the kernels they contain."""
    lines = list(lines)
    streams = {line.id for line in lines if (line.display_name or line.name).startswith("Stream #")}
    if streams:
        return streams
    return {line.id for line in lines if (line.display_name or line.name) == "XLA Ops"}


def _op_type(name: str, hlo_category: str) -> str:
    """A device op's type without a TF op: the HLO category, else the HLO op of ``%x = f32[] add(...)``,
    else a C++ kernel's function (``void ns::Kernel<...>(...)`` -> ``ns::Kernel``)."""
    if hlo_category:
        return hlo_category
    m = _HLO_OP_RE.search(name)
    if m:
        return m.group(1)
    func = name.removeprefix("void ").split("<", 1)[0].split("(", 1)[0].strip()
    return func or name


def _device_plane(plane: Any, start_ns: Optional[int], pid: int, device: int, kind: str,
                  warn: Warn) -> EventTable:
    stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
    # the TF op a kernel ran for: "tf_op", else the outermost annotation ("level 0": "<node>:<OpType>")
    tf_op_stats = {k for k, n in stat_names.items() if n in ("tf_op", "level 0")}
    category_stats = {k for k, n in stat_names.items() if n == "hlo_category"}
    on_device = kernel_lines(plane.lines)
    ts, dur, tid, stream, names, types, kinds = [], [], [], [], [], [], []
    unknown = bad_time = 0
    for line in plane.lines:
        base_ns = _line_base_ns(line, start_ns)
        line_kind = int(EventKind.KERNEL) if line.id in on_device else int(EventKind.RANGE)
        line_name = line.display_name or line.name
        for e in line.events:
            if e.metadata_id not in plane.event_metadata:
                unknown += 1
                continue
            t = base_ns + e.offset_ps // 1000
            if not _INT64_MIN <= t <= _INT64_MAX:
                bad_time += 1
                continue
            md = plane.event_metadata[e.metadata_id]
            op_type = category = ""
            for st in list(e.stats) + list(md.stats):
                if st.metadata_id in tf_op_stats or st.metadata_id in category_stats:
                    text = stat_names.get(st.ref_value, "") if st.WhichOneof("value") == "ref_value" else st.str_value
                    if st.metadata_id in tf_op_stats and not op_type:
                        text = text.split("#", 1)[0]          # "<node>:<OpType>#shape=...#"
                        op_type = text.rsplit(":", 1)[-1] if ":" in text else text
                    elif st.metadata_id in category_stats and not category:
                        category = text
            line_id = line.display_id or line.id
            name = md.display_name or md.name
            ts.append(t)
            dur.append(e.duration_ps // 1000)
            tid.append(line_id)
            stream.append(line_id if -1 <= line_id <= _INT32_MAX else -1)
            names.append(name)
            kinds.append(line_kind)
            types.append((op_type or _op_type(name, category)) if line_kind == EventKind.KERNEL else line_name)
    if unknown:
        warn(f"plane {plane.name}: {unknown} event(s) with a metadata id the plane does not define were skipped")
    if bad_time:
        warn(f"plane {plane.name}: {bad_time} event(s) with a start time out of range were skipped")
    if not ts:
        return EventTable.empty()
    return EventTable.from_records(ts=ts, dur=dur, kind=kinds, pid=pid, tid=tid,
                                   device=device, stream=stream, name=names, type=types,
                                   source=f"{SOURCE}:{kind}")


def read_logdir(root: Union[str, Path], pid: int = 0, step_kind: EventKind = EventKind.RANGE,
                on_error: Any = None) -> Optional[EventTable]:
    """All XSpace files under a TF logdir, concatenated; None when there are none.

    ``on_error(message)`` is called for an unreadable file (the others are
    still read) and for skipped events; without it the first error raises
    ProfilerDataError and skipped events are logged.
    """
    files = find_xspace_files(root)
    if not files:
        return None
    tables: list[EventTable] = []
    for path in files:
        try:
            tables.append(read_xspace(path, pid=pid, step_kind=step_kind, warn=on_error))
        except ProfilerDataError as e:
            if on_error is None:
                raise
            on_error(str(e))
    return EventTable.concat(tables)


def iter_op_rows(table: EventTable) -> Iterable[tuple[str, str, int]]:
    """(name, type, dur) of the OP rows, for quick inspection and tests."""
    ops = table.of_kind(EventKind.OP)
    return zip(ops.column_strings("name"), ops.column_strings("type"), ops["dur"].tolist())
