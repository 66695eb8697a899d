"""Exported files: Kineto trace keys, CSV headers, sqlite, CLI export/show."""
import csv
import json
import re
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from npuprof import Profiler, analyse, record_function, schedule
from npuprof.events import EventKind, EventTable
from npuprof.analysis.operators import op_statistic
from npuprof.analysis.step_breakdown import assign_steps, step_trace

CSV_HEADERS = {
    "step_trace_time.csv": ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication",
                            "Free", "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)",
                            "Preparing"],
    "op_statistic.csv": ["Device_id", "OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)",
                         "Avg Time(us)", "Max Time(us)", "Ratio(%)"],
    "api_statistic.csv": ["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)",
                          "Variance"],
}


@pytest.fixture
def run(tmp_path):
    with Profiler(output_path=tmp_path, schedule=schedule(wait=0, active=3, repeat=1),
                  export_type=["text", "db"], rank=2, world_size=4) as prof:
        for _ in range(3):
            with record_function("train"):
                sum(range(10000))
            prof.step()
    (res,) = prof.analyse()
    return res


def test_trace_view_has_kineto_keys(run):
    path = run.run_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    doc = json.loads(path.read_text())
    for key in ("schemaVersion", "distributedInfo", "baseTimeNanoseconds", "traceEvents", "displayTimeUnit"):
        assert key in doc
    assert doc["distributedInfo"]["rank"] == 2
    # HTA finds the rank line by line with this regex: it needs a space after the colon
    assert re.search(r'"rank":\s+(\d+)', path.read_text()).group(1) == "2"
    steps = [e for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert [e["name"] for e in steps] == ["ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"]
    for e in steps:
        assert e["ph"] == "X" and e["cat"] == "user_annotation"
        assert isinstance(e["ts"], float) and isinstance(e["dur"], float) and e["dur"] > 0
    assert doc["traceEvents"][-1]["name"] == "Record Window End"
    # the train ranges sit inside their steps
    trains = [e for e in doc["traceEvents"] if e.get("name") == "train"]
    assert len(trains) == 3
    for tr, st in zip(sorted(trains, key=lambda e: e["ts"]), sorted(steps, key=lambda e: e["ts"])):
        assert st["ts"] <= tr["ts"] and tr["ts"] + tr["dur"] <= st["ts"] + st["dur"] + 0.001


@pytest.mark.parametrize("name", sorted(CSV_HEADERS))
def test_csv_headers_as_reference(run, name):
    with open(run.run_dir / "ASCEND_PROFILER_OUTPUT" / name, newline="") as fh:
        header = next(csv.reader(fh))
    assert header == CSV_HEADERS[name]


def test_step_trace_rows_equal_recorded_steps(run):
    with open(run.run_dir / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["Step"]) for r in rows] == [0, 1, 2]
    assert all(float(r["Free"]) > 0 for r in rows)


def test_ascend_db_export(run):
    """export_type db writes the Ascend profiler database (torch_npu's schema) and its analysis database."""
    out = run.run_dir / "ASCEND_PROFILER_OUTPUT"
    assert not list(out.glob("*.tmp.*"))
    con = sqlite3.connect(out / "ascend_mindspore_profiler_2.db")
    meta = dict(con.execute("SELECT name, value FROM META_DATA"))
    assert meta["SCHEMA_VERSION"] == "1.0.0"
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "TASK" not in tables and "EVENTS" not in tables      # a host-only run: no device task invented
    assert ("PYTORCH_API" in tables) == bool((run.events["kind"] == EventKind.OP).any())   # no empty tables
    ranges = {r[0] for r in con.execute("SELECT s.value FROM MSTX_EVENTS m JOIN STRING_IDS s ON s.id = m.message "
                                        "WHERE m.eventType = 2")}
    assert "train" in ranges
    steps = con.execute("SELECT id FROM STEP_TIME ORDER BY startNs").fetchall()
    assert [s for (s,) in steps] == [0, 1, 2]
    assert con.execute("SELECT rankId FROM RANK_DEVICE_MAP").fetchall() == [(2,)]
    ana = sqlite3.connect(out / "communication_analyzer.db")
    with open(out / "step_trace_time.csv", newline="") as fh:
        csv_rows = [(r["Step"], float(r["Computing"]), float(r["Free"])) for r in csv.DictReader(fh)]
    assert ana.execute("SELECT step, computing, free FROM StepTraceTime").fetchall() == csv_rows


