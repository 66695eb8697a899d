"""The columnar trace_view.json reader: msgspec (chunk by chunk, args kept as JSON text, parsed where used)
and its orjson fallback give the same event table and problems, on the real torch_npu trace and on damaged
ones; the rules applied in bulk equal the rules applied event by event; the bulk time conversion equals the
per-value one; CANN timelines decode as Python's json does."""
from __future__ import annotations

import gc
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from npuprof.readers import trace_decode
from npuprof.readers.ascend_output import OUTPUT_DIR, TRACE_VIEW, AscendWriter, read_ascend_output
from npuprof.readers.time_text import us_text_to_ns, us_texts_to_ns
from npuprof.readers.trace_decode import DECODER_ENV, collector_paused, decode_events, decode_json
from realdata import realdata

LEVEL1 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"


def _dump(table) -> tuple:
    return {k: table[k].tolist() for k in table.cols}, list(table.strings)


def _both(out_dir: Path, monkeypatch, **kw) -> tuple:
    monkeypatch.delenv(DECODER_ENV, raising=False)
    fast = read_ascend_output(out_dir, writer=AscendWriter.TORCH_NPU, **kw)
    monkeypatch.setenv(DECODER_ENV, "orjson")
    assert trace_decode.decoder_name() == "orjson"
    slow = read_ascend_output(out_dir, writer=AscendWriter.TORCH_NPU, **kw)
    return fast, slow


@pytest.mark.parametrize("kw", [{}, {"skip_mstx": True, "skip_cpu_ops": True}])
def test_msgspec_and_orjson_read_the_real_trace_view_alike(monkeypatch, kw):
    pytest.importorskip("msgspec")
    out_dir = realdata(LEVEL1) / OUTPUT_DIR
    (fast, fast_problems), (slow, slow_problems) = _both(out_dir, monkeypatch, **kw)
    assert len(fast) > 10000 and _dump(fast) == _dump(slow) and fast_problems == slow_problems


def _per_event(out_dir: Path, monkeypatch, **kw) -> tuple:
    from npuprof.readers import ascend_trace_view
    monkeypatch.setattr(ascend_trace_view, "_PER_EVENT_ONLY", True)
    try:
        return read_ascend_output(out_dir, writer=AscendWriter.TORCH_NPU, **kw)
    finally:
        monkeypatch.setattr(ascend_trace_view, "_PER_EVENT_ONLY", False)


@pytest.mark.parametrize("kw", [{}, {"skip_mstx": True, "skip_cpu_ops": True}])
@pytest.mark.parametrize("with_kernels", [True, False])
def test_bulk_rules_equal_the_per_event_rules_on_the_real_trace(tmp_path, monkeypatch, kw, with_kernels):
    """Each event decided one by one (the reference) or in bulk per distinct process, category, name and
    phase: the same table; without kernel_details.csv the hardware tasks are read from the trace too."""
    out_dir = realdata(LEVEL1) / OUTPUT_DIR
    if not with_kernels:
        out_dir = tmp_path / OUTPUT_DIR
        out_dir.mkdir()
        (out_dir / TRACE_VIEW).symlink_to(realdata(LEVEL1) / OUTPUT_DIR / TRACE_VIEW)
    bulk, bulk_problems = read_ascend_output(out_dir, writer=AscendWriter.TORCH_NPU, **kw)
    one_by_one, problems = _per_event(out_dir, monkeypatch, **kw)
    assert len(bulk) > 10000 and _dump(bulk) == _dump(one_by_one) and bulk_problems == problems


def test_odd_events_among_plain_ones_keep_their_places(tmp_path, monkeypatch):
    """Every 7th event of the real trace with its pid written as a float (the same process, read one by
    one): its rows come where the event is, hardware and HCCL rows included."""
    events = json.loads((realdata(LEVEL1) / OUTPUT_DIR / TRACE_VIEW).read_text())
    for e in events[::7]:
        if e.get("ph") in ("X", "C", "i") and isinstance(e.get("pid"), int):
            e["pid"] = float(e["pid"])
    out_dir = _run(tmp_path, events)
    bulk, bulk_problems = read_ascend_output(out_dir, writer=AscendWriter.TORCH_NPU)
    one_by_one, problems = _per_event(out_dir, monkeypatch)
    assert len(bulk) > 10000 and _dump(bulk) == _dump(one_by_one) and bulk_problems == problems


