"""The Ascend profiler database's memory tables written by npuprof, checked on real torch_npu runs.

* Round trip: the real 2-rank torch_npu job with ``profile_memory`` and ``export_type=db`` is read by
  npuprof and written back (``npuprof analyse JOB --export-type db -o OUT``); npuprof's
  ``OP_MEMORY``, ``MEMORY_RECORD``, ``NPU_MEM`` and ``NPU_MODULE_MEM`` have the original's columns
  (names and declared types) and its rows, row for row in the original's order, text cells compared
  after resolving ``STRING_IDS`` (module ids through ``ENUM_MODULE``).
* Text: the same kind of job exported as text, analysed with db export: ``OP_MEMORY`` holds
  ``operator_memory.csv``'s rows, row for row (µs and MB converted exactly to ns and bytes).
* A run without memory data gets no memory table (nothing invented).
"""
from __future__ import annotations

import csv
import sqlite3
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from realdata import realdata, tree_digest

DB_JOB = "msinsight/test/data/pytorch/db/level1"
TEXT_JOB = "msinsight/test/data/pytorch/text/level1"
OUTPUT = "ASCEND_PROFILER_OUTPUT"
# table -> its columns that are STRING_IDS ids (NPU_MODULE_MEM's moduleId is an ENUM_MODULE id)
TEXT_COLUMNS = {"OP_MEMORY": ("name",), "MEMORY_RECORD": ("component",), "NPU_MEM": ("type",),
                "NPU_MODULE_MEM": ()}


def _analyse(src: Path, out: Path) -> Path:
    from npuprof.cli import main

    before = tree_digest(src)
    assert main(["analyse", str(src), "--export-type", "db", "-o", str(out), "--quiet"]) == 0
    assert tree_digest(src) == before
    return out


@pytest.fixture(scope="module")
def db_job(tmp_path_factory) -> tuple[Path, Path]:
    src = realdata(DB_JOB)
    return src, _analyse(src, tmp_path_factory.mktemp("dbmem") / "npuprof")


@pytest.fixture(scope="module")
def text_job(tmp_path_factory) -> tuple[Path, Path]:
    src = realdata(TEXT_JOB)
    return src, _analyse(src, tmp_path_factory.mktemp("textmem") / "npuprof")


def _connect(path: Path) -> sqlite3.Connection:
    assert path.is_file(), path
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)


def _table(con: sqlite3.Connection, table: str) -> tuple[list, list]:
    """(columns as (name, declared type), rows in file order with text ids resolved)."""
    columns = [(r[1], r[2].upper()) for r in con.execute(f"PRAGMA table_info({table})")]
    strings = dict(con.execute("SELECT id, value FROM STRING_IDS"))
    modules = dict(con.execute("SELECT id, name FROM ENUM_MODULE")) if table == "NPU_MODULE_MEM" else {}
    names = [c for c, _ in columns]
    text = [names.index(c) for c in TEXT_COLUMNS[table]]
    rows = []
    for r in con.execute(f"SELECT * FROM {table} ORDER BY rowid"):
        r = list(r)
        for i in text:
            r[i] = strings[r[i]]
        if modules:
            r[names.index("moduleId")] = modules[r[names.index("moduleId")]]
        rows.append(tuple(r))
    return columns, rows


@pytest.mark.parametrize("rank", (0, 1))
@pytest.mark.parametrize("table", sorted(TEXT_COLUMNS))
def test_memory_tables_round_trip_row_for_row(db_job, rank, table):
    src, out = db_job
    name = f"ascend_pytorch_profiler_{rank}.db"
    original = _connect(src / f"rank{rank}_ascend_pt" / OUTPUT / name)
    ours = _connect(out / f"rank{rank}_ascend_pt" / OUTPUT / name)
    try:
        if not original.execute("SELECT count(*) FROM sqlite_master WHERE name=?", (table,)).fetchone()[0]:
            pytest.skip(f"the original rank {rank} database has no {table} table")
        their_cols, their_rows = _table(original, table)
        our_cols, our_rows = _table(ours, table)
    finally:
        original.close()
        ours.close()
    assert our_cols == their_cols
    assert len(their_rows) > 0 and len(our_rows) == len(their_rows)
    differ = [(i, a, b) for i, (a, b) in enumerate(zip(their_rows, our_rows)) if a != b]
    assert not differ, f"{len(differ)} rows differ; first (row, original, npuprof): {differ[0]}"


