"""A raw SS928/SS927 JOB is parsed by the vendor's msprof.pyc, on a copy; without it the message says how to get it.

The vendor parser here is a stand-in compiled to ``msprof.pyc`` (``py_compile``, run as ``python msprof.pyc``
like the real one): its ``import``/``export timeline``/``export summary`` commands take the JOB's raw
``data/`` (a JSON-lines file of the stand-in's own) and write the manual's export layout (``timeline/
task_time_*.json``, ``acl_*.json``, ``summary/*.csv``) into the directory given with ``-dir``.
"""
from __future__ import annotations

import json
import os
import py_compile
from pathlib import Path

import pytest

import npuprof
from npuprof.cli import main
from npuprof.events import EventKind
from npuprof.errors import ProfilerDataError
from realdata import tree_digest

STAND_IN = r'''
import json, sys
from pathlib import Path

args = sys.argv[1:]
job = Path(args[args.index("-dir") + 1])
if (job / "data" / "fail").exists():
    print("msprof.pyc: cannot parse this JOB")
    sys.exit(2)
tasks = [json.loads(line) for line in (job / "data" / "tasks.jsonl").read_text().splitlines()]
if args[0] == "import":
    (job / "sqlite").mkdir(exist_ok=True)
    (job / "sqlite" / "imported").write_text("1")
elif args[:2] == ["export", "timeline"]:
    assert (job / "sqlite" / "imported").exists(), "export before import"
    (job / "timeline").mkdir(exist_ok=True)
    events = [{"name": t["op"], "pid": 0, "tid": t["stream"], "ts": t["start_us"], "dur": t["dur_us"], "ph": "X",
               "args": {"Task Type": t["type"], "Stream Id": t["stream"], "Task Id": i}} for i, t in enumerate(tasks)]
    (job / "timeline" / "task_time_0_1_1.json").write_text(json.dumps(events))
    acl = [{"name": "svp_acl_mdl_execute", "pid": 7, "tid": 8, "ts": tasks[0]["start_us"] - 5,
            "dur": 100.0, "ph": "X"}]
    (job / "timeline" / "acl_0_1_1.json").write_text(json.dumps(acl))
elif args[:2] == ["export", "summary"]:
    assert args[-2:] == ["--format", "csv"]
    (job / "summary").mkdir(exist_ok=True)
    (job / "summary" / "op_summary_0.model.1.1.1.1.0.02.1000.csv").write_text(
        "Layer Id,Ori Layer Name,Layer Name,Layer Type,Time(us),Time Ratio,Mac Busy Ratio,Mac Ppen Ratio,"
        "Vec Busy Ratio,Vec Ppen Ratio,Dstr Ratio,Dtrans Ratio,DLD Ratio,WLD Ratio,Memory Bound,DDR Read(byte),"
        "DDR Write(byte),DDR Total(byte)\n" +
        "".join(f"{i},{t['op']},{t['op']},{t['type']},{t['dur_us']},0.5,0.4,0.3,0.2,0.1,0.1,0.1,0.1,0.1,0.25,"
                f"100,50,150\n" for i, t in enumerate(tasks)))
else:
    sys.exit(f"unknown command {args}")
'''

