"""Conformance on real Ascend profiler databases: torch_npu ``export_type=db``
(Ascend910B, 2 ranks, Level1, step 50; ../shared/realdata/msinsight, see its
README), read where they are and never written.

Every count is checked against the database's own tables, queried here in
SQL; step times against the tool's own ``analysis.db``; the same job's text
sample (another capture of the same training step) where both record the
same quantity. The CANN msprof reader shares the reader, so the real torch_npu
database (which holds msprof's tables) is also read as a ``msprof_*.db``.
Then damaged databases: tables and columns dropped, cells of the wrong type,
truncated or foreign files give events or a ProfilerDataError naming the
file, never a traceback and never "0 events" as a success.
"""
from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from realdata import realdata, tree_digest

from npuprof.analysis.operators import op_statistic
from npuprof.analysis.rows import comm_op_mask, comm_task_mask
from npuprof.analysis.step_breakdown import step_trace
from npuprof.analysis.pipeline import find_runs, load_events
from npuprof.errors import ProfilerDataError
from npuprof.events import EventKind
from npuprof.integrations.pyacl.cann_import import parse_prof_dir
from npuprof.plugins.ascend_db_runs import run_database
from npuprof.readers.ascend_db import group_id, open_readonly, read_ascend_db

DB_LEVEL1 = "msinsight/test/data/pytorch/db/level1"
TEXT_LEVEL1 = "msinsight/test/data/pytorch/text/level1"
RANKS = (0, 1)
OUTPUT = "ASCEND_PROFILER_OUTPUT"
WRITER_ROUNDING_US = 0.0015      # analysis.db holds µs rounded to 3 decimals


def run_of(rank: int) -> Path:
    return realdata(f"{DB_LEVEL1}/rank{rank}_ascend_pt")


def db_of(rank: int) -> Path:
    return run_of(rank) / OUTPUT / f"ascend_pytorch_profiler_{rank}.db"


def sql(path: Path, query: str) -> list:
    con = open_readonly(path)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def args_of(table) -> list[dict]:
    return [json.loads(a) if a else {} for a in table.column_strings("args")]


@pytest.fixture(scope="module", params=RANKS, ids=lambda r: f"rank{r}")
def rank(request):
    return request.param


@pytest.fixture(scope="module")
def loaded(rank):
    """(events, info, warnings) of the real run, read through the plugin host as every verb does."""
    return load_events(run_of(rank))


# -- the run is found, read once, and left as it was -------------------------------------------------
def test_db_runs_are_found_and_not_written(tmp_path):
    root = realdata(DB_LEVEL1)
    before = tree_digest(root)
    assert sorted(p.name for p in find_runs(root)) == ["rank0_ascend_pt", "rank1_ascend_pt"]
    for r in RANKS:
        assert run_database(run_of(r)) == db_of(r)
        events, _, warnings = load_events(run_of(r))
        assert len(events) and warnings == []
        read_ascend_db(db_of(r))
    assert tree_digest(root) == before          # md5 and mtime of every file; no -journal/-wal beside the dbs


def test_run_with_both_db_and_text_is_read_once(tmp_path):
    """A run holding text outputs and a database (export_type=[text, db]) is read from the text only."""
    text_run = realdata(f"{TEXT_LEVEL1}/rank0_ascend_pt")
    both = tmp_path / "rank0_ascend_pt"
    (both / OUTPUT).mkdir(parents=True)
    for f in text_run.glob("*.json"):
        (both / f.name).symlink_to(f)
    for f in (text_run / OUTPUT).iterdir():
        (both / OUTPUT / f.name).symlink_to(f)
    (both / OUTPUT / db_of(0).name).symlink_to(db_of(0))
    assert run_database(both) is None
    text_events, _, _ = load_events(text_run)
    both_events, _, _ = load_events(both)
    assert len(both_events) == len(text_events)
    assert Counter(both_events["kind"].tolist()) == Counter(text_events["kind"].tolist())


