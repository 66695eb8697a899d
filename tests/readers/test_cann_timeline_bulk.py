"""The CANN per-device timelines read in bulk (columns, numpy rules) give what reading them event by event
gives: the same table (every column, the string pool), the same warnings and notes, the same error; on the
real collection, on it with a slice repeated, and on generated files with odd values, which the bulk path
either reads alike or hands to the event-by-event reader."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npuprof.errors import ProfilerDataError
from npuprof.events import NUMERIC_COLUMNS, STRING_COLUMNS
from npuprof.readers import cann_timeline
from npuprof.readers.trace_decode import DECODER_ENV
from realdata import realdata

PROF = "mindinsight/tests/utils/resource/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC"


def _dump(table) -> tuple:
    return ({k: table.cols[k].tolist() for k in NUMERIC_COLUMNS},
            {k: table.cols[k].tolist() for k in STRING_COLUMNS}, list(table.strings))


def _outcome(prof: Path) -> tuple:
    said: list = []
    try:
        table = cann_timeline.read_device_timelines(prof, said.append, lambda m: said.append("note: " + m))
    except ProfilerDataError as e:
        return ("error", str(e)), said
    except Exception as e:         # what the event-by-event reader raises, the bulk one must raise alike
        return ("raised", type(e).__name__), said
    return _dump(table), said


def _both(prof: Path, monkeypatch) -> tuple:
    """(bulk outcome, event-by-event outcome, whether the bulk path read every device)."""
    monkeypatch.delenv(DECODER_ENV, raising=False)
    took = []
    bulk_read = cann_timeline._BulkDeviceReader.read

    def spy(self, files, warn):
        out = bulk_read(self, files, warn)
        took.append(out is not None)
        return out

    monkeypatch.setattr(cann_timeline._BulkDeviceReader, "read", spy)
    fast = _outcome(prof)
    monkeypatch.setattr(cann_timeline._BulkDeviceReader, "read", lambda self, files, warn: None)
    slow = _outcome(prof)
    monkeypatch.setattr(cann_timeline._BulkDeviceReader, "read", bulk_read)
    return fast, slow, bool(took) and all(took)


def test_the_real_collection_reads_alike_in_bulk(monkeypatch):
    pytest.importorskip("msgspec")
    fast, slow, bulk = _both(realdata(PROF), monkeypatch)
    assert bulk and len(fast[0][0]["ts"]) > 8000
    assert fast == slow


def test_files_read_a_piece_at_a_time_read_alike(monkeypatch):
    """Every real slice cut into ~16 kB pieces (a large file's way): the process names of the whole file still
    name each piece's events."""
    pytest.importorskip("msgspec")
    from npuprof.readers import trace_decode
    monkeypatch.setattr(cann_timeline, "CHUNKED_FROM_BYTES", 0)
    monkeypatch.setattr(cann_timeline, "event_array_chunks",
                        lambda path: trace_decode.event_array_chunks(path, 1 << 14))
    pieces = []
    monkeypatch.setattr(cann_timeline, "events_of_structs",
                        lambda structs: pieces.append(len(structs)) or trace_decode.events_of_structs(structs))
    fast, slow, bulk = _both(realdata(PROF), monkeypatch)
    assert bulk and fast == slow and len(pieces) > 100


def test_a_slice_repeated_by_another_file_is_read_once(tmp_path, monkeypatch):
    pytest.importorskip("msgspec")
    prof = tmp_path / realdata(PROF).name
    shutil.copytree(realdata(PROF), prof)
    for p in [prof, *prof.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    timeline = prof / "device_0" / "timeline"
    shutil.copyfile(timeline / "msprof_0_2_3.json", timeline / "msprof_0_2_11.json")
    fast, slow, bulk = _both(prof, monkeypatch)
    assert bulk and fast == slow
    original, _, _ = _both(realdata(PROF), monkeypatch)
    assert fast[0] == original[0]     # every event of the copy a repeat: the same table


_odd = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True) | \
    st.text(max_size=4) | st.lists(st.integers(0, 3), max_size=2)
_small_int = st.integers(-3, 12)
_name = st.sampled_from(["MatMul-op1", "Default/AllReduce-op5_0", "GE@Infer", "a@b", "Notify_Wait", "Iteration 1",
                         "Computing", ""])
_args = st.fixed_dictionaries({}, optional={
    "Task Type": st.sampled_from(["AI_CORE", "NOTIFY_WAIT", "MEMCPY_ASYNC", "AI_CPU"]) | _odd,
    "Stream Id": _small_int | _odd, "Task Id": _small_int, "Total Cycle": _small_int | _odd, "x": _odd,
    "task type": st.sampled_from(["Notify_Wait", "Memcpy"]) | _odd, "stream id": _small_int | _odd,
    "src rank": _small_int | _odd, "dst rank": _small_int, "size(Byte)": _small_int | _odd,
    "transport type": st.sampled_from(["RDMA", "SDMA"]), "Iteration ID": _small_int | _odd}) | _odd
_ts = st.floats(0, 5e3) | st.integers(0, 5000) | _odd
_event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "X", "X", "M", "s"]) | _odd},
    optional={"name": _name | _odd, "pid": st.sampled_from([1, 2, 3, 7]) | _odd, "tid": _small_int | _odd,
              "ts": _ts, "dur": st.floats(0, 50) | st.integers(0, 50) | _odd, "cat": st.sampled_from(
                  ["Iteration Time", "FP_BP Time"]) | _odd, "args": _args})
