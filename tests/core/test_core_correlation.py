"""Launch links (the ``corr`` column): kept by the table operations and the raw
store (old raw files without the column still read), written as Kineto
``correlation`` args and ``s``/``f`` flows in both trace forms, and as
``connectionId`` in the sqlite export."""
import io
import json
import sqlite3
import struct
import zlib
from collections import defaultdict

import numpy as np
import pytest

from npuprof import rawstore
from npuprof.export import textrows
from npuprof.events import EventKind, EventTable, offset_corr
from npuprof.export import trace_array, trace_json

BASE = 1_795_300_000_000_000_000
DEV_PID = 1 << 24


def linked_table(n_launch=400, seed=1):
    """Host launches (API) each followed by 0-3 kernels carrying its id; some host
    events and kernels have an id whose other end is absent; unlinked noise."""
    rng = np.random.default_rng(seed)
    rows = []   # ts, dur, kind, device, stream, tid, corr, name
    t = BASE
    for i in range(n_launch):
        cid = 1000 + 7 * i
        rows.append((t, 900, EventKind.API, -1, -1, 11, cid, f"launch{i}"))
        rows.append((t, 5000, EventKind.OP, -1, -1, 11, -1, f"op{i}"))      # the enclosing op: no link
        for k in range(int(rng.integers(0, 4))):
            rows.append((t + 2000 + 100 * k, 50, EventKind.KERNEL, int(rng.integers(0, 2)), int(rng.integers(1, 4)),
                         0, cid, f"kernel{i}.{k}"))
        t += 10_000
    rows.append((t, 10, EventKind.API, -1, -1, 11, 5, "orphan launch"))       # no kernel with id 5
    rows.append((t + 5, 10, EventKind.KERNEL, 0, 2, 0, 6, "orphan kernel"))  # no launch with id 6
    rows.append((t + 9, 0, EventKind.MARK, -1, -1, 11, 1000, "a mark never links"))
    ts, dur, kind, dev, stream, tid, corr, name = zip(*rows)
    return EventTable.from_records(ts=list(ts), dur=list(dur), kind=[int(k) for k in kind], device=list(dev),
                                   stream=list(stream), tid=list(tid), pid=77, corr=list(corr), name=list(name),
                                   type="T").sorted()


def expected_links(ev):
    """(launch row, kernel row) pairs, computed plainly."""
    launch = {}
    for i in range(len(ev)):
        c, k = int(ev["corr"][i]), int(ev["kind"][i])
        if c >= 0 and ev["device"][i] < 0 and k not in (EventKind.MARK, EventKind.COUNTER, EventKind.MEMORY):
            if c not in launch or ev["dur"][i] < ev["dur"][launch[c]]:
                launch[c] = i
    return [(launch[int(ev["corr"][i])], i) for i in range(len(ev))
            if ev["device"][i] >= 0 and int(ev["corr"][i]) in launch]


def render(ev, writer=trace_json.write_trace_to, **kw):
    buf = io.BytesIO()
    writer(buf, ev, **kw)
    doc = json.loads(buf.getvalue())
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def where(ev, i, base):
    dev = int(ev["device"][i])
    pid = DEV_PID + dev if dev >= 0 else int(ev["pid"][i])
    tid = max(int(ev["stream"][i]), 0) if dev >= 0 else int(ev["tid"][i])
    return pid, tid, round((int(ev["ts"][i]) - base) / 1000, 3)