def test_the_trace_read_in_small_chunks_is_the_trace_read_whole(tmp_path, monkeypatch):
    pytest.importorskip("msgspec")
    out_dir = realdata(LEVEL1) / OUTPUT_DIR
    whole, _ = read_ascend_output(out_dir, writer=AscendWriter.TORCH_NPU)
    monkeypatch.setattr(trace_decode, "_scanner", None)      # the chunks of the structs, not the compiled scan
    pieces = []
    chunks = trace_decode.event_array_chunks
    monkeypatch.setattr(trace_decode, "event_array_chunks", lambda path, **kw: (pieces.append(1) or c
                                                                                for c in chunks(path, 1 << 14, **kw)))
    from npuprof.readers import ascend_trace_view
    monkeypatch.setattr(ascend_trace_view, "event_array_chunks", trace_decode.event_array_chunks)
    small, _ = read_ascend_output(out_dir, writer=AscendWriter.TORCH_NPU)
    assert len(pieces) > 100 and _dump(small) == _dump(whole)


def _run(tmp_path: Path, events) -> Path:
    out_dir = tmp_path / "rank0_ascend_pt" / OUTPUT_DIR
    out_dir.mkdir(parents=True)
    (out_dir / TRACE_VIEW).write_text(json.dumps(events))
    return out_dir


def test_damaged_events_are_counted_alike_by_both_decoders(tmp_path, monkeypatch):
    pytest.importorskip("msgspec")
    meta = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "CANN"}},
            {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "Python"}}]
    good = {"ph": "X", "name": "AscendCL@aclrtMemcpy", "pid": 1, "tid": 5, "ts": "10.500", "dur": 1.25,
            "args": {"level": "acl", "x": [1, 2]}}
    odd = [good,
           {**good, "ts": None},                    # no time: malformed
           {**good, "ts": "12.000", "dur": "x"},    # an unreadable duration: malformed
           {**good, "pid": [1]},                    # a pid no dict takes: malformed
           {**good, "args": [1]},                   # args not an object: read as none
           {"ph": "C", "name": "HBM", "pid": 2, "tid": 0, "ts": "13.000", "args": {"read": 1.5, "bad": "n/a"}},
           {"ph": "i", "name": "mark", "pid": 2, "tid": "thread 9", "ts": 14},
           {"ph": "X", "name": "ProfilerStep#3", "pid": 2, "tid": 1, "ts": "9.000", "dur": 20},
           {"ph": "X", "cat": "python_function", "name": "f", "pid": 2, "tid": 1, "ts": "9.5", "dur": 1}]
    # one entry that is not an object: msgspec refuses the shape, orjson reads the rest
    for events in (meta + odd, meta + odd + ["junk"]):
        out_dir = _run(tmp_path / str(len(events)), events)
        (fast, fast_problems), (slow, slow_problems) = _both(out_dir, monkeypatch)
        assert _dump(fast) == _dump(slow) and fast_problems == slow_problems
        assert _dump(_per_event(out_dir, monkeypatch)[0]) == _dump(fast)
        bad = 3 + (len(events) - len(meta) - len(odd))
        assert any(f"{bad} malformed event(s) skipped" in p for p in fast_problems), fast_problems
        names = [fast.strings[c] for c in fast["name"].tolist()]
        assert names.count("aclrtMemcpy") == 2 and "HBM read" in names and "HBM bad" not in names


def test_a_cut_trace_is_skipped_with_orjsons_message(tmp_path, monkeypatch):
    pytest.importorskip("msgspec")
    out_dir = _run(tmp_path, [])
    (out_dir / TRACE_VIEW).write_text('[{"ph": "X", "name": "a", "ts": "1.000"')
    (fast, fast_problems), (slow, slow_problems) = _both(out_dir, monkeypatch)
    assert len(fast) == 0 and fast_problems == slow_problems
    assert "not valid JSON, cut short or damaged" in fast_problems[0]


def test_bulk_times_equal_the_per_value_rule():
    rng = random.Random(7)
    texts = [f"{rng.randrange(10 ** rng.randrange(1, 17))}.{rng.randrange(1000):03d}" for _ in range(5000)]
    texts += ["1.2345", "-5.000", " 1.234", "12.345\t", "1e3", "9999999999999999.999", ".123", "123.", "", "x.yz"]
    numbers = [rng.random() * 10 ** rng.randrange(13) for _ in range(5000)] + [0, 3, 2.0005, 1e300, -7.25]

    def one_by_one(values):
        out = []
        for v in values:
            try:
                out.append(us_text_to_ns(v))
            except (TypeError, ValueError, OverflowError):
                out.append(None)
        return out

    for values in (texts, numbers, texts[:50] + numbers[:50] + [None, float("nan"), float("inf"), True]):
        assert us_texts_to_ns(values) == one_by_one(values)


