"""The compiled trace_view.json scanner (``_tracescan.c``'s ``scan_array``) against the decoder it stands in
for (msgspec's event structs, chunk by chunk, made compact in Python): the same compact trace and the same
event table on the real torch_npu traces and on generated ones full of unusual values; every file the
scanner does not take (a shape the structs read otherwise, an event the per-event rules read) declined, and
then read as before."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npuprof.compiled import compiled_status
from npuprof.readers import trace_decode
from npuprof.readers.ascend_output import OUTPUT_DIR, TRACE_VIEW, AscendWriter, read_ascend_output
from npuprof.readers.ascend_trace_view import CompactTrace, load_trace
from npuprof.readers.trace_decode import scan_event_array
from damage import damaged_json
from realdata import realdata
from test_trace_view_columnar import _mindspore_like

pytest.importorskip("msgspec")
STATUS = compiled_status("npuprof.readers._tracescan")
pytestmark = pytest.mark.skipif(not STATUS.loaded, reason=f"npuprof.readers._tracescan is not in use: {STATUS.reason}")

SAMPLES = ["msinsight/test/data/pytorch/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
           "msinsight/test/data/pytorch/text/level1/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json",
           "msprof-analyze/test/ut/advisor/timeline_advice/trace_view.json",
           "msprof-analyze/test/ut/advisor/advisor_backend/timeline_advice/trace_view.json"]


@pytest.fixture(autouse=True)
def _msgspec_decoder(monkeypatch):
    monkeypatch.delenv(trace_decode.DECODER_ENV, raising=False)


def _typed(values: list) -> list:
    return [(type(v).__name__, v) for v in values]


def _values(t: CompactTrace) -> dict:
    """What a compact trace holds, by value (codes replaced by what they stand for, with their types)."""
    c = t.columns
    out = {"entries": len(t), "meta": repr(t.meta), "flows": {k: _typed(v) for k, v in t.flows.items()},
           "odd": t.odd, "not_objects": t.not_objects, "raw_args": t.raw_args, "columns": sorted(c)}
    if c:
        out.update({k: c[k].tolist() for k in ("phase", "plain", "ts", "dur", "pid", "tid")})
        out["name"] = _typed([t.names[k] for k in c["name"].tolist()])
        out["cat"] = _typed([t.cats[k] for k in c["cat"].tolist()])
        out["arg"] = [bytes(t.args[k]) for k in c["arg"].tolist()]
        out["process"] = _typed([t.pids[k] for k in c["pidc"].tolist()])
    return out


def _structs(raw: bytes) -> CompactTrace:
    """The reference: the structs of the whole array as one chunk (what event_array_chunks gives)."""
    trace = CompactTrace()
    trace.add_structs(trace_decode._ANY_EVENTS_DECODER.decode(raw))
    return trace.finish()


def _scanned(raw: bytes):
    s = scan_event_array(raw)
    return None if s is None else CompactTrace.of_scanned(s)


def _dump(table) -> tuple:
    return {k: table[k].tolist() for k in table.cols}, list(table.strings)


def _tables(out_dir: Path, monkeypatch, **kw) -> tuple:
    """(the scanner's table and problems, the structs' table and problems)."""
    fast = read_ascend_output(out_dir, writer=AscendWriter.TORCH_NPU, **kw)
    with monkeypatch.context() as m:
        m.setattr(trace_decode, "_scanner", None)
        slow = read_ascend_output(out_dir, writer=AscendWriter.TORCH_NPU, **kw)
    return fast, slow


def _run(tmp_path: Path, content: bytes) -> Path:
    out_dir = tmp_path / "rank0_ascend_pt" / OUTPUT_DIR
    out_dir.mkdir(parents=True)
    (out_dir / TRACE_VIEW).write_bytes(content)
    return out_dir


@pytest.mark.parametrize("sample", SAMPLES)
def test_real_traces_scan_to_the_structs_compact_trace(sample):
    raw = realdata(sample).read_bytes()
    scanned = _scanned(raw)
    assert scanned is not None, "the scanner declined a real trace_view.json"
    assert len(scanned) > 3000 and _values(scanned) == _values(_structs(raw))
    assert load_trace(realdata(sample), []).columns["ts"].tolist() == scanned.columns["ts"].tolist()


@pytest.mark.parametrize("kw", [{}, {"skip_mstx": True, "skip_cpu_ops": True}])
@pytest.mark.parametrize("run", ["rank0_ascend_pt", "rank1_ascend_pt"])
def test_real_runs_read_to_the_same_table(monkeypatch, run, kw):
    out_dir = realdata(f"msinsight/test/data/pytorch/text/level1/{run}") / OUTPUT_DIR
    (fast, fast_problems), (slow, slow_problems) = _tables(out_dir, monkeypatch, **kw)
    assert len(fast) > 10000 and _dump(fast) == _dump(slow) and fast_problems == slow_problems


def _plain(events: list) -> list:
    """``events`` with every value the per-event rules would take one by one made an ordinary one."""
    out = []
    for e in events:
        e = dict(e)
        if isinstance(e.get("pid"), float):
            e["pid"] = int(e["pid"])
        if isinstance(e.get("tid"), str):
            e["tid"] = int(e["tid"])
        if e.get("dur") == "x":
            e["dur"] = "2.5"
        out.append(e)
    return out


@pytest.mark.parametrize("kw", [{}, {"skip_mstx": True, "skip_cpu_ops": True}])
def test_every_process_and_category_reads_to_the_same_table(tmp_path, monkeypatch, kw):
    """MindSpore's host process, python_function, cpu_op, CANN, hardware, HCCL, mstx, CPU OP, a derived
    process, counters and marks, flows: taken by the scanner, the same table as the structs'."""
    events = _plain(_mindspore_like(11))
    raw = json.dumps(events, indent=1).encode()
    assert scan_event_array(raw) is not None
    (fast, fast_problems), (slow, slow_problems) = _tables(_run(tmp_path, raw), monkeypatch, **kw)
    assert len(fast) > 1000 and len(set(fast["kind"].tolist())) >= 7
    assert _dump(fast) == _dump(slow) and fast_problems == slow_problems