def check_trace(ev, events, base, cats):
    """Every link once per flow category in ``cats``, flow ids unique in the file."""
    pairs = expected_links(ev)
    assert pairs, "the fixture has links"
    name_of = lambda i: ev.strings[ev["name"][i]]  # noqa: E731
    linked = {i for p in pairs for i in p}
    spans = {e["name"]: e for e in events if e["ph"] == "X"}
    for i in range(len(ev)):
        e = spans.get(name_of(i))
        if e is None:
            continue
        if i in linked:
            assert e["args"]["correlation"] == int(ev["corr"][i]), name_of(i)
        else:
            assert "correlation" not in e["args"], name_of(i)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    n = len(pairs) * len(cats)
    assert len(starts) == len(ends) == n == len([e for e in events if e["ph"] == "s"])
    assert set(starts) == set(ends) == set(range(1, n + 1))     # ids unique in the file
    for cat in cats:
        got = set()
        for fid, s in starts.items():
            if s["cat"] != cat:
                continue
            f = ends[fid]
            assert f["cat"] == cat and f["bp"] == "e" and "bp" not in s
            got.add(((s["pid"], s["tid"], s["ts"]), (f["pid"], f["tid"], f["ts"])))
        assert got == {(where(ev, a, base), where(ev, b, base)) for a, b in pairs}, cat


@pytest.mark.parametrize("chunk", [None, 97])
def test_kineto_trace_has_correlation_and_flows(monkeypatch, chunk):
    if chunk:   # many chunks: flow ids must still be unique and every pair present
        monkeypatch.setattr(trace_json, "CHUNK", chunk)
        monkeypatch.setattr(textrows, "MATRIX_BYTES", 1)
        monkeypatch.setattr(trace_json, "BACKGROUND_MIN_EVENTS", 0)
    ev = linked_table()
    buf = io.BytesIO()
    trace_json.write_trace_to(buf, ev)
    doc = json.loads(buf.getvalue())
    check_trace(ev, doc["traceEvents"], doc["baseTimeNanoseconds"], ("ac2g",))
    assert {e["name"] for e in doc["traceEvents"] if e["ph"] in "sf"} == {"ac2g"}


def test_array_trace_has_host_to_device_and_async_npu_flows():
    ev = linked_table(120)
    events = render(ev, trace_array.write_trace_array_to, host_pid=77)
    check_trace(ev, events, trace_json.base_time_ns(ev), ("HostToDevice", "async_npu"))


@pytest.mark.parametrize("drop", [None, "HostToDevice"])
def test_the_array_form_read_back_keeps_every_link(tmp_path, drop):
    """npuprof's array form read by the MindSpore reader (the layout MindSpore writes): the same launch ->
    kernel pairs, from the HostToDevice flows, or from the async_npu ones when a file has no other."""
    from npuprof.readers.ascend_output import read_ascend_output

    ev = linked_table(120)
    out = tmp_path / "ASCEND_PROFILER_OUTPUT"
    out.mkdir()
    events = [e for e in render(ev, trace_array.write_trace_array_to, host_pid=77)
              if drop is None or e.get("cat") != drop]
    (out / "trace_view.json").write_text(json.dumps(events))
    back, problems = read_ascend_output(out)
    assert problems == []

    def pairs(t):
        name = lambda i: t.strings[t["name"][i]]  # noqa: E731
        return sorted((name(a), name(b)) for a, b in expected_links(t))

    assert pairs(back) == pairs(ev) and len(pairs(ev)) > 100


def test_long_rows_carry_correlation_too():
    """Rows with very long text are formatted one by one: the link must not get lost there."""
    long = "x" * (trace_json.LONG_ROW + 10)
    ev = EventTable.from_records(ts=[BASE, BASE + 10], dur=[5, 5], kind=[int(EventKind.API), int(EventKind.KERNEL)],
                                 device=[-1, 0], stream=[-1, 3], corr=[42, 42], name=[long, "k"])
    events = render(ev)
    spans = {e["name"]: e for e in events if e["ph"] == "X"}
    assert spans[long]["args"]["correlation"] == spans["k"]["args"]["correlation"] == 42
    assert sorted(e["ph"] for e in events if e["ph"] in "sf") == ["f", "s"]


def test_unlinked_tables_get_no_correlation_nor_flows():
    ev = linked_table(50).with_column("corr", np.full(len(linked_table(50)), -1, dtype=np.int64))
    events = render(ev)
    assert not [e for e in events if e["ph"] in ("s", "f")]
    assert not [e for e in events if "correlation" in e.get("args", {})]
    # ids on one side only: no partner in the table, nothing written
    host_only = linked_table(50).select(linked_table(50)["device"] < 0)
    assert trace_json.launch_links(host_only) is None
    assert not [e for e in render(host_only) if "correlation" in e.get("args", {})]