def test_decode_events_keeps_args_as_orjson_parses_them():
    pytest.importorskip("msgspec")
    raw = json.dumps({"traceEvents": [{"ph": "X", "args": {"a": [1, {"b": 2.5}]}}, {"ph": "M"}]}).encode()
    events = decode_events(raw)
    assert events.decoder == "msgspec" and events.args_of(0) == {"a": [1, {"b": 2.5}]}
    assert events.args_of(1) is None and events.dur == [0, 0] and events.name == ["", ""]


def test_decode_json_is_pythons_json():
    for text in ('[{"ts": 1.5, "args": {"Iteration ID": 3}}]', '{"a": NaN}', '["\\ud800"]',
                 '[123456789012345678901234567890]'):
        got, want = decode_json(text.encode()), json.loads(text)
        assert json.dumps(got) == json.dumps(want)
    with pytest.raises(ValueError):
        decode_json(b'[{"ts": 1')


def test_collector_paused_restores_the_collector():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_real_cann_timelines_read_alike_by_both_decoders(monkeypatch):
    pytest.importorskip("msgspec")
    from npuprof.readers.cann_timeline import read_device_timelines
    prof = realdata("mindinsight/tests/utils/resource/profiler/PROF_000001_20230818142704322_COJGGGCANRMICFBC")
    monkeypatch.delenv(DECODER_ENV, raising=False)
    fast = read_device_timelines(prof, warn=lambda m: None)
    monkeypatch.setenv(DECODER_ENV, "orjson")
    slow = read_device_timelines(prof, warn=lambda m: None)
    assert len(fast) > 1000 and _dump(fast) == _dump(slow)


def test_a_chunk_msgspec_refuses_midway_has_the_file_read_whole(tmp_path, monkeypatch):
    """An entry that is not an object near the end: the chunks read so far are dropped and the whole file
    is read by orjson, which counts the entry as malformed."""
    pytest.importorskip("msgspec")
    events = json.loads((realdata(LEVEL1) / OUTPUT_DIR / TRACE_VIEW).read_text()) + [123]
    out_dir = _run(tmp_path, events)
    chunks = trace_decode.event_array_chunks
    from npuprof.readers import ascend_trace_view
    monkeypatch.setattr(ascend_trace_view, "event_array_chunks", lambda path, **kw: chunks(path, 1 << 14, **kw))
    (fast, fast_problems), (slow, slow_problems) = _both(out_dir, monkeypatch)
    assert len(fast) > 10000 and _dump(fast) == _dump(slow) and fast_problems == slow_problems
    assert any("1 malformed event(s) skipped" in p for p in fast_problems)


@pytest.mark.parametrize("text,whole", [("f(1)}, {g(2)", False), ('}, {"ph": "X", "ts": "1.000"}, {' * 2000, True)])
def test_a_cut_inside_a_string_never_changes_the_table(tmp_path, monkeypatch, text, whole):
    """Args of the real trace holding ``}, {`` (an event boundary's bytes) in a string, read in small chunks:
    the table and problems are always orjson's. Short strings: each piece's last boundary is a real one
    (read in chunks); a string longer than a chunk is cut inside, which leaves it open: the chunk is
    refused and the file read whole."""
    pytest.importorskip("msgspec")
    events = json.loads((realdata(LEVEL1) / OUTPUT_DIR / TRACE_VIEW).read_text())
    for e in events[::5]:
        if e.get("ph") == "X" and isinstance(e.get("args"), dict):
            e["args"]["Call stack"] = text
    out_dir = _run(tmp_path, events)
    from npuprof.readers import ascend_trace_view
    monkeypatch.setattr(trace_decode, "_scanner", None)      # the chunks of the structs, not the compiled scan
    chunks, whole_reads = trace_decode.event_array_chunks, []
    monkeypatch.setattr(ascend_trace_view, "event_array_chunks", lambda path, **kw: chunks(path, 1 << 14, **kw))
    decode = ascend_trace_view.decode_events
    monkeypatch.setattr(ascend_trace_view, "decode_events", lambda raw: whole_reads.append(1) or decode(raw))
    (fast, fast_problems), (slow, slow_problems) = _both(out_dir, monkeypatch)
    assert len(fast) > 10000 and _dump(fast) == _dump(slow) and fast_problems == slow_problems == []
    assert json.dumps(text) in "".join(fast.strings)      # kept whole in the args texts
    assert len(whole_reads) == 1 + whole      # orjson's read, and msgspec's where its chunks were refused