def test_step_trace_breakdown_from_events():
    # step 0: [0, 1000); ops [100,300) and [200,400) overlap -> computing 300; comm [350, 600) -> overlap 50
    ev = EventTable.from_records(
        ts=[0, 100, 200, 350], dur=[1000, 200, 200, 250],
        kind=[EventKind.STEP, EventKind.OP, EventKind.OP, EventKind.COMM],
        name=["ProfilerStep#0", "a", "b", "allreduce"], type=["ProfilerStep", "MatMul", "Add", "AllReduce"])
    row = step_trace(assign_steps(ev)).records()[0]
    assert row["Computing"] == 0.3 and row["Communication"] == 0.25 and row["Overlapped"] == 0.05
    assert row["Communication(Not Overlapped)"] == 0.2 and row["Free"] == pytest.approx(0.5)
    assert row["Preparing"] == 0.1


def test_op_statistic_from_events():
    ev = EventTable.from_records(ts=np.arange(5) * 10, dur=[1000, 3000, 2000, 4000, 500], kind=EventKind.OP,
                                 name=list("abcde"), type=["MatMul", "MatMul", "Add", "Add", "Relu"])
    rows = {r["OP Type"]: r for r in op_statistic(ev).records()}
    assert rows["MatMul"]["Count"] == 2 and rows["MatMul"]["Total Time(us)"] == 4.0
    assert rows["Add"]["Max Time(us)"] == 4.0 and rows["Relu"]["Min Time(us)"] == 0.5
    assert sum(r["Ratio(%)"] for r in rows.values()) == pytest.approx(100, abs=0.01)


def test_cli_export_and_show(run):
    d = str(run.run_dir)
    out = subprocess.run([sys.executable, "-m", "npuprof", "export", "summary", "--format", "json", "-dir", d],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = json.loads((run.run_dir / "summary" / "range_statistic.json").read_text())
    assert rows[0]["Name"] == "train" and rows[0]["Count"] == 3
    out = subprocess.run([sys.executable, "-m", "npuprof", "export", "timeline", "-dir", d],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and json.loads((run.run_dir / "timeline" / "msprof_timeline.json").read_text())
    out = subprocess.run([sys.executable, "-m", "npuprof", "show", "-dir", d], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "range_statistic" in out.stdout and "train" in out.stdout


def test_offline_analyse_parent_directory(run):
    results = analyse(run.run_dir.parent)
    assert [r.run_dir for r in results] == [run.run_dir]


def test_a_failing_exporter_fails_the_command_and_leaves_no_partial_copy(run, tmp_path, capsys):
    """An exporter that raises is named; ``npuprof analyse`` exits 1 instead of reporting
    success without its files, and ``export ascend`` keeps no copy missing them."""
    from npuprof import hookimpl
    from npuprof.cli import main
    from npuprof.plugins.manager import get_plugin_host

    class BrokenDb:
        @hookimpl
        def npuprof_export(self, result, target):
            raise OverflowError("Python int too large to convert to SQLite INTEGER")

    host = get_plugin_host()
    host.register(BrokenDb(), name="brokendb")
    try:
        assert main(["analyse", str(run.run_dir), "--quiet"]) == 1
        err = capsys.readouterr().err
        assert "exporter 'brokendb' failed: OverflowError" in err and str(run.run_dir) in err
        assert (run.run_dir / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv").is_file()   # the others still wrote
        out = tmp_path / "copies"
        assert main(["export", "ascend", "-dir", str(run.run_dir), "-o", str(out)]) == 1
        assert "brokendb" in capsys.readouterr().err
        assert not out.exists() or not any(out.rglob("*"))
    finally:
        host.unregister("brokendb")
