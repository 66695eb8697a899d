"""Import of CANN PROF_ output (CSV, JSON timeline, msprof DB) into the event table."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from acl_support import release_double, FAKE_MSPROF_DIR, fresh_process_state, write_model
from npuprof.events import EventKind
from npuprof.integrations.pyacl.cann_import import column_map, parse_prof_dir, us_to_ns
from npuprof.integrations.pyacl.profiler import AclProfiler

PROF = "PROF_000001_20220129014731273_KEDKPORHMAGPGDCC"


def write_csv(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def make_text_prof(root, variant):
    prof = root / PROF
    out = prof / "mindstudio_profiler_output"
    out.mkdir(parents=True)
    (prof / "host").mkdir()
    if variant == "new":
        header = ["Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State", "Task Type",
                  "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Num", "Mix Block Num",
                  "HF32 Eligible", "Input Shapes", "aicore_time(us)"]
        rows = [["0", "1", "3", "2", "MatMul-op1", "MatMul", "static", "AI_CORE", "1700000000000100.250\t", "12.5",
                 "0", "8", "0", "NO", '"2,2;2,2"', "10"],
                ["0", "1", "4", "2", "Add-op2", "Add", "static", "AI_VECTOR_CORE", "1700000000000200.000\t", "3.125",
                 "N/A", "2", "0", "NO", "N/A", "N/A"],
                ["0", "1", "5", "2", "Bad-op", "Add", "static", "AI_CORE", "N/A", "N/A", "0", "1", "0", "NO", "", ""]]
    else:  # older CANN: Block Dim, different spelling and order, no Device_id column
        header = ["Model ID", "Op Name", "Op Type", "Task Type", "Task ID", "Stream ID", "Block Dim",
                  "Task Start Time", "Task Duration(us)"]
        rows = [["1", "MatMul-op1", "MatMul", "AI_CORE", "3", "2", "8", "1700000000000100.25", "12.5"],
                ["1", "Add-op2", "Add", "AI_VECTOR_CORE", "4", "2", "2", "1700000000000200", "3.125"]]
    write_csv(out / "op_summary_20220129014731.csv", header, rows)
    timeline = [
        {"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "CANN"}},
        {"ph": "X", "name": "AscendCL@aclmdlExecute", "pid": 100, "tid": 7, "ts": "1700000000000090.000",
         "dur": 150.5, "args": {}},
        {"ph": "X", "name": "Runtime@rtKernelLaunch", "pid": 100, "tid": 7, "ts": "1700000000000095.500",
         "dur": 2, "args": {}},
        {"ph": "M", "name": "process_name", "pid": 101, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "X", "name": "MatMul-op1", "pid": 101, "tid": 2, "ts": "1700000000000100.250", "dur": 12.5},
    ]
    (out / "msprof_20220129014731.json").write_text(json.dumps(timeline))
    write_csv(out / "msprof_tx_20220129014731.csv",
              ["Device_id", "pid", "tid", "category", "event_type", "payload_type", "payload_value",
               "Start_time(us)", "End_time(us)", "message_type", "message", "domain"],
              [["host", "1", "7", "0", "marker", "0", "0", "1700000000000050.000\t", "1700000000000050.000\t", "0",
                "epoch", "default"],
               ["host", "1", "7", "0", "push_pop", "0", "0", "1700000000000060.000\t", "1700000000000360.000\t", "0",
                "step 1", "default"]])
    return prof


def test_timestamps_and_headers_are_tolerant():
    assert us_to_ns("1700000000000100.250\t") == 1700000000000100250
    assert us_to_ns(" 12.5 ") == 12500 and us_to_ns("N/A") is None and us_to_ns(3.125) == 3125
    cols = column_map(["Device ID", "OP Type", "Op Name", "Block Dim", "Task Start Time(us)", "Task Duration(us)"])
    assert cols == {"device": 0, "type": 1, "name": 2, "block": 3, "start": 4, "dur": 5}


@pytest.mark.parametrize("variant", ["new", "old"])
def test_text_export_is_imported(tmp_path, variant):
    prof = make_text_prof(tmp_path, variant)
    warnings = []
    table = parse_prof_dir(prof, warnings.append, run_msprof=False)
    k = table.of_kind(EventKind.KERNEL).sorted()
    assert k.column_strings("name") == ["MatMul-op1", "Add-op2"]
    assert k.column_strings("type") == ["MatMul", "Add"]
    assert k["ts"].tolist() == [1700000000000100250, 1700000000000200000]
    assert k["dur"].tolist() == [12500, 3125]
    assert k["stream"].tolist() == [2, 2]
    assert json.loads(k.column_strings("args")[0])["block"] == "8"
    api = table.of_kind(EventKind.API).sorted()
    assert api.column_strings("name") == ["aclmdlExecute", "rtKernelLaunch"]
    assert api.column_strings("type") == ["AscendCL", "Runtime"]
    assert api["dur"].tolist() == [150500, 2000]
    assert table.of_kind(EventKind.MARK).column_strings("name") == ["epoch"]
    rng = table.of_kind(EventKind.RANGE)
    assert rng.column_strings("name") == ["step 1"] and rng["dur"].tolist() == [300000]
    assert (variant == "new") == any("skipped" in w for w in warnings)


def test_npuprof_analyse_on_a_prof_dir(tmp_path):
    prof = make_text_prof(tmp_path, "new")
    proc = subprocess.run([sys.executable, "-m", "npuprof", "analyse", str(prof), "-o", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, NPUPROF_NO_MSPROF="1"))
    # the "new" layout's damaged row ("Bad-op", no start time) is lost: the run is partial and says which file
    assert proc.returncode == 3, proc.stderr
    assert "data quality: partial" in proc.stderr and "op_summary_20220129014731.csv: 1 row(s)" in proc.stderr
    assert not (prof / "ASCEND_PROFILER_OUTPUT").exists()     # CANN's directory is read-only input
    out = tmp_path / "o" / prof.name / "ASCEND_PROFILER_OUTPUT"
    with open(out / "op_statistic.csv") as fh:
        rows = {r["OP Type"]: r for r in csv.DictReader(fh)}
    assert float(rows["MatMul"]["Total Time(us)"]) == pytest.approx(12.5)
    assert float(rows["Add"]["Total Time(us)"]) == pytest.approx(3.125)
    with open(out / "kernel_details.csv") as fh:   # op_summary's tensor columns reach kernel_details
        kernels = {r["Name"]: r for r in csv.DictReader(fh)}
    assert kernels["MatMul-op1"]["Input Shapes"].strip('"') == "2,2;2,2"
    assert kernels["Add-op2"]["Input Shapes"] == "N/A" and kernels["Add-op2"]["Output Formats"] == "N/A"


def test_a_prof_dir_inside_an_npuprof_run_is_read_when_named(tmp_path, capsys, monkeypatch):
    """#34.3: the PROF_ of an npuprof pyACL run (under cann_<worker>_<pid>/, read with that run when
    searching) is imported when named itself, as a copy of it is."""
    from npuprof.cli import main

    monkeypatch.setenv("NPUPROF_NO_MSPROF", "1")
    root = tmp_path / "npuprof_data" / "cann_host_123"
    prof = make_text_prof(root, "new")
    (root / ".npuprof_cann_root").touch()
    code = main(["import", "-dir", str(prof), "-o", str(tmp_path / "o")])
    assert code in (0, 3)            # 3: the sample's row without a start time is skipped (partial)
    out = capsys.readouterr().out
    assert f"{prof}: imported " in out and " 0 events" not in out
    copy = tmp_path / "copy" / PROF
    shutil.copytree(prof, copy)
    assert main(["import", "-dir", str(copy), "-o", str(tmp_path / "o2")]) == code
    assert capsys.readouterr().out.split(" imported ")[1].split()[0] == out.split(" imported ")[1].split()[0]
    # searched from above, it is left to the npuprof run that lists it: not a run of its own
    assert main(["import", "-dir", str(tmp_path / "npuprof_data"), "-o", str(tmp_path / "o3")]) == 1
    assert "holds no profiling run" in capsys.readouterr().err


@pytest.fixture
def collected(tmp_path, monkeypatch):
    """A real (double) collection: raw data only, as CANN writes it before msprof exports."""
    monkeypatch.delenv("PROFILING_MODE", raising=False)
    acl = fresh_process_state()
    acl.init()
    acl.rt.set_device(0)
    model = write_model(tmp_path / "m.json", [("conv1", "Conv2D", 100), ("relu1", "Relu", 25)])
    with AclProfiler(tmp_path / "out", profiler_level="Level1") as prof:
        h = prof.start(devices=[0])
        mid, _ = acl.mdl.load_from_file(str(model))
        for _ in range(4):
            acl.mdl.execute(mid, 0, 0)
        prof.stop(h)
    acl.finalize()
    release_double()
    return prof.prof_dirs[0]


def test_raw_only_without_msprof_says_so(collected, monkeypatch):
    monkeypatch.setenv("NPUPROF_NO_MSPROF", "1")
    warnings = []
    table = parse_prof_dir(collected, warnings.append)
    assert len(table) == 0
    assert any("no msprof executable" in w for w in warnings)


def test_msprof_is_called_to_export_first(collected, monkeypatch):
    monkeypatch.delenv("NPUPROF_NO_MSPROF", raising=False)
    monkeypatch.setenv("PATH", f"{FAKE_MSPROF_DIR}{os.pathsep}{os.environ['PATH']}")
    warnings = []
    table = parse_prof_dir(collected, warnings.append)
    assert (collected / "mindstudio_profiler_output").is_dir()
    k = table.of_kind(EventKind.KERNEL)
    assert sorted(set(k.column_strings("name"))) == ["conv1", "relu1"]
    assert len(k) == 8 and sorted(set(k["dur"].tolist())) == [25000, 100000]
    api = table.of_kind(EventKind.API)
    assert api.column_strings("name") == ["aclmdlExecute"] * 4 and warnings == []


def test_msprof_db_is_imported(collected):
    subprocess.run([str(FAKE_MSPROF_DIR / "msprof"), "--export=on", f"--output={collected}", "--type=db"],
                   check=True, capture_output=True)
    table = parse_prof_dir(collected, print, run_msprof=False)
    k = table.of_kind(EventKind.KERNEL)
    assert len(k) == 8 and sorted(set(k.column_strings("type"))) == ["Conv2D", "Relu"]
    assert sorted(set(k["dur"].tolist())) == [25000, 100000]
    assert (k["device"] == 0).all()
    assert table.of_kind(EventKind.API).column_strings("type") == ["acl"] * 4
    assert np.all(k["ts"] > 1_000_000_000 * 10**9)  # epoch ns


# -- launch links (connectionId / HostToDevice) ---------------------------------------------------------
def launches_of(table):
    """{corr: (API names, [kernel names])} of a parsed table."""
    out = {}
    for kind, is_api in ((EventKind.API, True), (EventKind.KERNEL, False)):
        part = table.of_kind(kind)
        for corr, name in zip(part["corr"].tolist(), part.column_strings("name")):
            if corr >= 0:
                out.setdefault(corr, ([], []))[0 if is_api else 1].append(name)
    return out


def assert_each_execute_links_its_tasks(table, executes=4):
    links = launches_of(table)
    assert len(links) == executes
    for apis, kernels in links.values():   # each aclmdlExecute call ran conv1 then relu1
        assert apis == ["aclmdlExecute"] and sorted(kernels) == ["conv1", "relu1"]
    k = table.of_kind(EventKind.KERNEL)
    api = table.of_kind(EventKind.API)
    for corr in links:   # the tasks of a call run while it runs
        call = api.select(api["corr"] == corr)
        tasks = k.select(k["corr"] == corr)
        assert call["ts"][0] <= tasks["ts"].min() and tasks["ts"].max() <= call["ts"][0] + call["dur"][0]


@pytest.mark.parametrize("export_type", ["db", "text"])
def test_connection_ids_link_calls_to_their_tasks(collected, export_type):
    """msprof's connectionId (db) / HostToDevice flows (timeline, moved onto op_summary's kernels by task identity)."""
    subprocess.run([str(FAKE_MSPROF_DIR / "msprof"), "--export=on", f"--output={collected}",
                    f"--type={export_type}"], check=True, capture_output=True)
    table = parse_prof_dir(collected, print, run_msprof=False)
    assert_each_execute_links_its_tasks(table)


def test_timeline_kernels_linked_by_flows_and_by_connection_id_args(collected):
    subprocess.run([str(FAKE_MSPROF_DIR / "msprof"), "--export=on", f"--output={collected}"], check=True,
                   capture_output=True)
    out = collected / "mindstudio_profiler_output"
    for p in out.glob("op_summary_*.csv"):
        p.unlink()    # kernels from the timeline's Ascend Hardware process
    timeline = next(out.glob("msprof_*.json"))
    table = parse_prof_dir(collected, print, run_msprof=False)
    assert_each_execute_links_its_tasks(table)
    # the flows' ids win over the args; without flows, the connection_id args on both ends link
    events = json.loads(timeline.read_text())
    flows = [e for e in events if e.get("ph") in ("s", "f")]
    assert flows and len(flows) == 2 * 8
    kept = []
    for e in events:
        if e.get("ph") in ("s", "f"):
            continue
        if e.get("ph") == "X" and "@" in e["name"]:
            e = dict(e, args={"connection_id": next(f["id"] for f in flows if f["ph"] == "s" and f["ts"] == e["ts"])})
        kept.append(e)
    timeline.write_text(json.dumps(kept))
    assert launches_of(parse_prof_dir(collected, print, run_msprof=False)) == launches_of(table)
    # and without either, nothing is linked (never by time)
    for e in kept:
        if isinstance(e.get("args"), dict):
            e["args"].pop("connection_id", None)
    timeline.write_text(json.dumps(kept))
    assert launches_of(parse_prof_dir(collected, print, run_msprof=False)) == {}


def test_calls_and_tasks_never_overlap_so_flows_link_each_call(tmp_path, monkeypatch):
    """aclmdlExecute is synchronous and a device runs one task at a time. The stand-in once returned
    at once while its tasks ran on: a call made before the previous one's tasks had ended got tasks
    overlapping them, and two tasks sharing a start shared a flow end, so two calls became one link
    (3 links instead of 4 on a loaded machine). With tasks far longer than the host's gap between
    calls, that overlap happened on every run."""
    monkeypatch.delenv("PROFILING_MODE", raising=False)
    acl = fresh_process_state()
    acl.init()
    acl.rt.set_device(0)
    model = write_model(tmp_path / "m.json", [("conv1", "Conv2D", 3000), ("relu1", "Relu", 2000)])
    with AclProfiler(tmp_path / "out", profiler_level="Level1") as prof:
        h = prof.start(devices=[0])
        mid, _ = acl.mdl.load_from_file(str(model))
        for _ in range(3):
            acl.mdl.execute(mid, 0, 0)
        prof.stop(h)
    acl.finalize()
    release_double()
    (collected,) = prof.prof_dirs
    subprocess.run([str(FAKE_MSPROF_DIR / "msprof"), "--export=on", f"--output={collected}", "--type=text"],
                   check=True, capture_output=True)
    table = parse_prof_dir(collected, print, run_msprof=False)
    kernels = table.of_kind(EventKind.KERNEL)
    starts, ends = kernels["ts"], kernels["ts"] + kernels["dur"]
    assert len(kernels) == 6 and (starts[1:] >= ends[:-1]).all()            # one task at a time
    calls = table.of_kind(EventKind.API)
    assert (calls["ts"][1:] >= (calls["ts"] + calls["dur"])[:-1]).all()      # a call starts after the last returned
    assert_each_execute_links_its_tasks(table, executes=3)


def test_two_prof_dirs_keep_their_links_apart(tmp_path):
    """Each PROF_ dir numbers its connection ids from 1: merged, a kernel must not reach the other dir's call."""
    from npuprof.integrations.pyacl.cann_import import parse_many

    dirs = []
    for i in range(2):
        prof = make_text_prof(tmp_path / f"r{i}", "new")
        out = prof / "mindstudio_profiler_output"
        timeline = next(out.glob("msprof_*.json"))
        events = json.loads(timeline.read_text())
        for e in events:
            if e.get("name") in ("AscendCL@aclmdlExecute", "MatMul-op1"):
                e["args"] = {"connection_id": 1}
                e["ts"] = str(float(e["ts"]) + i)   # the two dirs' events differ in time
        timeline.write_text(json.dumps(events))
        for p in out.glob("op_summary_*.csv"):
            p.unlink()
        dirs.append(prof)
    table = parse_many(dirs, print)
    links = launches_of(table)
    assert sorted(links.values()) == [(["aclmdlExecute"], ["MatMul-op1"])] * 2


