"""The sqlite export (``export_type`` db).

Schema (npuprof's own, shaped like msprof's db): ``STRING_IDS(id, value)``;
``EVENTS(startNs, endNs, kind, pid, tid, deviceId, streamId, step, value,
name, type, source, args, connectionId)`` with text columns as ids into
STRING_IDS and ``connectionId`` the launch link (as in msprof's TASK and
CANN_API: a host call and the device tasks it launched share it; NULL when
none);
``META_DATA(name, value)``; one table per analyzer (``OP_STATISTIC``,
``STEP_TRACE_TIME``, ...) with the CSV's columns.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np

from ..analysis.result import AnalysisResult
from ..analysis.table import _pylist
from ..fileio import FILE_MODE, secure_mkdir
from ..runinfo import NPUPROF_VERSION

SCHEMA_VERSION = "1.0.0"
INSERT_ROWS = 100_000


def write_db(result: AnalysisResult, path: Path) -> Path:
    secure_mkdir(path.parent)
    tmp = path.with_name(path.name + f".tmp.{os.getpid()}")
    if tmp.exists():
        tmp.unlink()
    con = sqlite3.connect(tmp)
    try:
        os.chmod(tmp, FILE_MODE)
        cur = con.cursor()
        # written to a temporary name and renamed: a rollback journal would only cost time
        cur.execute("PRAGMA journal_mode=OFF")
        cur.execute("PRAGMA synchronous=OFF")
        cur.execute("CREATE TABLE META_DATA(name TEXT PRIMARY KEY, value TEXT)")
        cur.executemany("INSERT INTO META_DATA VALUES (?, ?)", [
            ("SCHEMA_VERSION", SCHEMA_VERSION), ("NPUPROF_VERSION", NPUPROF_VERSION),
            ("RANK_ID", str(result.rank))])
        cur.execute("CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT)")
        cur.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", enumerate(result.events.strings))
        cur.execute("CREATE TABLE EVENTS(startNs INTEGER, endNs INTEGER, kind INTEGER, pid INTEGER, tid INTEGER, "
                    "deviceId INTEGER, streamId INTEGER, step INTEGER, value REAL, name INTEGER, type INTEGER, "
                    "source INTEGER, args INTEGER, connectionId INTEGER)")
        ev = result.events
        for lo in range(0, len(ev), INSERT_ROWS):  # bounded memory: one block of Python rows at a time
            sl = slice(lo, lo + INSERT_ROWS)
            ts = ev["ts"][sl]
            cols = [ts, ts + ev["dur"][sl]] + [ev[k][sl] for k in ("kind", "pid", "tid", "device", "stream", "step",
                                                                   "value", "name", "type", "source", "args")]
            corr = ev["corr"][sl]
            cols.append(np.where(corr >= 0, corr, None) if (corr >= 0).any() else np.full(len(corr), None))
            cur.executemany("INSERT INTO EVENTS VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                            zip(*(c.tolist() for c in cols)))
        for name, table in result.tables.items():
            cols_sql = ", ".join(f'"{c}"' for c in table.columns)
            cur.execute(f'CREATE TABLE "{name.upper()}" ({cols_sql})')
            marks = ",".join("?" * len(table.columns))
            for lo in range(0, len(table), INSERT_ROWS):
                block = table.block(lo, min(len(table), lo + INSERT_ROWS))
                cur.executemany(f'INSERT INTO "{name.upper()}" VALUES ({marks})',
                                zip(*(_pylist(block[c]) for c in table.columns)))
        con.commit()
    finally:
        con.close()
    os.replace(tmp, path)
    return path