UNUSUAL_BUT_TAKEN = [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "CANN"}},
    {"name": "process_labels", "pid": 2, "args": {"labels": "NPU 3"}, "ph": "M"},
    {"ph": "X", "name": "AscendCL@aclrtMemcpy", "pid": 1, "tid": 5, "ts": "10.5", "dur": 1.25,
     "args": {"level": "acl", "x": [1, {"y": "\u00e9}, {"}]}},
    {"ph": "X", "name": "na\u00efve \"quoted\" \\ \U0001F600", "pid": -(2**63), "tid": 2**63 - 1, "ts": "12",
     "dur": "0.0005", "cat": "cpu_op"},
    {"ph": "X", "name": "", "pid": 0, "tid": 0, "ts": "-3.25", "dur": "1.23456", "cat": None, "args": None},
    {"ph": "X", "pid": 0, "tid": 0, "ts": "1736408883688177.930", "cat": ""},             # no name, no dur
    {"ph": "X", "name": "numbers", "pid": 0, "tid": 0, "ts": 1736408883688177, "dur": 0.0015, "args": []},
    {"ph": "X", "name": "floats", "pid": 0, "tid": 0, "ts": 1736408883688177.93, "dur": 2.5e-4, "args": "text"},
    {"ph": "X", "name": "other forms", "pid": 0, "tid": 0, "ts": "1e3", "dur": " 12.000\t", "id": 5},
    {"ph": "X", "name": "bool", "pid": 0, "tid": 0, "ts": True, "dur": False},
    {"ph": "X", "name": "huge", "pid": 0, "tid": 0, "ts": 4e15, "dur": "9223372036854775.807"},
    {"ph": "X", "name": "many digits", "pid": 0, "tid": 0, "ts": "0001234567890123456.5", "dur": "1.0004999"},
    {"ph": "C", "name": "HBM", "pid": 2, "tid": 0, "ts": "13.000", "dur": None, "args": {"read": 1.5}},
    {"ph": "i", "name": "mark", "pid": 2, "tid": 9, "ts": 14, "s": "t", "dur": "n/a"},
    {"ph": "I", "name": "Mark", "pid": 2, "tid": 9, "ts": "15.000"},
    {"ph": "s", "id": 1, "cat": "HostToDevice", "pid": 1, "tid": 5, "ts": "10.5", "bp": "e"},
    {"ph": "f", "id": "1-x", "cat": "HostToDevice", "pid": 2, "tid": "9", "ts": 14, "bp": "e"},
    {"ph": "B", "name": "not read", "pid": "x", "ts": None},
    {"ph": None},
    {"ph": 1, "name": 2},
    {},
]