_process = st.builds(lambda pid, name: {"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                                        "args": {"name": name}},
                     st.sampled_from([1, 2, 3, 7]) | _odd,
                     st.sampled_from(["Ascend Hardware", "HCCL", "CANN", "Overlap Analysis", "Other"]) | _odd)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(files=st.lists(st.lists(_process | _event, max_size=12), min_size=1, max_size=3), wrap=st.booleans(),
       cut=st.none() | st.integers(0, 300), pieces=st.booleans())
def test_generated_timelines_read_alike_in_bulk_or_are_handed_over(tmp_path_factory, monkeypatch, files, wrap,
                                                                   cut, pieces):
    pytest.importorskip("msgspec")
    from npuprof.readers import trace_decode
    monkeypatch.setattr(cann_timeline, "CHUNKED_FROM_BYTES", 0 if pieces else 16 << 20)
    monkeypatch.setattr(cann_timeline, "event_array_chunks",      # pieces of a few events (a large file's way)
                        lambda path: trace_decode.event_array_chunks(path, 200))
    prof = tmp_path_factory.mktemp("PROF_000001_20230101000000000_ABCDEFGHIJKLMNOP")
    dev = prof / "device_0"
    (dev / "timeline").mkdir(parents=True)
    for i, events in enumerate(files, 1):
        text = json.dumps({"traceEvents": events} if wrap else events).encode()
        if cut is not None and i == len(files):
            text = text[:cut]
        (dev / "timeline" / f"msprof_0_1_{i}.json").write_bytes(text)
    (dev / "start_info.0").write_text(json.dumps({"collectionTimeBegin": "1700000000000000",
                                                  "clockMonotonicRaw": "1000000"}))
    (dev / "end_info.0").write_text(json.dumps({"collectionTimeEnd": "1700000000100000",
                                                "clockMonotonicRaw": "100001000"}))
    fast, slow, _ = _both(prof, monkeypatch)      # about a third of these are read in bulk
    assert fast == slow


def test_plain_generated_timelines_take_the_bulk_path(tmp_path, monkeypatch):
    """Not every file is handed over: plain values are read in bulk (the property above would hold for a
    reader that handed every file over)."""
    pytest.importorskip("msgspec")
    prof = tmp_path / "PROF_000001_20230101000000000_ABCDEFGHIJKLMNOP"
    dev = prof / "device_0"
    (dev / "timeline").mkdir(parents=True)
    events = [{"ph": "M", "name": "process_name", "pid": 3, "tid": 0, "args": {"name": "Ascend Hardware"}},
              {"ph": "X", "name": "MatMul-op1", "pid": 3, "tid": 2, "ts": 1000.5, "dur": 3,
               "args": {"Task Type": "AI_CORE", "Stream Id": 2, "Task Id": 4}},
              {"ph": "X", "name": "x", "pid": 3, "tid": 2, "ts": 1001, "dur": -1}]
    (dev / "timeline" / "msprof_0_1_1.json").write_text(json.dumps(events))
    (dev / "start_info.0").write_text(json.dumps({"collectionTimeBegin": "1700000000000000",
                                                  "clockMonotonicRaw": "1000000"}))
    fast, slow, bulk = _both(prof, monkeypatch)
    assert bulk and fast == slow and len(fast[0][0]["ts"]) == 1
    assert any("1 event(s) without a numeric ts/dur skipped" in m for m in fast[1])


_HCCL = {"ph": "M", "name": "process_name", "pid": 5, "tid": 0, "args": {"name": "HCCL"}}
_TASK = {"ph": "X", "name": "Notify_Wait", "pid": 5, "tid": 1, "ts": 1000.25, "dur": 2.5,
         "args": {"task type": "Notify_Wait", "src rank": 0, "dst rank": 1, "stream id": 3}}


@pytest.mark.parametrize("text", [
    json.dumps([_HCCL, _TASK, dict(_TASK, ts=1001, args=dict(_TASK["args"], **{"src rank": 2**70}))]),
    json.dumps([_HCCL, _TASK, dict(_TASK, pid="5")]),
    json.dumps([_HCCL, _TASK, dict(_TASK, name="")]),
    json.dumps([_HCCL, _TASK, dict(_TASK, ts=float("nan"))]),
    json.dumps([_HCCL, _TASK, 7]),
    json.dumps([_HCCL, _TASK])[:-20],
    '{"traceEvents": 5}',
    json.dumps({"traceEvents": [_HCCL, _TASK], "x": 1}),
    json.dumps([_HCCL, _TASK, dict(_TASK, ts=10**400)]),
], ids=["huge int in args", "pid text", "empty name", "NaN ts", "entry not an object", "truncated",
        "traceEvents not a list", "wrapped", "ts past a double"])
def test_odd_files_give_the_event_by_event_outcome(tmp_path, monkeypatch, text):
    prof = tmp_path / "PROF_000001_20230101000000000_ABCDEFGHIJKLMNOP"
    dev = prof / "device_0"
    (dev / "timeline").mkdir(parents=True)
    (dev / "timeline" / "msprof_0_1_1.json").write_text(json.dumps([_HCCL, dict(_TASK, ts=900)]))
    (dev / "timeline" / "msprof_0_1_2.json").write_text(text)
    (dev / "start_info.0").write_text(json.dumps({"collectionTimeBegin": "1700000000000000",
                                                  "clockMonotonicRaw": "1000000"}))
    fast, slow, _ = _both(prof, monkeypatch)
    assert fast == slow


@pytest.mark.parametrize("raised, handed_over", [(ValueError, True), (TypeError, True), (AttributeError, False),
                                                 (RuntimeError, False)])
def test_only_the_errors_of_odd_values_hand_a_device_over(tmp_path, monkeypatch, raised, handed_over):
    """What a value the bulk path does not take raises sends the device to the event-by-event reader (the same
    table); anything else is a bug in the bulk path, raised, not hidden behind the slower reader."""
    pytest.importorskip("msgspec")
    prof = tmp_path / "PROF_000001_20230101000000000_ABCDEFGHIJKLMNOP"
    dev = prof / "device_0"
    (dev / "timeline").mkdir(parents=True)
    (dev / "timeline" / "msprof_0_1_1.json").write_text(json.dumps([_HCCL, _TASK]))
    (dev / "start_info.0").write_text(json.dumps({"collectionTimeBegin": "1700000000000000",
                                                  "clockMonotonicRaw": "1000000"}))
    monkeypatch.delenv(DECODER_ENV, raising=False)
    expected = _outcome(prof)[0]

    def broken(self, parts):
        raise raised("in the bulk path")

    monkeypatch.setattr(cann_timeline._BulkDeviceReader, "_table", broken)
    if handed_over:
        assert _outcome(prof)[0] == expected and len(expected[0]["ts"]) == 1
    else:
        with pytest.raises(raised, match="in the bulk path"):
            cann_timeline.read_device_timelines(prof, lambda m: None, lambda m: None)
