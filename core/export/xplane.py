"""XSpace export: npuprof runs in TensorBoard's profile plugin / xprof.

xprof reads only ``<logdir>/plugins/profile/<run>/<host>.xplane.pb`` (an
``XSpace`` protobuf, schema ``tsl/profiler/protobuf/xplane.proto``), so this
module writes that layout. The message is encoded here directly from the
event columns (proto3 wire format: varints and length-delimited fields), with
no dependency on TensorFlow or xprof; the tests decode the output with
TensorFlow's generated ``xplane_pb2`` and convert it with xprof's own
converter to prove both read it.

Layout written: one ``/host:CPU`` plane with one line per host thread (ops,
API calls, user ranges, steps, marks) and one ``/device:CUSTOM:<d>`` plane
per NPU (name ``Ascend NPU <d>``) with one line per stream. Steps carry the
``step_num`` stat; every event carries ``op_type`` and npuprof's event kind.
Counters are not exported (XSpace keeps them elsewhere). Protobuf cannot
hold more than 2 GiB: a larger space is refused with a hint to filter,
never written as an empty file.

Example::

    export_tensorboard("./prof", "./tb")      # -> ./tb/plugins/profile/<UTC time>/<host>_rank0.xplane.pb
"""
from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Optional, Union

import numpy as np

from ..errors import ProfilerDataError
from ..events import EventKind, EventTable
from ..fileio import atomic_write

PROTOBUF_LIMIT = (2 << 30) - 1
HOST_PLANE = "/host:CPU"
DEVICE_PLANE = "/device:CUSTOM:{}"
_SKIP = (int(EventKind.COUNTER), int(EventKind.MEMORY))
STAT_NAMES = ("step_num", "op_type", "npuprof_kind", "stream", "device")