def test_unusual_values_are_scanned_as_the_structs_read_them():
    for ensure_ascii in (True, False):
        raw = json.dumps(UNUSUAL_BUT_TAKEN, ensure_ascii=ensure_ascii, indent=None if ensure_ascii else 2).encode()
        scanned = _scanned(raw)
        assert scanned is not None
        assert _values(scanned) == _values(_structs(raw))
    assert _values(_scanned(b" [ ] ")) == _values(_structs(b" [ ] "))


DECLINED = {
    "an object, not an array": b'{"traceEvents": []}',
    "an entry that is not an object": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000"}, 1]',
    "a pid that is a float": b'[{"ph": "X", "pid": 1.0, "tid": 1, "ts": "1.000"}]',
    "a tid that is text": b'[{"ph": "C", "pid": 1, "tid": "1", "ts": "1.000"}]',
    "a pid beyond int64": b'[{"ph": "i", "pid": 9223372036854775808, "tid": 1, "ts": "1.000"}]',
    "no pid": b'[{"ph": "X", "tid": 1, "ts": "1.000"}]',
    "a name that is null": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "name": null}]',
    "a cat that is a number": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "cat": 5}]',
    "no ts": b'[{"ph": "X", "pid": 1, "tid": 1}]',
    "a ts that is null": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": null}]',
    "a ts no rule reads": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "n/a"}]',
    "a dur no rule reads": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "dur": "x"}]',
    "a dur that is null": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "dur": null}]',
    "a time past int64": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "9223372036854775.808"}]',
    "a field holding an object": b'[{"ph": "M", "pid": {"a": 1}}]',
    "a field holding an array": b'[{"ph": "B", "pid": [1]}]',
    "a dur holding an object, not read": b'[{"ph": "i", "pid": 1, "tid": 1, "ts": "1.000", "dur": {"a": 1}}]',
    "a used key twice": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "ts": "2.000"}]',
    "args twice": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "args": {}, "args": {}}]',
    "a key spelt with escapes": b'[{"\\u0070h": "X", "pid": 1, "tid": 1, "ts": "1.000"}]',
    "a ph spelt with escapes": b'[{"ph": "\\u0058", "pid": 1, "tid": 1, "ts": "1.000"}]',
    "a used number out of range": b'[{"ph": "s", "id": 1e400}]',
    "invalid UTF-8 in args": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "args": {"a": "\xff"}}]',
    "a lone surrogate": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "name": "\\ud800"}]',
    "trailing bytes": b'[] x',
    "truncated": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.0',
    "a form feed before the array": b'\x0c[]',
    "deep nesting": b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "args": ' + b"[" * 600 + b"]" * 600 + b"}]",
}


@pytest.mark.parametrize("what", DECLINED)
def test_what_the_scanner_does_not_take_is_declined_and_read_as_before(what, tmp_path, monkeypatch):
    raw = DECLINED[what]
    assert scan_event_array(raw) is None
    (fast, fast_problems), (slow, slow_problems) = _tables(_run(tmp_path, raw), monkeypatch)
    assert _dump(fast) == _dump(slow) and fast_problems == slow_problems