# -- counts: each table's rows become exactly its events ----------------------------------------------
def test_every_table_row_is_one_event(rank, loaded):
    events, info, warnings = loaded
    db = db_of(rank)
    n = lambda q: sql(db, q)[0][0]  # noqa: E731
    kind = events["kind"]
    on_device = events["device"] >= 0
    kernels = n("SELECT count(*) FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId")
    comm_tasks = n("SELECT count(*) FROM TASK t JOIN COMMUNICATION_TASK_INFO c ON c.globalTaskId = t.globalTaskId")
    assert int((kind == EventKind.KERNEL).sum()) == kernels > 0
    assert int(comm_task_mask(events).sum()) == comm_tasks > 0
    device_tasks = events.select((kind == EventKind.RANGE) & on_device)
    assert set(device_tasks.column_strings("type")) == {"device_task"}
    assert kernels + comm_tasks + len(device_tasks) == n("SELECT count(*) FROM TASK")
    assert int(comm_op_mask(events).sum()) == n("SELECT count(*) FROM COMMUNICATION_OP") > 0
    assert int((kind == EventKind.API).sum()) == n("SELECT count(*) FROM CANN_API")
    ops = n("SELECT count(*) FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name JOIN ENUM_API_TYPE e "
            "ON e.id = p.type WHERE e.name = 'op' AND s.value NOT LIKE 'ProfilerStep#%'")
    assert int((kind == EventKind.OP).sum()) == ops
    assert int((kind == EventKind.STACK).sum()) == n(
        "SELECT count(*) FROM PYTORCH_API p JOIN ENUM_API_TYPE e ON e.id = p.type WHERE e.name = 'trace'")
    series = n("SELECT count(totalAllocated) + count(totalReserved) + count(totalActive) FROM MEMORY_RECORD")
    series += n("SELECT count(ddr) + count(hbm) FROM NPU_MEM") + n("SELECT count(totalReserved) FROM NPU_MODULE_MEM")
    assert int((kind == EventKind.COUNTER).sum()) == series
    steps = events.of_kind(EventKind.STEP)
    table = sql(db, "SELECT id, startNs, endNs FROM STEP_TIME ORDER BY startNs")
    assert [(int(s), int(t), int(t + d)) for s, t, d in zip(steps["step"], steps["ts"], steps["dur"])] == table
    assert steps.column_strings("name") == [f"ProfilerStep#{s}" for s, _, _ in table]
    assert warnings == []


def test_communication_ops_carry_the_real_groups(rank, loaded):
    events = loaded[0]
    ops = events.select(comm_op_mask(events))
    rows = sql(db_of(rank), "SELECT n.value, g.value, t.value, o.startNs, o.endNs FROM COMMUNICATION_OP o "
                            "JOIN STRING_IDS n ON n.id = o.opName JOIN STRING_IDS g ON g.id = o.groupName "
                            "JOIN STRING_IDS t ON t.id = o.opType ORDER BY o.startNs")
    args = args_of(ops)
    assert [(n, a["group_name"], t, int(ts), int(ts + d)) for n, a, t, ts, d in
            zip(ops.column_strings("name"), args, ops.column_strings("type"), ops["ts"], ops["dur"])] == rows
    # the tool names the group by its id in its own summaries (analysis.db)
    tool_groups = {g for (g,) in sql(db_of(rank).parent / "analysis.db",
                                     "SELECT DISTINCT group_name FROM CommAnalyzerTime")}
    assert {a["group"] for a in args} == tool_groups == {group_id(g) for _, g, _, _, _ in rows}
    tasks = events.select(comm_task_mask(events))
    assert {a["group"] for a in args_of(tasks)} == tool_groups
    assert set(tasks.column_strings("type")) == {t for _, _, t, _, _ in rows}
    links = [a for a in args_of(tasks) if "transport" in a]     # a transfer between two ranks
    expected = sql(db_of(rank), "SELECT count(*) FROM COMMUNICATION_TASK_INFO "
                                "WHERE srcRank < 4294967295 AND dstRank < 4294967295")[0][0]
    assert len(links) == expected > 0 and all(a["size"] >= 0 and a["transport"] for a in links)
    recorded = [a for a in args_of(tasks) if "src_rank" in a]   # the peers as the tool recorded them
    assert len(recorded) == sql(db_of(rank), "SELECT count(*) FROM COMMUNICATION_TASK_INFO "
                                             "WHERE srcRank IS NOT NULL AND dstRank IS NOT NULL")[0][0]