def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _len_field(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _int_field(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(int(value)) if value else b""


def _str_field(field: int, text: str) -> bytes:
    return _len_field(field, text.encode("utf-8")) if text else b""


def _map_entry(field: int, key: int, value: bytes) -> bytes:
    return _len_field(field, _key(1, 0) + _varint(key) + _len_field(2, value))


class _Plane:
    """Builds one XPlane: interned event/stat metadata and encoded lines."""

    def __init__(self, plane_id: int, name: str) -> None:
        self.id = plane_id
        self.name = name
        self.event_meta: dict[str, int] = {}
        self.stat_meta: dict[str, int] = {n: i + 1 for i, n in enumerate(STAT_NAMES)}
        self.lines: list[bytes] = []

    def event_id(self, name: str) -> int:
        i = self.event_meta.get(name)
        if i is None:
            i = self.event_meta[name] = len(self.event_meta) + 1
        return i

    def ref_id(self, text: str) -> int:
        """A stat_metadata entry whose name is ``text`` (for str stats by reference)."""
        i = self.stat_meta.get(text)
        if i is None:
            i = self.stat_meta[text] = len(self.stat_meta) + 1
        return i

    def add_line(self, line_id: int, name: str, ev: EventTable) -> None:
        order = np.argsort(ev["ts"], kind="stable")
        ts = ev["ts"][order]
        base = int(ts[0])
        end = int((ts + ev["dur"][order]).max())
        offs = ((ts - base) * 1000).tolist()
        durs = (ev["dur"][order] * 1000).tolist()
        names = ev.string_array("name")[order].tolist()
        types = ev.string_array("type")[order].tolist()
        kinds = ev["kind"][order].tolist()
        steps = ev["step"][order].tolist()
        sid = self.stat_meta
        body = bytearray()
        for off, dur, nm, tp, kd, st in zip(offs, durs, names, types, kinds, steps):
            stats = _len_field(4, _int_field(1, sid["npuprof_kind"]) + _int_field(4, kd))
            if tp:
                stats += _len_field(4, _int_field(1, sid["op_type"]) + _int_field(7, self.ref_id(tp)))
            if kd == int(EventKind.STEP) and st >= 0:
                stats += _len_field(4, _int_field(1, sid["step_num"]) + _key(4, 0) + _varint(st))
            msg = _int_field(1, self.event_id(nm or "unknown")) + _key(2, 0) + _varint(off) + \
                _int_field(3, dur) + stats
            body += _len_field(4, msg)
        line = _int_field(1, line_id) + _int_field(10, line_id) + _str_field(2, name) + \
            _str_field(11, name) + _int_field(3, base) + _int_field(9, (end - base) * 1000) + bytes(body)
        self.lines.append(_len_field(3, line))

    def encode(self) -> bytes:
        out = bytearray(_int_field(1, self.id) + _str_field(2, self.name))
        for line in self.lines:
            out += line
        for name, i in self.event_meta.items():
            out += _map_entry(4, i, _int_field(1, i) + _str_field(2, name) + _str_field(4, name))
        for name, i in self.stat_meta.items():
            out += _map_entry(5, i, _int_field(1, i) + _str_field(2, name))
        return bytes(out)


def _with_step_numbers(events: EventTable) -> EventTable:
    """STEP events carry their own number in ``step`` (ProfilerStep#N)."""
    from ..analysis.steps import STEP_RE

    is_step = events["kind"] == int(EventKind.STEP)
    if not is_step.any():
        return events
    names = events.string_array("name")
    step = events["step"].copy()
    for i in np.flatnonzero(is_step).tolist():
        m = STEP_RE.search(names[i])
        if m:
            step[i] = int(m.group(1))
    return events.with_column("step", step)


def xspace_bytes(events: EventTable, hostname: str = "") -> bytes:
    """Encode a run's events as a serialized ``XSpace``."""
    events = _with_step_numbers(events.select(~np.isin(events["kind"], np.array(_SKIP, np.uint8))))
    planes = []
    host = events.select(events["device"] < 0)
    if len(host):
        plane = _Plane(0, HOST_PLANE)
        keys = np.unique(np.stack([host["pid"], host["tid"]], 1), axis=0)
        for pid, tid in keys.tolist():
            sel = host.select((host["pid"] == pid) & (host["tid"] == tid))
            plane.add_line(int(tid), f"Thread {tid} (pid {pid})", sel)
        planes.append(plane)
    dev = events.select(events["device"] >= 0)
    for d in sorted(set(dev["device"].tolist())):
        plane = _Plane(len(planes) + 1, DEVICE_PLANE.format(d))
        on_dev = dev.select(dev["device"] == d)
        for s in sorted(set(on_dev["stream"].tolist())):
            plane.add_line(int(max(s, 0)), f"Stream {s}", on_dev.select(on_dev["stream"] == s))
        planes.append(plane)
    out = bytearray()
    for p in planes:
        out += _len_field(1, p.encode())
        if len(out) > PROTOBUF_LIMIT:
            raise ProfilerDataError(Path(hostname or "xspace"), "would exceed protobuf's 2 GiB limit; filter the "
                                    "timeline (npuprof timeline --steps/--min-dur) before exporting to XSpace")
    if hostname:
        out += _str_field(4, hostname)
    return bytes(out)


def write_xspace(events: EventTable, path: Union[str, Path], hostname: str = "") -> Path:
    """Write ``events`` as ``path`` (``<host>.xplane.pb``), atomically."""
    return atomic_write(Path(path), xspace_bytes(events, hostname))


def export_tensorboard(path: Union[str, Path], logdir: Union[str, Path], run_name: Optional[str] = None,
                       qualities: Optional[list] = None) -> list:
    """Write every run under ``path`` as ``<logdir>/plugins/profile/<run_name>/<host>_rank<r>.xplane.pb``.

    ``run_name`` defaults to the UTC time as TensorFlow names runs
    (``YYYY_MM_DD_HH_MM_SS``). Returns the files written; each run's
    :class:`~npuprof.quality.DataQuality` is appended to ``qualities`` when given.
    """
    from ..analysis.pipeline import find_runs, load_run

    runs = find_runs(path)
    if not runs:
        raise ProfilerDataError(Path(path), "holds no profiling run")
    name = run_name or _dt.datetime.now(_dt.timezone.utc).strftime("%Y_%m_%d_%H_%M_%S")
    if not re.fullmatch(r"[0-9A-Za-z_.\-]+", name):
        from ..errors import ProfilerConfigError

        raise ProfilerConfigError("run_name", name, "letters, digits, '_', '-', '.'")
    out_dir = Path(logdir) / "plugins" / "profile" / name
    written = []
    seen: dict = {}
    for run in runs:
        loaded = load_run(run)
        if qualities is not None:
            qualities.append(loaded.quality)
        events, info = loaded.events, loaded.info
        host = re.sub(r"[^0-9A-Za-z_.\-]", "_", info.hostname or "host")
        stem = f"{host}_rank{info.rank}"
        seen[stem] = seen.get(stem, 0) + 1
        if seen[stem] > 1:
            stem += f"_w{seen[stem]}"
        written.append(write_xspace(events, out_dir / f"{stem}.xplane.pb", hostname=stem))
    return written


__all__ = ["export_tensorboard", "write_xspace", "xspace_bytes"]
