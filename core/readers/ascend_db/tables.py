"""Reading one table: cells as numbers or text (a bad cell is a problem for its row, never an
exception), rows by column name (:class:`_TableAccess`, which every table family's reader extends), and
the event columns they fill (:class:`_Out`).
"""
from __future__ import annotations

import math
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from npuprof.events import EventKind, EventTable, StringPool
from .schema import INVALID_U32, Warn


class _BadCell(ValueError):
    """A cell that cannot be the number its column holds."""


def _cell_int(value: Any, what: str) -> int:
    """An integer cell: int, integral finite float, or decimal text; else _BadCell naming ``what``."""
    if type(value) is int:
        return value
    if value is None:
        raise _BadCell(f"{what} is NULL")
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]+\s*", value):
        return int(value)
    shown = repr(value)
    raise _BadCell(f"{what} is {shown[:40] + '...' if len(shown) > 40 else shown}")


def _ints(values: Sequence[Any], what: str, default: Optional[int] = None,
          lo: int = -(1 << 63), hi: int = (1 << 63) - 1) -> tuple[np.ndarray, list[Optional[str]]]:
    """A column of integer cells -> (int64 array, per-row problem or None).

    NULL is ``default`` where one is given (an optional value), else a problem;
    values outside ``lo..hi`` are problems."""
    n = len(values)
    if default is None or not any(v is None for v in values):
        try:
            arr = np.fromiter(values, dtype=np.int64, count=n) if n else np.zeros(0, np.int64)
            if all(type(v) is int or isinstance(v, str) for v in values) and \
                    (not n or (int(arr.min()) >= lo and int(arr.max()) <= hi)):
                return arr, [None] * n
        except (TypeError, ValueError, OverflowError):
            pass
    out = np.zeros(n, dtype=np.int64)
    bad: list[Optional[str]] = [None] * n
    for i, v in enumerate(values):
        if v is None and default is not None:
            out[i] = default
            continue
        try:
            x = _cell_int(v, what)
        except _BadCell as e:
            bad[i] = str(e)
            continue
        if not lo <= x <= hi:
            bad[i] = f"{what} {x} is out of range"
            continue
        out[i] = x
    return out, bad


def _plain(value: Any) -> Any:
    """A cell for the args JSON: numbers and text as they are, anything else as text."""
    if value is None or isinstance(value, (int, str)) or isinstance(value, float) and math.isfinite(value):
        return value
    return str(value)


@dataclass
class _Rows:
    """Rows of one table: ``cols[name]`` is the list of that column's cells (None where the file lacks it)."""

    table: str
    cols: dict
    n: int

    def get(self, name: str) -> list:
        return self.cols.get(name) or [None] * self.n


class _Out:
    """Event columns, filled part by part with one string pool."""

    def __init__(self, source: str) -> None:
        self.pool = StringPool()
        self.source = source
        self.parts: list[dict] = []

    def add(self, kind: EventKind, ts: np.ndarray, dur: np.ndarray, name: Iterable[str], type_: Any,
            *, pid: Any = 0, tid: Any = 0, device: Any = -1, stream: Any = -1, value: Any = 0.0, step: Any = -1,
            args: Any = "", corr: Any = -1) -> None:
        n = len(ts)
        if not n:
            return
        code = self.pool.code
        part = {"ts": ts, "dur": dur, "kind": np.full(n, int(kind), np.uint8), "pid": pid, "tid": tid,
                "device": device, "stream": stream, "value": value, "step": step, "corr": corr,
                "name": np.fromiter((code(s) for s in name), np.int32, count=n),
                "type": np.full(n, code(type_), np.int32) if isinstance(type_, str)
                else np.fromiter((code(s) for s in type_), np.int32, count=n),
                "args": np.full(n, code(args), np.int32) if isinstance(args, str)
                else np.fromiter((code(s) for s in args), np.int32, count=n)}
        self.parts.append(part)

    def table(self) -> EventTable:
        source = self.pool.code(self.source)
        tables = []
        for p in self.parts:
            numeric = {k: p[k] for k in ("ts", "dur", "kind", "pid", "tid", "device", "stream", "value", "step",
                                         "corr")}
            codes = {"name": p["name"], "type": p["type"], "args": p["args"], "source": source}
            tables.append(EventTable.from_codes(numeric, codes, self.pool.strings))
        return EventTable.concat(tables)