def test_device_and_rank_are_the_data_s(rank, loaded):
    events, info, _ = loaded
    (mapped_rank, mapped_device), = sql(db_of(rank), "SELECT rankId, deviceId FROM RANK_DEVICE_MAP")
    assert mapped_rank == rank == info.rank and mapped_device == rank        # rank 1 ran on NPU 1
    read = read_ascend_db(db_of(rank))
    assert read.facts.rank == rank and read.facts.devices == (mapped_device,)
    device_kinds = np.isin(events["kind"], [EventKind.KERNEL, EventKind.COMM])
    assert set(events["device"][device_kinds].tolist()) == {mapped_device}
    assert set(events["device"][np.isin(events["kind"], [EventKind.OP, EventKind.API])].tolist()) == {-1}


def test_times_are_epoch_ns_inside_the_session(rank, loaded):
    events = loaded[0]
    (start, end), = sql(db_of(rank), "SELECT startTimeNs, endTimeNs FROM SESSION_TIME_INFO")
    info = json.loads((run_of(rank) / f"profiler_info_{rank}.json").read_text())
    assert 1_600_000_000 * 10**9 < start < end <= info["end_info"]["collectionTimeEnd"]
    timed = events.select(events["kind"] != EventKind.COUNTER)
    assert start <= int(timed["ts"].min()) and int((timed["ts"] + timed["dur"]).max()) <= end


def test_launch_links_are_the_connection_ids(rank, loaded):
    events = loaded[0]
    api = events.of_kind(EventKind.API)
    device = events.select(np.isin(events["kind"], [EventKind.KERNEL, EventKind.COMM]) & (events["device"] >= 0)
                           & (events["corr"] >= 0))
    launched = sql(db_of(rank), "SELECT count(*) FROM TASK t JOIN CANN_API a ON a.connectionId = t.connectionId "
                                "WHERE t.globalTaskId IN (SELECT globalTaskId FROM COMPUTE_TASK_INFO UNION "
                                "SELECT globalTaskId FROM COMMUNICATION_TASK_INFO)")[0][0]
    api_links = set(api["corr"][api["corr"] >= 0].tolist())
    assert int(np.isin(device["corr"], list(api_links)).sum()) >= launched > 0
    assert len(api_links) == int((api["corr"] >= 0).sum())          # one API per link
    for corr, start in zip(device["corr"][:50].tolist(), device["ts"][:50].tolist()):
        caller = api.select(api["corr"] == corr)
        if len(caller):
            assert int(caller["ts"][0]) <= start                     # launched before it ran


# -- totals: the db's own numbers --------------------------------------------------------------------
def test_kernel_totals_per_op_type_equal_the_tables(rank, loaded):
    events = loaded[0]
    rows = sql(db_of(rank), "SELECT o.value, c.value, count(*), sum(t.endNs - t.startNs), min(t.endNs - t.startNs),"
                            " max(t.endNs - t.startNs) FROM TASK t JOIN COMPUTE_TASK_INFO i "
                            "ON i.globalTaskId = t.globalTaskId JOIN STRING_IDS o ON o.id = i.opType "
                            "JOIN STRING_IDS c ON c.id = i.taskType GROUP BY 1, 2")
    expected = {(o, c): (n, total, lo, hi) for o, c, n, total, lo, hi in rows}
    k = events.of_kind(EventKind.KERNEL)
    ours: dict = {}
    for typ, a, d in zip(k.column_strings("type"), args_of(k), k["dur"].tolist()):
        n, total, lo, hi = ours.get((typ, a["Accelerator Core"]), (0, 0, d, d))
        ours[(typ, a["Accelerator Core"])] = (n + 1, total + d, min(lo, d), max(hi, d))
    assert ours == expected
    stats = op_statistic(events)
    got = {(r["OP Type"], r["Core Type"]): (r["Count"], r["Total Time(us)"]) for r in stats.records()}
    assert {key: n for key, (n, _) in got.items()} == {key: v[0] for key, v in expected.items()}
    for key, (_, total_ns, _, _) in expected.items():
        assert got[key][1] == pytest.approx(total_ns / 1000.0, abs=WRITER_ROUNDING_US)


