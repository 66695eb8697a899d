"""An SVP (SS928/SS927) JOB directory exported by msprof.pyc is imported (seed 002's timeline fields)."""
import json

import npuprof
from npuprof.events import EventKind


def test_svp_job_timelines_become_kernels_and_acl_api_events(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUPROF_NO_MSPROF", "1")
    job = tmp_path / "JOBAAAAAAAA"
    (job / "data").mkdir(parents=True)
    (job / "info.json.0").write_text(json.dumps({"devices": "0"}))
    timeline = job / "timeline"
    timeline.mkdir()
    tasks = [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "Task Scheduler"}},
        {"name": "conv1", "pid": 0, "tid": 5, "ts": 1000.0, "dur": 40.5, "ph": "X",
         "args": {"Task Type": "AI_CORE", "Stream Id": 5, "Task Id": 1}},
        {"name": "pool1", "pid": 0, "tid": 5, "ts": 1050.0, "dur": 9.5, "ph": "X",
         "args": {"Task Type": "AI_CPU", "Stream Id": 5, "Task Id": 2}},
        {"name": "no time", "pid": 0, "tid": 5, "dur": 1.0, "ph": "X", "args": {}},
    ]
    (timeline / "task_time_0.resnet50.1.1.json").write_text(json.dumps(tasks))
    acl_calls = [{"name": "aclmdlExecute", "pid": 77, "tid": 78, "ts": 990.0, "dur": 80.0, "ph": "X",
                  "args": {"Mode": "ACL_OP", "Process_Id": 77, "Thread_Id": 78}}]
    (timeline / "acl_0.resnet50.1.1.json").write_text(json.dumps(acl_calls))

    (res,) = npuprof.analyse(job)
    kernels = res.events.of_kind(EventKind.KERNEL)
    assert kernels.column_strings("name") == ["conv1", "pool1"]
    assert kernels.column_strings("type") == ["AI_CORE", "AI_CPU"]
    assert kernels["dur"].tolist() == [40_500, 9_500] and kernels["stream"].tolist() == [5, 5]
    assert [kernels.args_object(c).get("Task Id") for c in kernels["args"].tolist()] == [1, 2]   # kept
    calls = res.events.of_kind(EventKind.API)
    assert [calls.args_object(c).get("Mode") for c in calls["args"].tolist()] == ["ACL_OP"]
    assert calls["pid"].tolist() == [77] and calls["tid"].tolist() == [78]
    api = res.tables["api_statistic"].records()
    assert [(r["Level"], r["API Name"], r["Count"], r["Time(us)"]) for r in api] == [("AscendCL", "aclmdlExecute", 1, 80.0)]
