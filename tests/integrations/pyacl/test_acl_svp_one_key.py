"""The SS928/SS927 one-key flow (seed 002): collect -> JOB -> npuprof's exports in msprof.pyc's layout.

The board app runs with the acl TEST DOUBLE (tests/acl), which writes a raw ``JOB*`` directory for an
SVP acl.json section; the vendor's msprof.pyc is a stand-in compiled to ``msprof.pyc`` that decodes the
double's raw records and writes the manual's export layout. The file names and columns asserted here are
typed from the manual (seed 002), not taken from npuprof's code.
"""
from __future__ import annotations

import csv
import io
import json
import py_compile
import shutil
import textwrap
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from acl_support import copy_double_into
from npuprof.cli import main as cli_main
from realdata import tree_digest

# -- the manual's layout (seed 002), typed from it ---------------------------------------------------------
MANUAL_OP_SUMMARY = ["Layer Id", "Ori Layer Name", "Layer Name", "Layer Type", "Time(us)", "Time Ratio",
                     "Mac Busy Ratio", "Mac Ppen Ratio", "Vec Busy Ratio", "Vec Ppen Ratio", "Dstr Ratio",
                     "Dtrans Ratio", "DLD Ratio", "WLD Ratio", "Memory Bound", "DDR Read(byte)", "DDR Write(byte)",
                     "DDR Total(byte)"]
MANUAL_OP_STATISTIC = ["Task ID", "Stream ID", "OP Name", "Task Type", "Total Time Ratio(%)", "Total Time(us)",
                       "Count", "Avg(us)", "Max(us)", "Min(us)"]
MANUAL_ACL_STATISTIC = ["Process ID", "Thread ID", "Type", "Name", "Total Time Ratio(%)", "Total Time(us)", "Count",
                        "Avg(us)", "Max(us)", "Min(us)"]
MANUAL_TASK_ARGS = {"Task Type", "Stream Id", "Task Id"}
MANUAL_TRACE_FIELDS = {"name", "pid", "tid", "ts", "dur", "ph"}

# the vendor parser stand-in: decodes the double's raw JOB records into the manual's export layout
STAND_IN = r'''
import json, sys
from collections import defaultdict
from pathlib import Path

args = sys.argv[1:]
job = Path(args[args.index("-dir") + 1])

def records(kind):
    path = job / "data" / f"double.{kind}.slice_0"
    return [json.loads(l) for l in path.read_text().splitlines()] if path.exists() else []

info = json.loads(next(job.glob("info.json.*")).read_text())
if args[0] == "import":
    (job / "sqlite").mkdir(exist_ok=True)
    (job / "sqlite" / "imported").write_text("1")
elif args[:2] == ["export", "timeline"]:
    assert (job / "sqlite" / "imported").exists(), "export before import"
    (job / "timeline").mkdir(exist_ok=True)
    for kind, prefix in (("task", "task_time_"), ("api", "acl_")):
        per = defaultdict(list)
        for r in records(kind):
            per[(r["device"], r["model_file"], r["model_id"], r["iteration"])].append(r)
        for (dev, model, mid, it), rows in per.items():
            if kind == "task":
                events = [{"name": r["op_name"], "pid": 0, "tid": r["stream_id"], "ts": r["start_ns"] / 1000,
                           "dur": r["dur_ns"] / 1000, "ph": "X", "args": {"Task Type": r["task_type"],
                           "Stream Id": r["stream_id"], "Task Id": r["task_id"]}} for r in rows]
            else:
                events = [{"name": r["name"], "pid": r["pid"], "tid": r["tid"], "ts": r["start_ns"] / 1000,
                           "dur": (r["end_ns"] - r["start_ns"]) / 1000, "ph": "X",
                           "args": {"Mode": r["mode"], "Process_Id": r["pid"], "Thread_Id": r["tid"]}} for r in rows]
            (job / "timeline" / f"{prefix}{dev}.{model}.{mid}.{it}.json").write_text(json.dumps(events))
elif args[:2] == ["export", "summary"]:
    (job / "summary").mkdir(exist_ok=True)
    per = defaultdict(list)
    for r in records("aacore"):
        per[(r["device"], r["model_file"], r["model_id"], r["iteration"])].append(r)
    pics = len(per)
    for (dev, model, mid, it), rows in per.items():
        total = sum(r["time_us"] for r in rows)
        lines = ["Layer Id,Ori Layer Name,Layer Name,Layer Type,Time(us),Time Ratio,Mac Busy Ratio,Mac Ppen Ratio,"
                 "Vec Busy Ratio,Vec Ppen Ratio,Dstr Ratio,Dtrans Ratio,DLD Ratio,WLD Ratio,Memory Bound,"
                 "DDR Read(byte),DDR Write(byte),DDR Total(byte)"]
        for r in rows:
            bound = max(r["dstr"], r["dld"], r["wld"]) / max(r["mac_busy"], r["vec_ppen"])
            lines.append(",".join(str(x) for x in (r["layer_id"], r["layer"], r["layer"], r["type"], r["time_us"],
                         round(r["time_us"] / total, 4), r["mac_busy"], r["mac_ppen"], r["vec_busy"], r["vec_ppen"],
                         r["dstr"], r["dtrans"], r["dld"], r["wld"], round(bound, 4), r["ddr_read"], r["ddr_write"],
                         r["ddr_read"] + r["ddr_write"])))
        name = (f"op_summary_{dev}.{model}.{mid}.{it}.{pics}.{it}.{info['icache_miss_rate']}."
                f"{info['aa_core_frequency']}.csv")
        (job / "summary" / name).write_text("\n".join(lines) + "\n")
else:
    sys.exit(f"unknown command {args}")
'''