TASKS = [{"op": "conv1", "type": "AA_CORE", "stream": 3, "start_us": 1000.0, "dur_us": 42.0},
         {"op": "pool1", "type": "AA_CPU", "stream": 3, "start_us": 1050.0, "dur_us": 8.0}]


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
def no_parser_around(monkeypatch, tmp_path):
    for var in ("NPUPROF_MSPROF_PYC", "NPUPROF_MSPROF_PYTHON", "NPUPROF_NO_MSPROF", "ASCEND_TOOLKIT_HOME",
                "ASCEND_HOME_PATH", "INSTALL_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def _raw_job(root: Path, fail: bool = False) -> Path:
    job = root / "JOBABCDEFGH"
    (job / "data").mkdir(parents=True)
    (job / "data" / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    if fail:
        (job / "data" / "fail").write_text("")
    (job / "info.json.0").write_text(json.dumps({"devices": "0"}))
    return job


def _check_kernels(result) -> None:
    kernels = result.events.of_kind(EventKind.KERNEL)
    assert kernels.column_strings("name") == ["conv1", "pool1"]
    assert kernels.column_strings("type") == ["AA_CORE", "AA_CPU"]
    assert kernels["dur"].tolist() == [42_000, 8_000] and kernels["stream"].tolist() == [3, 3]
    api = result.tables["api_statistic"].records()
    assert [(r["API Name"], r["Count"]) for r in api] == [("svp_acl_mdl_execute", 1)]


def test_vendor_parser_named_by_the_environment_parses_a_copy(tmp_path, stand_in, monkeypatch):
    job = _raw_job(tmp_path / "board")
    before = tree_digest(job)
    monkeypatch.setenv("NPUPROF_MSPROF_PYC", str(stand_in))
    assert main(["analyse", str(job), "-o", str(tmp_path / "out"), "--quiet"]) == 0
    assert tree_digest(job) == before                       # the JOB is the board's data: untouched
    outputs = list((tmp_path / "out").rglob("ASCEND_PROFILER_OUTPUT/op_statistic.csv"))
    assert len(outputs) == 1 and "conv1" not in outputs[0].read_text() and "AA_CORE" in outputs[0].read_text()
    _check_kernels(npuprof.analyse(job)[0])
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("npuprof-svp-*/JOBABCDEFGH/timeline"))


def test_vendor_parser_found_on_path(tmp_path, stand_in, monkeypatch):
    job = _raw_job(tmp_path / "board")
    monkeypatch.setenv("PATH", f"{stand_in.parent}{os.pathsep}{os.environ['PATH']}")
    _check_kernels(npuprof.analyse(job)[0])


def test_without_the_vendor_parser_the_message_says_how_to_get_it(tmp_path, capsys):
    job = _raw_job(tmp_path / "board")
    with pytest.raises(ProfilerDataError) as e:
        npuprof.analyse(job)
    text = str(e.value)
    assert "raw SS928/SS927 data" in text and "msprof.pyc" in text and "NPUPROF_MSPROF_PYC" in text
    assert main(["analyse", str(job), "-o", str(tmp_path / "out")]) == 1
    assert "NPUPROF_MSPROF_PYC" in capsys.readouterr().err


def test_a_failing_vendor_parser_is_reported(tmp_path, stand_in, monkeypatch):
    job = _raw_job(tmp_path / "board", fail=True)
    monkeypatch.setenv("NPUPROF_MSPROF_PYC", str(stand_in))
    with pytest.raises(ProfilerDataError) as e:
        npuprof.analyse(job)
    assert "msprof.pyc import exited 2" in str(e.value) and "cannot parse this JOB" in str(e.value)


def test_a_parser_path_that_is_not_a_file_is_an_error(tmp_path, monkeypatch):
    job = _raw_job(tmp_path / "board")
    monkeypatch.setenv("NPUPROF_MSPROF_PYC", str(tmp_path / "nowhere" / "msprof.pyc"))
    with pytest.raises(ProfilerDataError) as e:
        npuprof.analyse(job)
    assert "NPUPROF_MSPROF_PYC" in str(e.value)


@pytest.mark.parametrize("command", [["import"], ["export", "summary"], ["show"]])
def test_msprof_pyc_commands_take_collection_dir(tmp_path, stand_in, monkeypatch, capsys, command):
    job = _raw_job(tmp_path / "board")
    monkeypatch.setenv("NPUPROF_MSPROF_PYC", str(stand_in))
    out = ["-o", str(tmp_path / "out")] if command[0] != "show" else []
    assert main([*command, "--collection-dir", str(job), *out]) == 0
    if command[0] == "show":
        shown = capsys.readouterr().out
        assert "JOBABCDEFGH  (3 events" in shown and "AA_CPU" in shown   # the vendor-exported kernels
    elif command[0] == "import":
        assert list((tmp_path / "out").rglob("op_statistic.csv"))
    else:   # the manual's summary names
        names = sorted(p.name for p in (tmp_path / "out" / "JOBABCDEFGH" / "summary").iterdir())
        assert names == ["acl_statistic_0_1_1.csv", "op_statistic_0_1_1_1.csv",
                         "op_summary_0.model.1.1.1.1.0.02.1000.csv"]