def test_analysed_cann_run_trace_has_flows(collected, tmp_path):
    """End to end: the written trace ties each task to its call (correlation args + ac2g flows)."""
    subprocess.run([str(FAKE_MSPROF_DIR / "msprof"), "--export=on", f"--output={collected}", "--type=db"],
                   check=True, capture_output=True)
    proc = subprocess.run([sys.executable, "-m", "npuprof", "analyse", str(collected)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, NPUPROF_NO_MSPROF="1"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "npuprof_output" / collected.name / "ASCEND_PROFILER_OUTPUT"   # the default place
    doc = json.loads((out / "trace_view.json").read_text())
    ev = doc["traceEvents"]
    calls = {e["args"]["correlation"]: e for e in ev if e.get("ph") == "X" and e["cat"] == "cpu_op"
             and "correlation" in e["args"]}
    kernels = [e for e in ev if e.get("ph") == "X" and e["cat"] == "kernel"]
    assert len(calls) == 4 and len(kernels) == 8
    assert all(k["args"]["correlation"] in calls for k in kernels)
    s = {e["id"]: e for e in ev if e["ph"] == "s"}
    f = {e["id"]: e for e in ev if e["ph"] == "f"}
    assert len(s) == len(f) == 8 and set(s) == set(f)
    for fid, end in f.items():
        kernel = next(k for k in kernels if (k["pid"], k["tid"], k["ts"]) == (end["pid"], end["tid"], end["ts"]))
        call = calls[kernel["args"]["correlation"]]
        assert (s[fid]["pid"], s[fid]["tid"], s[fid]["ts"]) == (call["pid"], call["tid"], call["ts"])
