"""The vectorised trace writer: every event exactly as the Kineto conventions say,
whatever the chunking, with long rows (call stacks) and mixed kinds."""
import io
import json
import re
from collections import Counter

import numpy as np
import pytest

from npuprof.export import textrows
from npuprof.events import EventKind, EventTable
from npuprof.export import trace_json

DAY = 86_400 * 10**9
CAT = {EventKind.STEP: "user_annotation", EventKind.RANGE: "user_annotation", EventKind.OP: "cpu_op",
       EventKind.KERNEL: "kernel", EventKind.API: "cpu_op", EventKind.COMM: "collective_comm",
       EventKind.STACK: "python_function"}


def make_events(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    base = 1_795_300_000_000_000_000
    kinds = rng.choice([int(k) for k in EventKind], n)
    names = ["step", 'quote"d', "comma,name", "uni-ç", "nl\nname", "x" * 700, "MatMul-op1", "ProfilerStep#3"]
    args = ["", '{"a": 1}', "plain text", '{"Call stack": "' + "f.py:1(g);" * 80 + '"}', "{bad json"]
    device = np.where(rng.random(n) < 0.2, rng.integers(0, 3, n), -1)
    return EventTable.from_records(
        ts=base + np.sort(rng.integers(0, 10**12, n)), dur=rng.integers(0, 10**9, n), kind=kinds,
        pid=rng.choice([100, 200], n), tid=rng.choice([1, 2, 3], n), device=device,
        stream=np.where(device >= 0, rng.integers(0, 5, n), -1), value=rng.random(n) * 1e6,
        step=rng.integers(-1, 50, n), name=[names[i] for i in rng.integers(0, len(names), n)],
        type=[names[i] for i in rng.integers(0, len(names), n)], args=[args[i] for i in rng.integers(0, 5, n)])


def expected_event(ev, i, base):
    """The event a Kineto reader should find, built independently of the writer."""
    s = ev.strings
    kind = int(ev["kind"][i])
    dev = int(ev["device"][i])
    pid = (1 << 24) + dev if dev >= 0 else int(ev["pid"][i])
    tid = max(int(ev["stream"][i]), 0) if dev >= 0 else int(ev["tid"][i])
    ts = round((int(ev["ts"][i]) - base) / 1000, 3)
    raw_args = s[ev["args"][i]]
    try:
        parsed = json.loads(raw_args) if raw_args.startswith("{") else None
    except ValueError:
        parsed = None
    own = parsed if parsed is not None else ({} if not raw_args else {"info": raw_args})
    if kind == EventKind.COUNTER:
        return {"ph": "C", "name": s[ev["name"][i]], "pid": pid, "tid": tid, "ts": ts,
                "args": {"value": float(ev["value"][i])}}
    if kind == EventKind.MARK:
        return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": s[ev["name"][i]], "pid": pid, "tid": tid,
                "ts": ts, "args": own}
    if kind == EventKind.MEMORY:
        return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": pid, "tid": tid,
                "ts": ts, "args": {"Bytes": float(ev["value"][i])}}
    a = {"Op Type": s[ev["type"][i]], "Step": int(ev["step"][i])}
    if dev >= 0:
        a.update({"device": dev, "stream": tid})
    a.update(own)
    return {"ph": "X", "cat": CAT.get(EventKind(kind), "cpu_op"), "name": s[ev["name"][i]], "pid": pid,
            "tid": tid, "ts": ts, "dur": round(int(ev["dur"][i]) / 1000, 3), "args": a}


def key(e):
    return json.dumps(e, sort_keys=True)


@pytest.mark.parametrize("chunk", [None, 257])
def test_every_event_written_as_expected(monkeypatch, chunk):
    if chunk:  # force many chunks, and chunk edges inside runs of long rows
        monkeypatch.setattr(trace_json, "CHUNK", chunk)
        monkeypatch.setattr(textrows, "MATRIX_BYTES", 1)
        monkeypatch.setattr(trace_json, "BACKGROUND_MIN_EVENTS", 0)   # the writer thread too
    ev = make_events().sorted()
    buf = io.BytesIO()
    trace_json.write_trace_to(buf, ev, rank=3, world_size=4, metadata={"k": "v"}, host_pid=100)
    text = buf.getvalue().decode()
    doc = json.loads(text)
    assert re.search(r'"rank":\s+(\d+)', text).group(1) == "3"
    base = doc["baseTimeNanoseconds"]
    assert base % DAY == 0 and base <= int(ev["ts"].min())
    events = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    assert events[-1]["name"] == "Record Window End"
    got = Counter(key(e) for e in events[:-1])
    want = Counter(key(expected_event(ev, i, base)) for i in range(len(ev)))
    assert got == want
    # numbers are JSON numbers with exactly 3 decimals (ns precision), never strings
    for m in re.finditer(r'"(ts|dur)":([^,}]+)', text):
        assert re.fullmatch(r"-?\d+\.\d{3}", m.group(2)), m.group(0)


def test_metadata_names_every_process_and_thread():
    ev = make_events(500)
    buf = io.BytesIO()
    trace_json.write_trace_to(buf, ev, host_pid=999)
    meta = [e for e in json.loads(buf.getvalue())["traceEvents"] if e["ph"] == "M"]
    procs = {e["pid"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
    host = ev["device"] < 0
    assert procs == {100, 200, 999} | {(1 << 24) + d for d in set(ev["device"][~host].tolist())}
    assert threads == set(zip(ev["pid"][host].tolist(), ev["tid"][host].tolist()))


def test_non_finite_counter_values_stay_valid_json():
    ev = EventTable.from_records(ts=[10, 20, 30], kind=EventKind.COUNTER, name="cpu",
                                 value=[float("nan"), float("inf"), 1.5])
    buf = io.BytesIO()
    trace_json.write_trace_to(buf, ev)
    values = [e["args"]["value"] for e in json.loads(buf.getvalue())["traceEvents"] if e["ph"] == "C"]
    assert values == [None, None, 1.5]


def test_empty_table_is_a_valid_trace():
    buf = io.BytesIO()
    trace_json.write_trace_to(buf, EventTable.empty(), rank=0)
    doc = json.loads(buf.getvalue())
    assert [e["name"] for e in doc["traceEvents"] if e["ph"] != "M"] == ["Record Window End"]
