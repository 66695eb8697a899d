"""Read MindSpore's raw host-operator files (``FRAMEWORK/``) into events.

MindSpore's CPU profiler (2.x, including 2.10) writes, at ``stop()``:

``cpu_op_execute_timestamp_{rank}.txt``
    one line per operator: ``<full op name>;<kind>;<start_ns>,<dur_ms>,<tid> ...``
    where ``start_ns`` is the wall clock (ns since the Unix epoch, the time
    base npuprof uses), ``dur_ms`` a decimal number of milliseconds and
    ``tid`` MindSpore's thread id. ``<kind>`` is ``HostCpuOps``, not the op type.
``cpu_op_detail_info_{rank}.csv``
    ``op_side,op_type,op_name,full_op_name,...,pid``: gives each full name's
    op type and the process id.
``cpu_framework_{rank}.txt``
    one line per launch with its input shapes (read when the run asked for
    ``record_shapes``; see :mod:`.shapes`).
``cpu_ms_memory_record_{rank}.txt`` (``profile_memory=True``)
    ``Timestamp(ns),Total Allocated(Byte),Total Reserved(Byte),Total Active(Byte)``
    rows, wall clock: read as :data:`EventKind.COUNTER` series
    ``MindSpore Total Allocated(Byte)`` ...

Each timestamp becomes one :data:`EventKind.OP` event (``name`` = full op
name, ``type`` = op type such as ``MatMul``, ``source`` = ``"mindspore"``).

Example::

    >>> table, problems = read_framework_dir(Path("run/FRAMEWORK"))  # doctest: +SKIP
    >>> sorted(set(table.column_strings("type")))                    # doctest: +SKIP
    ['BiasAdd', 'MatMul', 'ReLU']
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Optional

import numpy as np

from npuprof.events import EventKind, EventTable
from npuprof.fileio import check_input_file
from npuprof.readers.ascend_ops import op_type_of    # MindSpore's names: also its device tasks'

from .shapes import attach_shapes

SOURCE = "mindspore"
OP_TIMESTAMP_GLOB = "cpu_op_execute_timestamp_*.txt"
OP_DETAIL_GLOB = "cpu_op_detail_info_*.csv"
MEMORY_GLOB = "cpu_ms_memory_record_*.txt"
_RANK_RE = re.compile(r"_(\d+)\.(?:txt|csv)$")
_NS_PER_MS = 1_000_000


def has_framework_data(framework_dir: Path) -> bool:
    """True when ``framework_dir`` holds at least one CPU op timestamp file."""
    return framework_dir.is_dir() and any(framework_dir.glob(OP_TIMESTAMP_GLOB))


def read_framework_dir(framework_dir: Path, default_pid: int = 0,
                       record_shapes: bool = False) -> tuple[EventTable, list[str]]:
    """Parse every ``cpu_op_execute_timestamp_*.txt`` under ``framework_dir``.

    Returns the OP events and a list of problems (damaged lines skipped);
    undamaged lines are always kept, so a file cut short by a crash still
    yields everything before the cut. With ``record_shapes`` the input
    shapes of ``cpu_framework_{rank}.txt`` go into each OP event's ``args``
    (:mod:`.shapes`); MindSpore writes that file whatever the setting, so
    the caller decides from the run's ``record_shapes``.
    """
    tables: list[EventTable] = []
    problems: list[str] = []
    for path in sorted(framework_dir.glob(OP_TIMESTAMP_GLOB)):
        rank = _rank_of(path)
        detail = framework_dir / f"cpu_op_detail_info_{rank}.csv" if rank is not None else None
        types, pid = _read_detail(detail, problems) if detail is not None and detail.is_file() else ({}, None)
        table = _read_timestamps(path, types, default_pid if pid is None else pid, problems)
        shapes = framework_dir / f"cpu_framework_{rank}.txt" if rank is not None else None
        if record_shapes and len(table) and shapes is not None and shapes.is_file():
            table = attach_shapes(table, shapes, problems)
        if len(table):
            tables.append(table)
    for path in sorted(framework_dir.glob(MEMORY_GLOB)):
        tables.append(_read_memory(path, default_pid, problems))
    return EventTable.concat(tables), problems


def _read_memory(path: Path, pid: int, problems: list[str]) -> EventTable:
    """MindSpore's CPU memory record: one COUNTER series per column."""
    check_input_file(path)
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines:
        return EventTable.empty()
    header = [h.strip() for h in lines[0].split(",")]
    if not header or header[0] != "Timestamp(ns)":
        problems.append(f"{path}: unexpected header {lines[0][:80]!r}; file skipped")
        return EventTable.empty()
    rows = [ln.split(",") for ln in lines[1:] if ln.strip()]
    good = [r for r in rows if len(r) == len(header)]
    if len(good) != len(rows):
        problems.append(f"{path}: {len(rows) - len(good)} damaged row(s) skipped")
    if not good:
        return EventTable.empty()
    try:
        arr = np.array(good, dtype=str)
        ts = arr[:, 0].astype(np.int64)
        values = arr[:, 1:].astype(np.float64)
    except (ValueError, OverflowError):
        problems.append(f"{path}: non-numeric values; file skipped")
        return EventTable.empty()
    series = header[1:]
    n = len(ts)
    return EventTable.from_records(
        ts=np.tile(ts, len(series)), kind=int(EventKind.COUNTER), pid=pid,
        value=values.T.reshape(-1), name=[f"MindSpore {s}" for s in series for _ in range(n)],
        type="memory", source=SOURCE, args='{"Device Type": "CPU"}')


