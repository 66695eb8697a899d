"""The CANN 6.x/7.0 per-device export layout, read from a real collection (Ascend 910, MindInsight's
fixture, ../shared/realdata/mindinsight): every timeline event counted against the files themselves,
iterations as steps, HCCL as communication, monotonic times placed on the wall clock, nothing written.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from npuprof.analysis.pipeline import load_events
from npuprof.cli import main
from npuprof.events import EventKind
from npuprof.readers.cann_timeline import RUNTIME_TASK_PREFIXES, device_clock
from realdata import realdata, tree_digest

PROF = "mindinsight/tests/utils/resource/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC"


def _timeline_events(prof: Path) -> list[tuple[str, dict]]:
    """(process name, event) of every complete event of the merged timelines, read directly."""
    out = []
    for path in sorted((prof / "device_0" / "timeline").glob("msprof_*.json")):
        data = json.loads(path.read_text())
        names = {e["pid"]: e["args"]["name"] for e in data if e.get("ph") == "M" and e["name"] == "process_name"}
        out += [(names.get(e["pid"], ""), e) for e in data if e.get("ph") == "X"]
    return out


@pytest.fixture(scope="module")
def loaded():
    prof = realdata(PROF)
    before = tree_digest(prof)
    events, info, warnings = load_events(prof)
    assert tree_digest(prof) == before
    return prof, events, warnings


def test_every_timeline_event_is_read_once(loaded):
    prof, events, warnings = loaded
    raw = _timeline_events(prof)
    per_process = Counter(p for p, _ in raw)
    assert per_process["Overlap Analysis"] > 0 and any("Overlap Analysis not read" in w for w in warnings)
    tasks = [e for p, e in raw if p == "Ascend Hardware" and "Task Type" in e.get("args", {})]
    steps = [e for p, e in raw if "Iteration ID" in e.get("args", {})]
    kernels = [e for e in tasks if not e["args"]["Task Type"].startswith(RUNTIME_TASK_PREFIXES)]
    kinds = Counter(EventKind(k).name for k in events["kind"].tolist())
    assert kinds["KERNEL"] == len(kernels) > 0
    assert kinds["COMM"] == per_process["HCCL"] > 0
    assert kinds["API"] == per_process["CANN"]
    assert kinds["STEP"] + kinds["RANGE"] == len(steps) + len(tasks) - len(kernels)
    assert len(events) == len(raw) - per_process["Overlap Analysis"]


def test_iterations_are_the_steps_with_the_tools_times(loaded):
    prof, events, _ = loaded
    raw = {e["args"]["Iteration ID"]: e for p, e in _timeline_events(prof) if e.get("cat") == "Iteration Time"}
    sel = events["kind"] == int(EventKind.STEP)
    got = dict(zip(events["step"][sel].tolist(), events["dur"][sel].tolist()))
    assert sorted(got) == sorted(raw) == list(range(1, len(raw) + 1))
    for it, ev in raw.items():
        assert abs(got[it] - ev["args"]["Iteration Time(ns)"]) <= 1        # ns, the tool's own field


def test_times_are_wall_clock_inside_the_collection(loaded):
    prof, events, _ = loaded
    begin = json.loads((prof / "device_0" / "start_info.0").read_text())
    end = json.loads((prof / "device_0" / "end_info.0").read_text())
    lo, hi = int(begin["collectionTimeBegin"]) * 1000, int(end["collectionTimeEnd"]) * 1000
    assert lo <= int(events["ts"].min()) and int((events["ts"] + events["dur"]).max()) <= hi
    clock = device_clock(prof / "device_0", "0")
    # the two clocks' drift over the collection, corrected by the two pairs: the one-offset map differs by it
    drift_ns = abs((hi - lo) - (int(end["clockMonotonicRaw"]) - int(begin["clockMonotonicRaw"])))
    assert abs(clock.epoch_ns(int(end["clockMonotonicRaw"]) / 1000) - hi) <= 1
    assert 0 < drift_ns < 5_000


def test_communication_is_communication(loaded):
    _, events, _ = loaded
    comm = events.select(events["kind"] == int(EventKind.COMM))
    args = [json.loads(a) if a else {} for a in comm.column_strings("args")]
    ops = [t for t, a in zip(comm.column_strings("type"), args) if "task_type" not in a]
    assert ops and set(ops) == {"AllReduce"}
    planes = {a["plane_id"] for a in args if "task_type" in a}
    assert len(planes) > 1
    kernel_types = set(events.select(events["kind"] == int(EventKind.KERNEL)).column_strings("type"))
    assert not any(t.startswith(RUNTIME_TASK_PREFIXES) for t in kernel_types)


def test_analyse_writes_only_under_o_and_exits_0(loaded, tmp_path):
    prof, _, _ = loaded
    before = tree_digest(prof)
    assert main(["analyse", str(prof), "-o", str(tmp_path / "out"), "--quiet"]) == 0
    out = tmp_path / "out" / prof.name / "ASCEND_PROFILER_OUTPUT"
    rows = (out / "step_trace_time.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == [str(n) for n in range(1, 11)]
    assert (out / "communication.json").is_file()
    assert tree_digest(prof) == before


def test_a_prof_dir_with_nothing_readable_is_an_error_not_zero_events(tmp_path, capsys):
    empty = tmp_path / "PROF_000001_20230101000000000_ABCDEFGHIJKLMNOP"
    (empty / "device_0").mkdir(parents=True)
    assert main(["analyse", str(empty), "-o", str(tmp_path / "out"), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "holds nothing npuprof reads" in err and "no msprof executable" not in err


def test_the_real_collection_takes_the_bulk_path(loaded, monkeypatch):
    """The bulk reader hands a device it declines to the event-by-event reader with no word (the same table,
    only slower): loading the real collection with that reader made to fail shows it is never needed here."""
    pytest.importorskip("msgspec")
    from npuprof.readers import cann_timeline
    from npuprof.readers.trace_decode import DECODER_ENV

    class NotExpected(cann_timeline._DeviceReader):
        def __init__(self, *a, **k):
            raise AssertionError("the real collection fell back to the event-by-event reader")

    monkeypatch.delenv(DECODER_ENV, raising=False)
    monkeypatch.setattr(cann_timeline, "_DeviceReader", NotExpected)
    prof, events, _ = loaded
    bulk, _, _ = load_events(prof)
    assert len(bulk) == len(events) > 8000