def test_a_declined_real_trace_reads_as_before(tmp_path, monkeypatch):
    """The real trace with one pid written as a float, late in the file: declined after most of the scan, read
    by the structs, the rules taking that event one by one."""
    events = json.loads(realdata(SAMPLES[0]).read_bytes())
    late = [i for i, e in enumerate(events) if e.get("ph") == "X"][-3]
    events[late]["pid"] = float(events[late]["pid"])
    raw = json.dumps(events).encode()
    assert scan_event_array(raw) is None
    (fast, fast_problems), (slow, slow_problems) = _tables(_run(tmp_path, raw), monkeypatch)
    assert len(fast) > 10000 and _dump(fast) == _dump(slow) and fast_problems == slow_problems


# -- generated traces --------------------------------------------------------------------------------------
TIMES = st.one_of(
    st.tuples(st.integers(0, 10**16), st.integers(0, 999)).map(lambda p: f'"{p[0]}.{p[1]:03d}"'),
    st.tuples(st.integers(-(10**17), 10**17), st.integers(0, 10**9)).map(lambda p: f'"{p[0]}.{p[1]}"'),
    st.integers(-(2**70), 2**70).map(str),
    st.integers(-(10**16), 10**16).map(lambda v: f'"{v}"'),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(['"12."', '".5"', '"-0.000"', '"1e3"', '" 1.000"', '"1.000\\t"', '"\\u0031.000"', '"x"', '""',
                     "true", "null", "-0.0", "4611686018427387.904", '"9223372036854775.807"', '"-9223372036854775.808"']))
SCALARS = st.one_of(st.integers(-(2**65), 2**65).map(str), st.sampled_from(["1.0", '"7"', "null", "true", '""']))


@st.composite
def trace_view_events(draw) -> str:
    fields = {"ph": draw(st.sampled_from(['"X"', '"X"', '"X"', '"C"', '"i"', '"I"', '"M"', '"s"', '"f"', '"B"', "null",
                                          "1"]))}
    names = st.sampled_from(["AscendCL@aclrtMemcpy", "ProfilerStep#7", "aten::mm", "hcom_allReduce_", "\u00e9t\u00e9",
                             'a"b', ""])
    fields["name"] = draw(st.one_of(names.map(lambda t: json.dumps(t, ensure_ascii=draw(st.booleans()))),
                                    st.sampled_from(["null", "3"])))
    fields["cat"] = draw(st.sampled_from(['"cpu_op"', '"python_function"', '"HostToDevice"', '""', "null", "5"]))
    ids = st.integers(0, 4).map(str)      # mostly plain: a file with one odd event is left to the structs
    fields["pid"] = draw(st.one_of(ids, ids, ids, ids, ids, SCALARS))
    fields["tid"] = draw(st.one_of(ids, ids, ids, ids, ids, SCALARS))
    fields["ts"] = draw(TIMES)
    fields["dur"] = draw(TIMES)
    fields["id"] = draw(SCALARS)
    fields["args"] = draw(st.sampled_from(['{"level": "acl", "x": [1, 2.5e300]}', '{"Task Type": "AI_CORE"}', "null",
                                           "[1]", '"text"', "{}", '{"a": "}, {"}']))
    fields["bp"] = '"e"'
    keys = draw(st.permutations(list(fields)))
    keep = [k for k in keys if draw(st.integers(0, 6)) > 0]
    space = draw(st.sampled_from(["", " ", "\n  "]))
    return "{" + ("," + space).join(f'"{k}":{space}{fields[k]}' for k in keep) + "}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(trace_view_events(), max_size=10))