def _rank_of(path: Path) -> Optional[str]:
    m = _RANK_RE.search(path.name)
    return m.group(1) if m else None


def _read_detail(path: Path, problems: list[str]) -> tuple[dict[str, str], Optional[int]]:
    """full op name -> op type, and the process id, from cpu_op_detail_info."""
    check_input_file(path)
    types: dict[str, str] = {}
    pid: Optional[int] = None
    text = path.read_text(encoding="utf-8", errors="replace")
    reader = csv.DictReader(io.StringIO(text))
    for row in reader:
        full, typ = row.get("full_op_name"), row.get("op_type")
        if full and typ:
            types[full] = typ
        raw_pid = (row.get("pid") or "").strip()
        if pid is None and raw_pid.isdigit():
            pid = int(raw_pid)
    if reader.fieldnames and "full_op_name" not in reader.fieldnames:
        problems.append(f"{path}: no full_op_name column; op types are taken from op names")
    return types, pid


def _read_timestamps(path: Path, types: dict[str, str], pid: int, problems: list[str]) -> EventTable:
    check_input_file(path)
    names: list[str] = []
    starts: list[np.ndarray] = []
    durs: list[np.ndarray] = []
    tids: list[np.ndarray] = []
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            fields = line.split(";")
            if len(fields) < 3 or not fields[0]:
                problems.append(f"{path}:{lineno}: not '<op>;<kind>;<timestamps>', line skipped")
                continue
            parsed = _parse_triples(fields[-1])
            if parsed is None:
                problems.append(f"{path}:{lineno}: damaged timestamps for {fields[0]!r}, line skipped")
                continue
            s, d, t = parsed
            if not len(s):
                continue
            names.append(fields[0])
            starts.append(s)
            durs.append(d)
            tids.append(t)
    if not names:
        return EventTable.empty()
    counts = np.array([len(s) for s in starts], dtype=np.int64)
    # Strings are per op (one line), so code them once and repeat the codes.
    strings = ["", SOURCE]
    name_codes = np.arange(2, 2 + len(names), dtype=np.int32)
    strings.extend(names)
    type_index: dict[str, int] = {}
    type_codes = np.empty(len(names), dtype=np.int32)
    for i, name in enumerate(names):
        typ = types.get(name) or op_type_of(name)
        code = type_index.get(typ)
        if code is None:
            code = type_index[typ] = len(strings)
            strings.append(typ)
        type_codes[i] = code
    n = int(counts.sum())
    numeric = {
        "ts": np.concatenate(starts),
        "dur": np.concatenate(durs),
        "kind": np.full(n, int(EventKind.OP), dtype=np.uint8),
        "pid": np.full(n, pid, dtype=np.int64),
        "tid": np.concatenate(tids),
    }
    codes = {"name": np.repeat(name_codes, counts), "type": np.repeat(type_codes, counts),
             "source": np.full(n, 1, dtype=np.int32)}
    return EventTable.from_codes(numeric, codes, strings)


def _parse_triples(text: str) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``"s,d,t s,d,t ..."`` -> (start ns, duration ns, tid) arrays, or None if damaged."""
    flat = text.replace(",", " ").split()
    if len(flat) % 3:
        return None
    try:
        arr = np.array(flat, dtype=str).reshape(-1, 3)
        start = arr[:, 0].astype(np.int64)
        dur_ms = arr[:, 1].astype(np.float64)
        tid = arr[:, 2].astype(np.int64)
    except (ValueError, OverflowError):  # not a number, or beyond int64 (a damaged digit run)
        return None
    if not np.isfinite(dur_ms).all() or (dur_ms < 0).any() or (start <= 0).any():
        return None
    return start, np.rint(dur_ms * _NS_PER_MS).astype(np.int64), tid