def test_innermost_host_event_is_the_launch():
    """Nested host calls sharing an id (API levels): the flow starts at the shortest one."""
    ev = EventTable.from_records(ts=[BASE, BASE + 1, BASE + 50], dur=[100, 20, 5], device=[-1, -1, 0],
                                 stream=[-1, -1, 2], kind=[int(EventKind.API)] * 2 + [int(EventKind.KERNEL)],
                                 corr=[9, 9, 9], name=["aclopExecute", "launch", "k"])
    linked, src, dst = trace_json.launch_links(ev)
    assert src.tolist() == [1] and dst.tolist() == [2] and linked.tolist() == [False, True, True]


def test_table_operations_keep_links():
    a = EventTable.from_records(ts=[30, 10], corr=[5, -1], name=["a", "b"])
    b = EventTable.from_records(ts=[20], name=["c"])
    assert b["corr"].tolist() == [-1] and EventTable.empty()["corr"].dtype == np.int64
    both = EventTable.concat([a, b])
    assert both["corr"].tolist() == [5, -1, -1]
    assert both.sorted()["corr"].tolist() == [-1, -1, 5]
    assert both.select(np.array([0]))["corr"].tolist() == [5]
    assert both.has_links() and not b.has_links()
    consumed = EventTable.concat([EventTable.from_records(ts=[1], corr=[3]), b], consume=True)
    assert consumed["corr"].tolist() == [3, -1]


def test_offset_corr_keeps_sources_apart():
    x = EventTable.from_records(ts=[0, 1, 2], corr=[1, 2, -1])
    y = EventTable.from_records(ts=[3, 4], corr=[1, 2])
    merged = EventTable.concat(offset_corr([x, y]))
    assert merged["corr"].tolist() == [1, 2, -1, 3, 4]     # the first source keeps its own ids
    z = EventTable.from_records(ts=[5], corr=[40])          # above the others already: kept as recorded
    assert EventTable.concat(offset_corr([EventTable.from_records(ts=[0], corr=[7]), z]))["corr"].tolist() == [7, 40]


# -- raw store ---------------------------------------------------------------------------------------
def legacy_payload(table):
    """A chunk as npuprof wrote it before the corr column existed."""
    header = json.dumps({"n": len(table), "strings": table.strings}).encode()
    parts = [struct.pack("<I", len(header)), header]
    order = ("ts", "dur", "kind", "pid", "tid", "device", "stream", "value", "step", "name", "type", "source", "args")
    dtypes = {"ts": "<i8", "dur": "<i8", "kind": "u1", "pid": "<i8", "tid": "<i8", "device": "<i2", "stream": "<i4",
              "value": "<f8", "step": "<i4"}
    for k in order:
        parts.append(np.ascontiguousarray(table.cols[k], dtype=dtypes.get(k, "<i4")).tobytes())
    return b"".join(parts)


def test_raw_files_without_the_column_still_read(tmp_path):
    t = EventTable.from_records(ts=[1, 2, 3], dur=[4, 5, 6], kind=int(EventKind.OP), device=[-1, 0, 1],
                                name=["a", "b", "a"], source="s", args=['{"x": 1}', "", ""])
    payload = legacy_payload(t)
    d = tmp_path / "NPUPROF"
    d.mkdir()
    (d / "events_1_00001.npr").write_bytes(rawstore.FRAME.pack(rawstore.MAGIC, len(payload), zlib.crc32(payload))
                                           + payload)
    got, report = rawstore.read_raw_dir(d)
    assert not report.problems and report.events == 3
    assert got["corr"].tolist() == [-1, -1, -1]
    assert got.column_strings("name") == ["a", "b", "a"] and got["device"].tolist() == [-1, 0, 1]
    # and a chunk without links is still written in exactly that layout (no extra bytes per host event)
    assert rawstore.encode_chunk(t) == payload