class _TableAccess:
    """One open database's tables, read by column name; each table family's reader extends it."""

    api_types: dict

    def __init__(self, con: sqlite3.Connection, path: Path, note: Warn, source: str) -> None:
        self.con, self.path, self.note, self.source = con, path, note, source
        self.tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        self._columns: dict[str, list[str]] = {}
        self.strings: dict = {}
        self.rows_read: dict[str, int] = {}
        self.out = _Out(source)

    # -- schema -----------------------------------------------------------------------------------
    def columns(self, table: str) -> list[str]:
        if table not in self._columns:
            self._columns[table] = [str(r[1]) for r in self.con.execute(f'PRAGMA table_info("{table}")')]
        return self._columns[table]

    def select(self, table: str, required: Sequence[str], optional: Sequence[Any] = ()) -> Optional[_Rows]:
        """The rows of ``table``: its ``required`` columns and those of ``optional`` it has.

        An optional entry is a name or a tuple of accepted spellings (the first
        one the file has is read, under the first spelling). Returns None
        (with a warning when the table exists) when the table or a required
        column is missing.
        """
        if table not in self.tables:
            return None
        have = set(self.columns(table))
        missing = [c for c in required if c not in have]
        if missing:
            self.note(f"{self.path}: table {table} has no column(s) {', '.join(missing)}; table skipped")
            return None
        picks: list[tuple[str, str]] = [(c, c) for c in required]
        for entry in optional:
            names = (entry,) if isinstance(entry, str) else tuple(entry)
            found = next((c for c in names if c in have), None)
            if found is not None:
                picks.append((names[0], found))
        sql = "SELECT " + ", ".join(f'"{col}"' for _, col in picks) + f' FROM "{table}"'
        rows = self.con.execute(sql).fetchall()
        cols = {key: [r[i] for r in rows] for i, (key, _) in enumerate(picks)}
        self.rows_read[table] = len(rows)
        return _Rows(table, cols, len(rows))

    def enum(self, table: str, documented: dict) -> dict:
        """An ``ENUM_*`` table as {id: name}, over its documented values."""
        out = dict(documented)
        rows = self.select(table, ("id", "name")) if table in self.tables else None
        if rows is not None:
            for k, v in zip(rows.cols["id"], rows.cols["name"]):
                if type(k) is int and v is not None:
                    out[k] = str(v)
        return out

    def text(self, value: Any) -> str:
        """A STRING_IDS id (or a cell that is text already) -> text; "" for NULL."""
        if type(value) is int:
            got = self.strings.get(value)
            return got if got is not None else str(value)
        if value is None:
            return ""
        return value if isinstance(value, str) else str(value)

    def texts(self, values: Sequence[Any]) -> list[str]:
        strings = self.strings
        return [strings.get(v, str(v)) if type(v) is int else self.text(v) for v in values]

    def skip_bad(self, rows: _Rows, *problems: list) -> np.ndarray:
        """Mask of rows with no problem; the others are reported once for the table."""
        ok = np.ones(rows.n, dtype=bool)
        first = None
        for per_row in problems:
            for i, p in enumerate(per_row):
                if p is not None:
                    if ok[i] and first is None:
                        first = p
                    ok[i] = False
        bad = int((~ok).sum())
        if bad:
            self.note(f"{self.path}: {bad} row(s) of table {rows.table} skipped (first: {first})")
        return ok

    def span(self, rows: _Rows, start: str = "startNs", end: str = "endNs",
             end_optional: bool = False) -> tuple[np.ndarray, np.ndarray, list]:
        """(start, duration, problems) of each row; an end before its start is a problem."""
        ts, bad_ts = _ints(rows.get(start), start)
        ends_raw = rows.get(end)
        if end_optional:
            ends_raw = [e if e is not None else s for e, s in zip(ends_raw, rows.get(start))]
        te, bad_te = _ints(ends_raw, end)
        dur = te - ts
        problems = [a or b or (f"{end} is before {start}" if d < 0 else None)
                    for a, b, d in zip(bad_ts, bad_te, dur.tolist())]
        return ts, np.maximum(dur, 0), problems


def _numeric_rows(ok: np.ndarray, values: Sequence) -> list[int]:
    """The rows kept by ``ok`` whose cell in ``values`` is a number."""
    return [i for i in np.flatnonzero(ok).tolist() if isinstance(values[i], (int, float))]


def _npu(device: Any) -> str:
    """A deviceId cell as the csv files' ``NPU:<n>`` ("" when not a device id)."""
    return f"NPU:{device}" if type(device) is int and 0 <= device < INVALID_U32 else ""


def _ptr(value: Any) -> str:
    """A streamPtr cell as the csv files write it ("" for NULL)."""
    return str(value) if type(value) is int else ""


def _link(value: Any) -> int:
    """A connectionId cell -> ``corr`` (-1 for NULL, msprof's uint32 "none", or anything not an id)."""
    if type(value) is int and 0 <= value < INVALID_U32:
        return value
    return -1


def _id_text(value: Any) -> Optional[str]:
    """An id cell as kernel_details writes it: the number, ``N/A`` for msprof's "none"."""
    if value is None:
        return None
    if type(value) is int:
        return "N/A" if value == INVALID_U32 or value < 0 else str(value)
    return str(_plain(value))


def _only(values: Optional[set]) -> int:
    """The one value of a set, else -1."""
    return next(iter(values)) if values and len(values) == 1 else -1


def _pid_tid(global_tids: list) -> tuple[np.ndarray, np.ndarray]:
    """``globalTid`` (pid in the high 32 bits, tid in the low 32) -> (pid, tid); 0 where unusable."""
    g = np.array([v if type(v) is int and 0 <= v < 1 << 63 else 0 for v in global_tids], dtype=np.int64)
    return g >> 32, g & 0xFFFFFFFF