def test_step_trace_equals_analysis_db(rank, loaded):
    events = loaded[0]
    tool = sql(db_of(rank).parent / "analysis.db",
               "SELECT step, computing, communication_not_overlapped, overlapped, communication, free, stage, "
               "bubble, communication_not_overlapped_and_exclude_receive, preparing FROM StepTraceTime")
    ours = step_trace(events).rows()
    assert len(ours) == len(tool) == 1
    assert int(ours[0][0]) == int(tool[0][0]) == 50
    for column, a, b in zip(("Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                             "Stage", "Bubble", "Not Overlapped and Exclude Receive", "Preparing"),
                            ours[0][1:], tool[0][1:]):
        assert float(a) == pytest.approx(float(b), abs=WRITER_ROUNDING_US), column


def test_same_job_text_sample_agrees():
    """The text sample is another capture of the same job and step: per OP type and core, the same kernels
    (count, Block Dim, Input Shapes by name), and the same communication operators."""
    text_out = realdata(f"{TEXT_LEVEL1}/rank0_ascend_pt") / OUTPUT
    events = read_ascend_db(db_of(0)).events
    k = events.of_kind(EventKind.KERNEL)
    kargs = args_of(k)
    with open(text_out / "op_statistic.csv", encoding="utf-8-sig", newline="") as fh:
        tool = {(r["OP Type"], r["Core Type"]): int(r["Count"]) for r in csv.DictReader(fh)}
    assert Counter((t, a["Accelerator Core"]) for t, a in zip(k.column_strings("type"), kargs)) == tool
    with open(text_out / "kernel_details.csv", encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    compute = [r for r in rows if r["Accelerator Core"] != "HCCL"]
    for column in ("Block Dim", "Input Shapes", "Output Formats"):
        assert Counter((n, a[column]) for n, a in zip(k.column_strings("name"), kargs)) == \
            Counter((r["Name"], r[column]) for r in compute), column
    ops = events.select(comm_op_mask(events))
    hccl = [r for r in rows if r["Accelerator Core"] == "HCCL"]
    assert Counter(ops.column_strings("type")) == Counter(r["Type"] for r in hccl)
    groups = json.loads((text_out / "communication.json").read_text())
    text_groups = {key.rpartition("@")[2] for step in groups.values() for key in step.get("collective", {})
                   if "@" in key}
    assert len(text_groups) == len({a["group"] for a in args_of(ops)}) == 1


# -- CANN msprof databases: the same reader --------------------------------------------------------------
def test_msprof_db_reads_communication_without_a_device_column(tmp_path):
    """The torch_npu db holds msprof's tables; as a PROF_ dir's msprof_*.db (schema without
    COMMUNICATION_OP.deviceId) its operators take their tasks' device and nothing is dropped."""
    prof = tmp_path / "PROF_000001_20250109080000000_ABCDEFGHIJKLMNOP"
    prof.mkdir()
    (prof / "msprof_20250109080000.db").symlink_to(db_of(1))
    warnings: list = []
    table = parse_prof_dir(prof, warnings.append, run_msprof=False)
    assert "deviceId" not in {c for (_, c, *_) in sql(db_of(1), "PRAGMA table_info(COMMUNICATION_OP)")}
    ops = table.select(comm_op_mask(table))
    assert len(ops) == 4 and set(ops["device"].tolist()) == {1}
    assert int((table["kind"] == EventKind.KERNEL).sum()) == 187 and warnings == []
    assert set(table.column_strings("source")) == {"cann"}


# -- damaged databases ---------------------------------------------------------------------------------
def copy_db(src: Path, dst: Path) -> Path:
    """A writable copy of a real database in the test's tmp dir (sqlite backup; never in the project)."""
    con = open_readonly(src)
    out = sqlite3.connect(dst)
    con.backup(out)
    out.close()
    con.close()
    return dst


@pytest.mark.parametrize("content", [b"", b"SQLite format 2\x00", b"not a database at all" * 100,
                                     b"SQLite format 3\x00" + b"\x00" * 200])
def test_foreign_file_is_refused_naming_it(tmp_path, content):
    path = tmp_path / "ascend_pytorch_profiler_0.db"
    path.write_bytes(content)
    with pytest.raises(ProfilerDataError) as e:
        read_ascend_db(path)
    assert e.value.path == str(path)


@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.95])
def test_truncated_db_is_refused_naming_it(tmp_path, fraction):
    data = db_of(0).read_bytes()
    path = tmp_path / "ascend_pytorch_profiler_0.db"
    path.write_bytes(data[:int(len(data) * fraction)])
    with pytest.raises(ProfilerDataError) as e:
        read_ascend_db(path)
    assert e.value.path == str(path)


