"""The sqlite export (``export_type`` db).

Schema (npuprof's own, shaped like msprof's db): ``STRING_IDS(id, value)``;
``EVENTS(startNs, endNs, kind, pid, tid, deviceId, streamId, step, value,
name, type, source, args)`` with text columns as ids into STRING_IDS;
``META_DATA(name, value)``; one table per analyzer (``OP_STATISTIC``,
``STEP_TRACE_TIME``, ...) with the CSV's columns.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..analysis.result import AnalysisResult
from ..fileio import FILE_MODE, secure_mkdir
from ..runinfo import NPUPROF_VERSION

SCHEMA_VERSION = "1.0.0"


def write_db(result: AnalysisResult, path: Path) -> Path:
    secure_mkdir(path.parent)
    tmp = path.with_name(path.name + f".tmp.{os.getpid()}")
    if tmp.exists():
        tmp.unlink()
    con = sqlite3.connect(tmp)
    try:
        os.chmod(tmp, FILE_MODE)
        cur = con.cursor()
        cur.execute("CREATE TABLE META_DATA(name TEXT PRIMARY KEY, value TEXT)")
        cur.executemany("INSERT INTO META_DATA VALUES (?, ?)", [
            ("SCHEMA_VERSION", SCHEMA_VERSION), ("NPUPROF_VERSION", NPUPROF_VERSION),
            ("RANK_ID", str(result.rank))])
        cur.execute("CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT)")
        cur.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", enumerate(result.events.strings))
        cur.execute("CREATE TABLE EVENTS(startNs INTEGER, endNs INTEGER, kind INTEGER, pid INTEGER, tid INTEGER, "
                    "deviceId INTEGER, streamId INTEGER, step INTEGER, value REAL, name INTEGER, type INTEGER, "
                    "source INTEGER, args INTEGER)")
        ev = result.events
        cols = [ev["ts"], ev["ts"] + ev["dur"], ev["kind"], ev["pid"], ev["tid"], ev["device"], ev["stream"],
                ev["step"], ev["value"], ev["name"], ev["type"], ev["source"], ev["args"]]
        cur.executemany("INSERT INTO EVENTS VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", zip(*(c.tolist() for c in cols)))
        for name, table in result.tables.items():
            cols_sql = ", ".join(f'"{c}"' for c in table.columns)
            cur.execute(f'CREATE TABLE "{name.upper()}" ({cols_sql})')
            marks = ",".join("?" * len(table.columns))
            cur.executemany(f'INSERT INTO "{name.upper()}" VALUES ({marks})', table.rows())
        con.commit()
    finally:
        con.close()
    os.replace(tmp, path)
    return path