def test_raw_chunks_with_links_round_trip(tmp_path):
    ev = linked_table(30)
    w = rawstore.RawWriter(tmp_path / "NPUPROF")
    w.append(ev.select(slice(0, 40)))
    w.append(ev.select(slice(40, None)))
    w.append(EventTable.from_records(ts=[BASE * 2], name=["host only"]))
    w.close()
    got, report = rawstore.read_raw_dir(tmp_path / "NPUPROF")
    assert not report.problems
    assert got["corr"].tolist() == ev["corr"].tolist() + [-1]
    assert got["ts"].tolist()[:-1] == ev["ts"].tolist()


@pytest.mark.parametrize("cols", [["corr", "corr"], ["nope"], "corr", [1]])
def test_bad_optional_column_list_is_an_undecodable_record(cols):
    ev = EventTable.from_records(ts=[1], corr=[3])
    payload = rawstore.encode_chunk(ev)
    (hlen,) = struct.unpack_from("<I", payload)
    head = json.loads(payload[4:4 + hlen])
    assert head["cols"] == ["corr"]
    head["cols"] = cols
    bad_header = json.dumps(head).encode()
    bad = struct.pack("<I", len(bad_header)) + bad_header + payload[4 + hlen:]
    with pytest.raises(ValueError):
        rawstore.decode_chunk(bad)
    report = rawstore.ReadReport()
    frame = rawstore.FRAME.pack(rawstore.MAGIC, len(bad), zlib.crc32(bad)) + bad
    assert rawstore.parse_records(frame, "seg", report) == [] and "undecodable" in report.problems[0]


# -- sqlite -----------------------------------------------------------------------------------------
def test_ascend_db_carries_the_launch_links(tmp_path):
    """Each linked host operator's CONNECTION_IDS entry and its device tasks' TASK.connectionId are its corr."""
    from npuprof.analysis.result import AnalysisResult
    from npuprof.export.ascend_db_writer import write_ascend_db
    from npuprof.runinfo import RunInfo

    ev = linked_table(20)
    res = AnalysisResult(run_dir=tmp_path, info=RunInfo(run_dir=tmp_path), events=ev)
    con = sqlite3.connect(write_ascend_db(res, tmp_path))
    host = con.execute("SELECT s.value, c.connectionId FROM PYTORCH_API p JOIN STRING_IDS s ON s.id = p.name "
                       "LEFT JOIN CONNECTION_IDS c ON c.id = p.connectionId").fetchall()
    tasks = con.execute("SELECT s.value, t.connectionId FROM TASK t JOIN COMPUTE_TASK_INFO c "
                        "ON c.globalTaskId = t.globalTaskId JOIN STRING_IDS s ON s.id = c.name").fetchall()
    con.close()
    by_name = defaultdict(list)
    for name, cid in host + tasks:
        by_name[name].append(cid)
    for i in range(len(ev)):
        c = int(ev["corr"][i])
        if ev["kind"][i] in (EventKind.OP, EventKind.API, EventKind.KERNEL):   # API level "T": not CANN's
            unlinked = 4294967295 if ev["kind"][i] == EventKind.KERNEL else None
            assert by_name[ev.strings[ev["name"][i]]] == [c if c >= 0 else unlinked]


# -- the link column costs no memory when nothing is linked ------------------------------------------------
def _host_chunk(n, t0=0):
    return EventTable.from_codes({"ts": np.arange(t0, t0 + n, dtype=np.int64)[::-1].copy()}, {}, [""])


def test_an_unlinked_corr_column_stays_a_zero_byte_view_through_the_pipeline_operations():
    from npuprof.events import is_constant_column
    parts = [_host_chunk(1000, 1000 * i) for i in range(5)] + [_host_chunk(1, 9000)]
    table = EventTable.concat(parts, consume=True)
    assert is_constant_column(table["corr"]) and table["corr"].strides == (0,)
    table = table.sorted(release=True)
    assert is_constant_column(table["corr"]) and (np.diff(table["ts"]) >= 0).all()
    picked = table.select(table["ts"] % 2 == 0)
    assert is_constant_column(picked["corr"]) and len(picked["corr"]) == len(picked) == 2501   # 0..4999 and 9000
    assert not table.has_links() and set(picked["corr"].tolist()) == {-1}