def test_db_without_events_is_never_a_success(tmp_path):
    path = copy_db(db_of(0), tmp_path / "msprof_20250109080000.db")
    con = sqlite3.connect(path)
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
        if not name.startswith(("STRING_IDS", "ENUM_", "META_DATA", "sqlite_")):
            con.execute(f'DELETE FROM "{name}"')
    con.commit()
    con.close()
    with pytest.raises(ProfilerDataError) as e:
        read_ascend_db(path)
    assert e.value.path == str(path) and "no event" in e.value.problem


def test_corrupt_db_in_a_run_fails_the_run_naming_the_file(tmp_path):
    run = tmp_path / "rank0_ascend_pt"
    (run / OUTPUT).mkdir(parents=True)
    (run / "profiler_info_0.json").symlink_to(run_of(0) / "profiler_info_0.json")
    bad = run / OUTPUT / "ascend_pytorch_profiler_0.db"
    bad.write_bytes(db_of(0).read_bytes()[:50_000])
    with pytest.raises(ProfilerDataError) as e:
        load_events(run)
    assert str(bad) in str(e.value)


def test_cells_of_the_wrong_type_skip_their_rows_only(tmp_path):
    path = copy_db(db_of(0), tmp_path / "ascend_pytorch_profiler_0.db")
    con = sqlite3.connect(path)
    con.execute("UPDATE TASK SET startNs = 'soon' WHERE rowid % 10 = 0")
    con.execute("UPDATE TASK SET deviceId = 70000 WHERE rowid % 10 = 1")
    con.execute("UPDATE CANN_API SET endNs = NULL WHERE rowid % 7 = 0")
    con.execute("UPDATE COMPUTE_TASK_INFO SET blockDim = X'00ff'")
    con.commit()
    bad_tasks = con.execute("SELECT count(*) FROM TASK WHERE rowid % 10 IN (0, 1)").fetchone()[0]
    bad_apis = con.execute("SELECT count(*) FROM CANN_API WHERE rowid % 7 = 0").fetchone()[0]
    con.close()
    warnings: list = []
    events = read_ascend_db(path, warnings.append).events
    device_side = np.isin(events["kind"], [EventKind.KERNEL, EventKind.COMM]) | \
        ((events["kind"] == EventKind.RANGE) & (events["device"] >= 0))
    assert int(device_side.sum()) - 4 == 552 - bad_tasks          # 4: the communication operators
    assert int((events["kind"] == EventKind.API).sum()) == 710 - bad_apis
    assert any("TASK" in w and str(path) in w for w in warnings)
    assert any("CANN_API" in w and str(path) in w for w in warnings)
    assert all(str(path) in w for w in warnings)


EVENT_TABLES = ("TASK", "COMPUTE_TASK_INFO", "COMMUNICATION_TASK_INFO", "COMMUNICATION_OP", "CANN_API",
                "PYTORCH_API", "STEP_TIME", "MEMORY_RECORD", "STRING_IDS", "CONNECTION_IDS", "ENUM_API_TYPE",
                "ENUM_HCCL_TRANSPORT_TYPE", "ENUM_HCCL_LINK_TYPE", "RANK_DEVICE_MAP", "META_DATA", "NPU_INFO",
                "SESSION_TIME_INFO")
COLUMNS = [("TASK", c) for c in ("startNs", "deviceId", "connectionId", "globalTaskId", "streamId", "taskType",
                                  "taskId", "modelId", "globalPid", "contextId")] + \
    [("COMPUTE_TASK_INFO", c) for c in ("name", "opType", "taskType", "blockDim", "waitNs", "inputShapes")] + \
    [("COMMUNICATION_OP", c) for c in ("opName", "groupName", "opType", "opId", "connectionId", "algType")] + \
    [("COMMUNICATION_TASK_INFO", c) for c in ("opId", "srcRank", "groupName", "transportType", "size")] + \
    [("CANN_API", c) for c in ("type", "globalTid", "connectionId", "name")] + \
    [("PYTORCH_API", c) for c in ("type", "connectionId", "endNs")] + [("STEP_TIME", "id")]