def _us_ns(text: str):
    return None if not text.strip() else int((Decimal(text.strip()) * 1000).to_integral_value())


def _mb_bytes(text: str):
    return None if not text.strip() else int((Decimal(text.strip()) * 1024 * 1024).to_integral_value())


@pytest.mark.parametrize("rank", (0, 1))
def test_op_memory_of_a_text_run_is_its_operator_memory_csv(text_job, rank):
    src, out = text_job
    with open(src / f"rank{rank}_ascend_pt" / OUTPUT / "operator_memory.csv", newline="",
              encoding="utf-8-sig") as fh:
        tool = list(csv.DictReader(fh))
    expected = []
    for r in tool:
        device = r["Device Type"].strip()
        expected.append((
            r["Name"], int(Decimal(r["Size(KB)"]) * 1024), _us_ns(r["Allocation Time(us)"]),
            _us_ns(r["Release Time(us)"]), _us_ns(r["Active Release Time(us)"]), _us_ns(r["Duration(us)"]),
            _us_ns(r["Active Duration(us)"]),
            *(_mb_bytes(r[f"{when} Total {what}(MB)"]) for when in ("Allocation", "Release")
              for what in ("Allocated", "Reserved", "Active")),
            int(r["Stream Ptr"]) if r["Stream Ptr"].strip() else None,
            int(device.partition(":")[2]) if device.startswith("NPU:") else None))
    con = _connect(out / f"rank{rank}_ascend_pt" / OUTPUT / f"ascend_pytorch_profiler_{rank}.db")
    try:
        _, ours = _table(con, "OP_MEMORY")
    finally:
        con.close()
    assert len(expected) > 0 and len(ours) == len(expected)
    differ = [(i, a, b) for i, (a, b) in enumerate(zip(expected, ours)) if a != b]
    assert not differ, f"{len(differ)} rows differ; first (row, csv, npuprof): {differ[0]}"


def test_no_memory_data_no_memory_tables(tmp_path):
    from npuprof.analysis.result import AnalysisResult
    from npuprof.events import EventKind, EventTable
    from npuprof.export.ascend_db_writer import write_ascend_db
    from npuprof.runinfo import RunInfo

    run = tmp_path / "w_1_20250101000000000_ascend_pt"
    events = EventTable.from_records(ts=np.array([10, 20]), dur=np.array([5, 5]), kind=[int(EventKind.OP)] * 2,
                                     name=["aten::add", "aten::mul"], type=["aten::add", "aten::mul"])
    path = write_ascend_db(AnalysisResult(run, RunInfo(run), events), tmp_path / "out")
    con = _connect(path)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        con.close()
    assert "PYTORCH_API" in tables
    assert not tables & {"OP_MEMORY", "MEMORY_RECORD", "NPU_MEM", "NPU_MODULE_MEM", "ENUM_MODULE"}


def test_memory_events_without_torch_npus_columns(tmp_path):
    """Memory data of other producers (npuprof's python_memory plugin: no stream, no release, no totals):
    rows with what the events hold, NULL for the rest, by allocation time."""
    from npuprof.analysis.result import AnalysisResult
    from npuprof.events import EventKind, EventTable
    from npuprof.export.ascend_db_writer import write_ascend_db
    from npuprof.runinfo import RunInfo

    run = tmp_path / "npuprof_run"
    mb = 1024 * 1024
    events = EventTable.from_records(
        ts=np.array([30, 10, 10, 20]), dur=np.zeros(4, np.int64),
        kind=[int(EventKind.MEMORY), int(EventKind.MEMORY), int(EventKind.COUNTER), int(EventKind.COUNTER)],
        name=["b.py:3", "a.py:1", "Python Total Allocated(MB)", "Python Total Allocated(MB)"],
        type=["operator_memory", "operator_memory", "memory", "memory"], value=[2048.0, 1024.0, 1.5, 2.0])
    path = write_ascend_db(AnalysisResult(run, RunInfo(run), events), tmp_path / "out")
    con = _connect(path)
    try:
        _, op = _table(con, "OP_MEMORY")
        _, record = _table(con, "MEMORY_RECORD")
    finally:
        con.close()
    none6 = (None,) * 6
    assert op == [("a.py:1", 1024, 10, None, None, None, None, *none6, None, None),
                  ("b.py:3", 2048, 30, None, None, None, None, *none6, None, None)]
    assert record == [("Python", 10, int(1.5 * mb), None, None, None, None),
                      ("Python", 20, 2 * mb, None, None, None, None)]