def test_linked_and_unlinked_parts_concatenate_to_real_values():
    linked = EventTable.from_records(ts=[5, 6], corr=[3, -1])
    table = EventTable.concat([_host_chunk(4), linked, EventTable.from_records(ts=[7, 8], corr=7)])
    assert table["corr"].tolist() == [-1, -1, -1, -1, 3, -1, 7, 7] and table["corr"].flags.writeable
    assert table.select(np.array([4, 6]))["corr"].tolist() == [3, 7]


def test_flow_ends_share_a_link_per_connected_call_and_number_odd_ids_after_the_rest():
    from npuprof.traceflows import flow_ends

    def flow(fid, src_ts, dst_ts, cat="HostToDevice"):
        return [{"ph": "s", "id": fid, "cat": cat, "pid": 1, "tid": 1, "ts": src_ts},
                {"ph": "f", "id": fid, "cat": cat, "pid": 2, "tid": 1, "ts": dst_ts, "bp": "e"}]

    events = flow("a", 1, 2) + flow(5, 3, 4) + flow("b", 5, 6) + flow(9, 5, 7) + flow(3, 8, 9, cat="async_npu")
    ends = flow_ends(events, ("HostToDevice", "async_npu"), lambda t: t)
    assert ends == {(1, 1, 1): 10, (2, 1, 2): 10,                   # a text id: after the largest numeric one
                    (1, 1, 3): 5, (2, 1, 4): 5,
                    (1, 1, 5): 9, (2, 1, 6): 9, (2, 1, 7): 9}       # one call, two tasks: one link
    assert flow_ends(events, ("async_npu",), lambda t: t) == {(1, 1, 8): 3, (2, 1, 9): 3}
    assert flow_ends(events, ("MsTx",), lambda t: t) == {}
    assert flow_ends([{"ph": "s", "id": 1, "cat": "HostToDevice", "ts": "x"}], ("HostToDevice",), lambda t: None) == {}
    damaged = [{"ph": "s", "id": [1], "cat": ["x"], "pid": {}, "tid": None, "ts": 1}] + flow(4, 1, 2)
    assert flow_ends(damaged, ("HostToDevice",), lambda t: t) == {(1, 1, 1): 4, (2, 1, 2): 4}


@pytest.mark.parametrize("const", [{"ts": 5}, {"pid": "x"}, {"pid": 1.5}, {"device": 1 << 40}, {"nope": 1},
                                   {"name": 9}, [1], {"value": True}, {"stream": -(1 << 40)}])
def test_bad_constant_columns_are_an_undecodable_record(const):
    """A record's "const" header entry is checked like its columns: a bad one is reported, never raised."""
    from npuprof.events import constant_column

    ev = EventTable.from_records(ts=[1, 2], name=["a", "a"])
    cols = dict(ev.cols)
    for key in ("pid", "device", "value", "stream", "name"):   # one-value columns, as the recorder passes them
        cols[key] = constant_column(cols[key][0], 2, cols[key].dtype)
    payload = rawstore.encode_chunk(EventTable(cols, ev.strings))
    (hlen,) = struct.unpack_from("<I", payload)
    head = json.loads(payload[4:4 + hlen])
    assert set(head["const"]) == {"pid", "device", "value", "stream", "name"}
    assert rawstore.decode_chunk(payload).column_strings("name") == ["a", "a"]
    head["const"] = {**head["const"], **const} if isinstance(const, dict) else const
    bad_header = json.dumps(head).encode()
    bad = struct.pack("<I", len(bad_header)) + bad_header + payload[4 + hlen:]
    with pytest.raises((ValueError, OverflowError)):
        rawstore.decode_chunk(bad)
    report = rawstore.ReadReport()
    frame = rawstore.FRAME.pack(rawstore.MAGIC, len(bad), zlib.crc32(bad)) + bad
    assert rawstore.parse_records(frame, "seg", report) == [] and "undecodable" in report.problems[0]