def _mindspore_like(seed: int) -> list:
    """Events of every process and category the rules tell apart (MindSpore's host process, python_function,
    cpu_op, CANN, hardware, HCCL, mstx, CPU OP, a derived process, counters, marks), some with odd values."""
    rnd = random.Random(seed)
    procs = [(1, "MindSpore"), (2, "CANN"), (3, "Ascend Hardware"), (4, "HCCL"), (5, "MsTx"), (6, "CPU OP"),
             (7, "Scope Layer"), (8, "Other")]
    events = [{"ph": "M", "name": "process_name", "pid": p, "tid": 0, "args": {"name": n}} for p, n in procs]
    events += [{"ph": "M", "name": "process_labels", "pid": 3, "tid": 0, "args": {"labels": "NPU 2"}},
               {"ph": "M", "name": "thread_name", "pid": 4, "tid": 1, "args": {"name": "Group 3 Communication"}}]
    names = ["Kernel::KernelLaunch::x", "MatMul-op1", "ProfilerStep#3", "AscendCL@aclX", "aclY", "hcom_allReduce__1_0",
             "Notify_Wait", "Default/net/Add-op2"]
    args = [{"level": "acl"}, {"Task Type": "AI_CORE", "Task Id": 3}, {"task type": "Notify", "src rank": 0,
            "dst rank": 1, "size(Byte)": "64", "stream id": "5"}, {"v": 1, "w": "x"}, [1]]
    for k in range(3000):
        pid = rnd.choice([p for p, _ in procs] + [1.0, 3.0, 4.0])      # floats: odd, read one by one
        ev = {"ph": rnd.choice("XXXiC"), "name": rnd.choice(names), "pid": pid, "tid": rnd.choice([1, 9, "9"]),
              "ts": f"{1000 + k}.{rnd.randrange(1000):03d}", "dur": rnd.choice([1.25, 1.25, 0, "x"]),
              "cat": rnd.choice(["python_function", "cpu_op", "MsTx", "x", None]), "args": rnd.choice(args)}
        events.append(ev)
        if rnd.random() < 0.1:
            events.append({"ph": "s", "id": rnd.randrange(50), "cat": "HostToDevice", "pid": pid, "tid": ev["tid"],
                           "ts": ev["ts"]})
    return events


@pytest.mark.parametrize("kw", [{}, {"skip_mstx": True, "skip_cpu_ops": True}])
def test_bulk_rules_equal_the_per_event_rules_on_every_process(tmp_path, monkeypatch, kw):
    out_dir = _run(tmp_path, _mindspore_like(5))
    bulk, bulk_problems = read_ascend_output(out_dir, writer=AscendWriter.TORCH_NPU, **kw)
    one_by_one, problems = _per_event(out_dir, monkeypatch, **kw)
    kinds = set(bulk["kind"].tolist())
    assert len(bulk) > 1000 and len(kinds) >= 7 and _dump(bulk) == _dump(one_by_one) and bulk_problems == problems
    assert any("malformed event(s) skipped" in p for p in problems)


def _run_with_trace(tmp_path: Path, content: bytes) -> Path:
    """The real Level1 run with ``content`` as its trace_view.json (its other files linked)."""
    run = tmp_path / "rank0_ascend_pt"
    (run / OUTPUT_DIR).mkdir(parents=True)
    for f in (realdata(LEVEL1) / OUTPUT_DIR).iterdir():
        if f.name != TRACE_VIEW:
            (run / OUTPUT_DIR / f.name).symlink_to(f)
    for f in realdata(LEVEL1).glob("*.json"):
        (run / f.name).symlink_to(f)
    (run / OUTPUT_DIR / TRACE_VIEW).write_bytes(content)
    return run