APP = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import acl     # the test double; a real SS928 app calls svp_acl_init()
    assert acl.init("acl.json") == 0
    assert acl.rt.set_device(0) == 0
    model_id, ret = acl.mdl.load_from_file("resnet.json")
    assert ret == 0
    for _ in range(int(sys.argv[1])):
        assert acl.mdl.execute(model_id, 0, 0) == 0
    acl.mdl.unload(model_id)
    assert acl.finalize() == 0
""")
COUNTERS = {"mac_busy": 0.6, "mac_ppen": 0.5, "vec_busy": 0.2, "vec_ppen": 0.1, "dstr": 0.05, "dtrans": 0.1,
            "dld": 0.3, "wld": 0.15, "ddr_read": 4096, "ddr_write": 1024}
OPS = [("conv1", "Convolution", 100), ("relu1", "ReLU", 20), ("conv2", "Convolution", 60)]


@pytest.fixture
def stand_in(tmp_path) -> Path:
    src = tmp_path / "vendor" / "msprof_src.py"
    src.parent.mkdir()
    src.write_text(STAND_IN)
    pyc = tmp_path / "vendor" / "msprof.pyc"
    py_compile.compile(str(src), cfile=str(pyc), doraise=True)
    src.unlink()
    return pyc


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ("NPUPROF_MSPROF_PYC", "NPUPROF_MSPROF_PYTHON", "NPUPROF_NO_MSPROF", "ASCEND_TOOLKIT_HOME",
                "ASCEND_HOME_PATH", "INSTALL_DIR", "PROFILING_MODE", "PROFILING_OPTIONS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def _project(root: Path) -> Path:
    project = root / "app"
    project.mkdir(parents=True)
    (project / "main.py").write_text(APP)
    (project / "resnet.json").write_text(json.dumps({"ops": [
        {"name": n, "type": t, "duration_us": d, "aa_core": COUNTERS} for n, t, d in OPS], "fail_after": None}))
    (project / "acl.json").write_text("{}")
    copy_double_into(project)
    return project


def _cli(argv: list) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(out):
        code = cli_main(argv)
    return code, out.getvalue()


def _csv(path: Path) -> tuple[list, list[dict]]:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


def _collect(tmp_path: Path, *extra: str) -> tuple[int, str]:
    project = _project(tmp_path)
    return _cli(["collect", "-m", str(project / "main.py"), "--product", "SS928", "--output", str(tmp_path / "out"),
                 "--all", *extra, "--", "2"])


def test_one_key_flow_writes_the_manuals_files_and_columns_into_npuprofs_own_job(tmp_path, stand_in, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")     # show's tables unfolded
    code, out = _collect(tmp_path, "--msprof", str(stand_in))
    assert code == 0, out
    (job,) = (tmp_path / "out").glob("collect_*/data/JOB*")
    raw = sorted(p.name for p in (job / "data").iterdir())
    assert raw == ["all_file.complete", "double.aacore.slice_0", "double.api.slice_0", "double.task.slice_0"]
    assert not (job / "sqlite").exists()     # the vendor parser ran on a copy

    # timeline/: task_time_{device_id}.{model_file_name}.{model_id}.{batch_num}.json and acl_ alike
    assert sorted(p.name for p in (job / "timeline").iterdir()) == [
        "acl_0.resnet.1.1.json", "acl_0.resnet.1.2.json", "task_time_0.resnet.1.1.json", "task_time_0.resnet.1.2.json"]
    tasks = [e for e in json.loads((job / "timeline" / "task_time_0.resnet.1.2.json").read_text()) if e["ph"] == "X"]
    assert [e["name"] for e in tasks] == ["conv1", "relu1", "conv2"]
    assert all(MANUAL_TRACE_FIELDS <= set(e) and set(e["args"]) == MANUAL_TASK_ARGS for e in tasks)
    assert [(e["args"]["Task Type"], e["args"]["Task Id"], e["dur"]) for e in tasks] == [
        ("AA_CORE", 0, 100.0), ("AA_CORE", 1, 20.0), ("AA_CORE", 2, 60.0)]
    (call,) = [e for e in json.loads((job / "timeline" / "acl_0.resnet.1.1.json").read_text()) if e["ph"] == "X"]
    assert call["name"] == "aclmdlExecute" and call["args"]["Mode"] == "model"          # the ACL Mode kept
    assert call["args"]["Process_Id"] == call["pid"] and call["args"]["Thread_Id"] == call["tid"]

    # summary/: op_summary with the AA Core columns, op_statistic and acl_statistic with {device}_{model}_{iter}
    assert sorted(p.name for p in (job / "summary").iterdir()) == [
        "acl_statistic_0_1_1.csv", "acl_statistic_0_1_2.csv", "op_statistic_0_1_1_1.csv", "op_statistic_0_1_2_2.csv",
        "op_summary_0.resnet.1.1.2.1.0.02.1000.csv", "op_summary_0.resnet.1.2.2.2.0.02.1000.csv"]
    header, layers = _csv(job / "summary" / "op_summary_0.resnet.1.2.2.2.0.02.1000.csv")
    assert header == MANUAL_OP_SUMMARY
    assert [(r["Layer Name"], r["Time(us)"], r["Mac Busy Ratio"], r["Memory Bound"], r["DDR Total(byte)"])
            for r in layers] == [("conv1", "100", "0.6", "0.5", "5120"), ("relu1", "20", "0.6", "0.5", "5120"),
                                 ("conv2", "60", "0.6", "0.5", "5120")]   # as the vendor measured them
    header, ops = _csv(job / "summary" / "op_statistic_0_1_2_2.csv")
    assert header == MANUAL_OP_STATISTIC
    assert [(r["Task ID"], r["Stream ID"], r["OP Name"], r["Task Type"], r["Count"], float(r["Total Time(us)"]),
             float(r["Total Time Ratio(%)"])) for r in ops] == [
        ("0", "2", "conv1", "AA_CORE", "1", 100.0, 55.56), ("1", "2", "relu1", "AA_CORE", "1", 20.0, 11.11),
        ("2", "2", "conv2", "AA_CORE", "1", 60.0, 33.33)]
    header, calls = _csv(job / "summary" / "acl_statistic_0_1_1.csv")
    assert header == MANUAL_ACL_STATISTIC
    (row,) = calls
    assert (row["Process ID"], row["Thread ID"], row["Type"], row["Name"], row["Count"], row["Total Time Ratio(%)"]) \
        == (str(call["pid"]), str(call["tid"]), "model", "aclmdlExecute", "1", "100.0")
    assert float(row["Total Time(us)"]) == pytest.approx(call["dur"], abs=0.001)

    # show prints the AA Core metrics and the Frequency table (read back from the JOB's exports)
    code, shown = _cli(["show", "--collection-dir", str(job), "--limit", "50"])
    assert code == 0, shown
    assert "aa_core_metrics" in shown and "Mac Busy Ratio" in shown and "frequency" in shown and "1000" in shown


def test_exports_of_another_tools_job_go_under_o_or_in_place(tmp_path, stand_in):
    code, out = _cli(["collect", "-m", str(_project(tmp_path / "p") / "main.py"), "--product", "SS928",
                      "--output", str(tmp_path / "out"), "--", "1"])            # no --all: a raw JOB
    assert code == 0, out
    (collected,) = (tmp_path / "out").glob("collect_*/data/JOB*")
    job = shutil.copytree(collected, tmp_path / "board" / collected.name)      # a JOB from elsewhere
    before = tree_digest(job)
    code, out = _cli(["export", "summary", "-dir", str(job), "--msprof", str(stand_in)])
    assert code == 0, out
    assert tree_digest(job) == before                                          # read-only input
    assert sorted(p.name for p in (tmp_path / "npuprof_output" / job.name / "summary").iterdir()) == [
        "acl_statistic_0_1_1.csv", "op_statistic_0_1_1_1.csv", "op_summary_0.resnet.1.1.1.1.0.02.1000.csv"]
    code, out = _cli(["export", "timeline", "-dir", str(job), "--msprof", str(stand_in), "-o", str(job / "x")])
    assert code == 2 and "-o" in out and tree_digest(job) == before            # -o inside the JOB is refused
    code, out = _cli(["export", "timeline", "-dir", str(job), "--msprof", str(stand_in), "--in-place"])
    assert code == 0, out
    assert sorted(p.name for p in (job / "timeline").iterdir()) == ["acl_0.resnet.1.1.json",
                                                                    "task_time_0.resnet.1.1.json"]
    code, out = _cli(["export", "summary", "-dir", str(tmp_path / "out"), "--in-place", "-o", str(tmp_path / "o")])
    assert code == 2 and "--in-place" in out


def test_in_place_is_refused_for_a_run_that_is_no_job(tmp_path):
    run = tmp_path / "trace"
    run.mkdir()
    (run / "w.pt.trace.json").write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0}]}))
    code, out = _cli(["export", "summary", "-dir", str(run), "--in-place"])
    assert code == 2 and "--in-place" in out and "SS928/SS927 JOB" in out
    assert sorted(p.name for p in run.iterdir()) == ["w.pt.trace.json"]


def test_without_the_vendor_parser_the_one_key_flow_says_how_to_get_it(tmp_path):
    code, out = _collect(tmp_path)
    assert code == 1
    assert "raw SS928/SS927 data" in out and "--msprof" in out and "NPUPROF_MSPROF_PYC" in out
    (job,) = (tmp_path / "out").glob("collect_*/data/JOB*")
    assert not (job / "timeline").exists() and not (job / "summary").exists()    # nothing claimed
    code, out = _cli(["show", "-dir", str(job), "--msprof", str(tmp_path / "nowhere" / "msprof.pyc")])
    assert code == 2 and "--msprof" in out and "msprof.pyc" in out