BAD_VALUES = (None, "abc", b"\x00\x01", 1e300, -5, 1 << 62, "")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A copy without indexes (so that any column can be dropped)."""
    path = copy_db(db_of(0), tmp_path_factory.mktemp("pristine") / "ascend_pytorch_profiler_0.db")
    con = sqlite3.connect(path)
    for (index,) in con.execute("SELECT name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL").fetchall():
        con.execute(f'DROP INDEX "{index}"')
    con.commit()
    con.close()
    return path


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(drop_tables=st.sets(st.sampled_from(EVENT_TABLES), max_size=6),
       drop_columns=st.sets(st.sampled_from(COLUMNS), max_size=6),
       bad_cells=st.lists(st.tuples(st.sampled_from(COLUMNS), st.sampled_from(BAD_VALUES),
                                    st.integers(min_value=1, max_value=5)), max_size=4))
def test_damaged_schema_gives_events_or_an_error_naming_the_file(tmp_path_factory, pristine, drop_tables,
                                                                 drop_columns, bad_cells):
    path = tmp_path_factory.mktemp("damaged") / "ascend_pytorch_profiler_0.db"
    shutil.copyfile(pristine, path)
    con = sqlite3.connect(path)
    touched = set()      # tables changed (a change sqlite refuses, e.g. on a primary key, is not made)
    changes = [(t, f'UPDATE "{t}" SET "{c}" = ? WHERE rowid % ? = 0', (v, k)) for (t, c), v, k in bad_cells]
    changes += [(t, f'ALTER TABLE "{t}" DROP COLUMN "{c}"', ()) for t, c in drop_columns]
    changes += [(t, f'DROP TABLE "{t}"', ()) for t in drop_tables]
    for table, statement, params in changes:
        try:
            con.execute(statement, params)
        except sqlite3.Error:
            continue
        touched.add(table)
    con.commit()
    con.close()
    warnings: list = []
    try:
        read = read_ascend_db(path, warnings.append)
    except ProfilerDataError as e:
        assert e.path == str(path)
        return
    events = read.events
    assert len(events) > 0 and all(str(path) in w for w in warnings)
    assert ((events["dur"] >= 0) & (events["device"] >= -1)).all()
    if {"TASK", "COMPUTE_TASK_INFO", "STRING_IDS"}.isdisjoint(touched):
        assert int((events["kind"] == EventKind.KERNEL).sum()) == 187


def test_newer_and_older_schema_variants(tmp_path):
    """Schema 1.2's COMMUNICATION_OP.deviceId wins over the tasks' device; MSTX_EVENTS rows are marks and ranges;
    without ENUM_API_TYPE the documented levels are used; without STEP_TIME the framework's ProfilerStep rows
    are the steps."""
    path = copy_db(db_of(0), tmp_path / "ascend_pytorch_profiler_0.db")
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE COMMUNICATION_OP ADD COLUMN deviceId INTEGER")
    con.execute("UPDATE COMMUNICATION_OP SET deviceId = 5")
    con.execute("CREATE TABLE MSTX_EVENTS (startNs INTEGER, endNs INTEGER, eventType INTEGER, rangeId INTEGER, "
                "category INTEGER, message INTEGER, globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER, "
                "connectionId INTEGER)")
    (msg,), = con.execute("SELECT max(id) + 1 FROM STRING_IDS").fetchall()
    con.execute("INSERT INTO STRING_IDS VALUES (?, 'forward')", (msg,))
    t0 = con.execute("SELECT startNs FROM STEP_TIME").fetchone()[0]
    con.executemany("INSERT INTO MSTX_EVENTS VALUES (?, ?, ?, 4294967295, 4294967295, ?, ?, ?, ?, 4294967295)",
                    [(t0 + 10, t0 + 10, 0, msg, 7 << 32 | 8, 7 << 32 | 8, msg),
                     (t0 + 20, t0 + 900, 2, msg, 7 << 32 | 8, 7 << 32 | 8, msg)])
    con.execute("DROP TABLE ENUM_API_TYPE")
    con.execute("DROP TABLE STEP_TIME")
    con.commit()
    con.close()
    events = read_ascend_db(path).events
    ops = events.select(comm_op_mask(events))
    assert set(ops["device"].tolist()) == {5}
    mstx = events.select(np.array(events.column_strings("type")) == "mstx")
    assert sorted(zip(mstx["kind"].tolist(), mstx["dur"].tolist())) == [(EventKind.RANGE, 880), (EventKind.MARK, 0)]
    assert set(mstx["pid"].tolist()) == {7} and set(mstx["tid"].tolist()) == {8}
    assert set(events.of_kind(EventKind.API).column_strings("type")) == {"acl", "node", "hccl"}
    steps = events.of_kind(EventKind.STEP)
    assert steps.column_strings("name") == ["ProfilerStep#50"] and steps["step"].tolist() == [50]