@pytest.mark.parametrize("content", [b"garbage\x00\x01", b"\x00" * 4096])
def test_a_trace_view_that_is_no_json_array_is_reported_not_skipped_quietly(tmp_path, content):
    """Garbage or a zero-filled trace_view.json: the other files are read, the trace is named as damaged,
    and analyse exits 3 (never 0 with the trace's events missing)."""
    run = _run_with_trace(tmp_path, content)
    events, problems = read_ascend_output(run / OUTPUT_DIR, writer=AscendWriter.TORCH_NPU)
    assert len(events) > 1000      # kernel_details.csv and the memory files
    assert [p for p in problems if TRACE_VIEW in p and "not a JSON event array" in p and "file skipped" in p]
    done = subprocess.run([sys.executable, "-m", "npuprof", "analyse", "--quiet", "-o", str(tmp_path / "out"),
                           str(run)], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr


def test_npuprofs_own_trace_object_is_left_unread_without_a_problem(tmp_path):
    run = _run_with_trace(tmp_path, b'{"schemaVersion": 1, "traceEvents": []}')
    events, problems = read_ascend_output(run / OUTPUT_DIR, writer=AscendWriter.TORCH_NPU)
    assert len(events) > 1000 and not [p for p in problems if TRACE_VIEW in p]


def test_flow_links_in_bulk_equal_the_dicts_lookups():
    """The launch link of each event found in bulk (by time, then pid and tid) is ``flows.get`` of its key:
    ends sharing a time on other threads, keys absent, and a float pid (a dict key equal to the int) left
    to the per-row lookup."""
    import numpy as np
    from npuprof.readers.ascend_trace_view import _flow_links

    rnd = random.Random(7)
    flows = {(rnd.choice([1, 2, 3]), rnd.choice([10, 11]), rnd.randrange(0, 400, 2)): rnd.randrange(1 << 40)
             for _ in range(300)}
    rows = [(rnd.choice([1, 2, 3, 4]), rnd.choice([10, 11, 12]), rnd.randrange(0, 401)) for _ in range(5000)]
    pid, tid, ts = (np.array(col, dtype=np.int64) for col in zip(*rows))
    got = _flow_links(flows, pid, tid, ts)
    assert got.tolist() == [flows.get(k, -1) for k in rows]
    assert 0 < int((got >= 0).sum()) < len(rows)
    assert _flow_links({**flows, (1.0, 10, 2): 5}, pid, tid, ts) is None
    assert _flow_links({(1, 1, 5): 1, **{(p, 1, 5): p for p in range(2, 40)}}, pid, tid, ts) is None   # 39 ends at once


def test_pairs_are_np_uniques_rows_for_any_int64():
    """Small non-negative codes (one dense key) and any int64 (pids, tids: negative, past 2**62): the pairs
    in np.unique(axis=0)'s order, each row's pair."""
    import numpy as np
    from npuprof.readers.ascend_trace_view import _pairs

    rng = np.random.default_rng(3)
    for a, b in ((rng.integers(0, 50, 4000), rng.integers(0, 9, 4000)),
                 (rng.choice([-5, 0, 7, 1 << 62, -(1 << 63)], 4000), rng.choice([3, -1, (1 << 63) - 1], 4000))):
        pairs, at = _pairs(a, b)
        want, want_at = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)
        assert pairs == [tuple(p) for p in want.tolist()] and at.tolist() == want_at.reshape(-1).tolist()
    pairs, at = _pairs(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert pairs == [] and len(at) == 0


def test_launch_flows_are_the_links_of_every_flow_read_at_once(tmp_path):
    """Only the chosen category's times converted: the links flow_ends_of_columns gives from every flow
    event, on the real trace's flows (four categories), with the preferred category absent, with a
    damaged category (a list), and with no launch category at all."""
    from npuprof.readers.ascend_trace_view import _launch_flows, load_trace
    from npuprof.traceflows import LAUNCH_FLOW_CATS, flow_ends_of_columns, launch_category

    flows = load_trace(realdata(LEVEL1) / OUTPUT_DIR / TRACE_VIEW, []).flows
    cats = set(flows["cat"])
    assert {"HostToDevice", "async_npu"} <= cats and len(cats) > 2

    def every(f: dict) -> dict:
        return flow_ends_of_columns(f["cat"], f["pid"], f["tid"], us_texts_to_ns(f["ts"]), f["id"],
                                    LAUNCH_FLOW_CATS)

    def without(f: dict, cat: str) -> dict:
        keep = [i for i, c in enumerate(f["cat"]) if c != cat]
        return {k: [v[i] for i in keep] for k, v in f.items()}

    damaged = {k: list(v) for k, v in flows.items()}
    damaged["cat"][0] = ["HostToDevice"]
    for f in (flows, without(flows, "HostToDevice"), damaged, without(without(flows, "HostToDevice"), "async_npu")):
        assert _launch_flows(f) == every(f)
    assert len(_launch_flows(flows)) > 400 and _launch_flows({}) == {}
    assert launch_category(damaged["cat"], LAUNCH_FLOW_CATS) == "HostToDevice"
    assert launch_category([["HostToDevice"], "x"], LAUNCH_FLOW_CATS) is None