def test_generated_traces_scan_as_the_structs_read_them(entries):
    raw = ("[" + ", ".join(entries) + "]").encode()
    scanned = _scanned(raw)
    try:
        reference = _structs(raw)
    except Exception:      # the structs refuse the file (a number out of range ...): the scanner declines it too
        assert scanned is None
        return
    if reference.odd:      # events the per-event rules read: the scanner leaves the file to them
        assert scanned is None
        return
    if scanned is not None:
        assert _values(scanned) == _values(reference)


SMALL = None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_bytes_are_declined_or_scanned_as_the_structs_read_them(data):
    """The first events of the real trace, bytes changed, cut, deleted or inserted: the scanner declines the
    result or reads it as the structs do."""
    global SMALL
    if SMALL is None:
        SMALL = json.dumps(json.loads(realdata(SAMPLES[0]).read_bytes())[:60], ensure_ascii=False).encode()
    raw = damaged_json(data, SMALL, empty=b"[")
    scanned = _scanned(raw)
    try:
        reference = _structs(raw)
    except Exception:
        assert scanned is None
        return
    if reference.odd:
        assert scanned is None
        return
    if scanned is not None:
        assert _values(scanned) == _values(reference)


def test_plain_events_are_always_taken():
    rnd = random.Random(3)
    events = [{"ph": rnd.choice("XCiI"), "name": f"op{i % 7}", "pid": i % 3, "tid": i % 5, "cat": rnd.choice(["a", None]),
               "ts": f"{1736408883688177 + i}.{rnd.randrange(1000):03d}", "dur": rnd.choice([1.5, 0, 2]),
               "args": {"k": i % 4}} for i in range(500)]
    raw = json.dumps(events).encode()
    s = scan_event_array(raw)
    assert s is not None and len(s.ts_ns) == 500 and len(s.args) == 1 + 4      # b"null", then four args texts
    assert _values(CompactTrace.of_scanned(s)) == _values(_structs(raw))


def test_the_pure_python_switch_and_the_orjson_decoder_turn_the_scanner_off():
    code = "from npuprof.readers import trace_decode as t; print(t.scan_event_array(b'[]') is None)"
    for env, off in (({"NPUPROF_PURE_PYTHON": "1"}, "True"), ({"NPUPROF_TRACE_DECODER": "orjson"}, "True"),
                     ({"NPUPROF_PURE_PYTHON": "0"}, "False")):
        out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == off


def test_a_text_msgspec_refuses_is_declined_and_any_other_error_raised():
    from npuprof.readers import _tracescan

    raw = b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "name": "\\u0041"}]'
    assert _tracescan.scan_array(raw, lambda text: "A")[11] == ["", "A"]

    def refuses(text):
        raise ValueError("refused")

    def fails(text):
        raise MemoryError()

    assert _tracescan.scan_array(raw, refuses) is None
    with pytest.raises(MemoryError):
        _tracescan.scan_array(raw, fails)


@pytest.mark.parametrize("special", [b'\\"', b"\\\\", b"\\n", b"\\u00e9", "é".encode(), "中".encode(), "𝄞".encode(),
                                     b"\x01", b"\x7f", b"\xff", b"\xc3"])
def test_every_place_of_a_string_stop_byte_scans_as_the_structs_read(special):
    """Strings scanned 16, then 8 bytes, then one at a time: each byte that ends a plain run (an escape,
    UTF-8, a control character, invalid UTF-8) at every place of strings around those block sizes, in a
    name and inside args: the structs' reading, or declined where they refuse the text."""
    for length in range(0, 40):
        for at in range(length + 1):
            text = b"a" * at + special + b"b" * (length - at)
            raw = (b'[{"ph": "X", "pid": 1, "tid": 1, "ts": "1.000", "dur": "2.000", "name": "' + text +
                   b'", "args": {"k": "' + text + b'"}}]')
            scanned = _scanned(raw)
            try:
                reference = _structs(raw)
            except Exception:
                assert scanned is None, (special, length, at)
                continue
            assert scanned is not None and _values(scanned) == _values(reference), (special, length, at)
