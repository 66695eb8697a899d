"""The compiled Kineto scanner (core/readers/_tracescan.c) against the decoder it stands in for (msgspec's
structs, then the value rules in Python): the same columns on real traces and on generated ones full of odd
values, the same event table, and every shape the structs would read otherwise declined (then decoded as before)."""
from __future__ import annotations

import gzip
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npuprof.compiled import compiled_status
from npuprof.readers import kineto, trace_decode
from npuprof.readers.trace_decode import TraceDecodeError, decode_trace, scan_trace
from damage import damaged_json
from realdata import realdata

pytest.importorskip("msgspec")
STATUS = compiled_status("npuprof.readers._tracescan")
pytestmark = pytest.mark.skipif(not STATUS.loaded, reason=f"npuprof.readers._tracescan is not in use: {STATUS.reason}")

HTA = "hta/tests/data"
SAMPLES = ["trace_diff/test/test.json.gz", "trace_diff/control/control.json.gz", "trace_filter/sampled_rank-0.json.gz",
           "trace_filter/sampled_rank-1.json.gz", "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"]


@pytest.fixture(autouse=True)
def _msgspec_decoder(monkeypatch):
    monkeypatch.delenv(trace_decode.DECODER_ENV, raising=False)


def _typed(values: list) -> list:
    return [(type(v).__name__, v) for v in values]


def _columns_of(c: kineto._Complete) -> dict:
    # the times of unusable events are never read (the per-event rules leave 0 there, the vectorised ones the base)
    return {"t": np.where(c.usable, c.t, 0).tolist(), "d": np.where(c.usable, c.d, 0).tolist(),
            "usable": c.usable.tolist(), "pid": c.pid.tolist(),
            "tid": c.tid.tolist(), "corr": c.corr.tolist(), "device": c.device.tolist(), "stream": c.stream.tolist(),
            "cat": [c.texts[k] for k in c.cat.tolist()], "name": [c.texts[k] for k in c.name.tolist()],
            "labels": [(_typed([p]), _typed([lab])) for p, lab in c.labels], "other": c.other,
            "doc": {k: repr(v) for k, v in c.doc.items() if k in ("baseTimeNanoseconds", "distributedInfo",
                                                                    "deviceProperties")}}


def _reference(raw: bytes) -> dict:
    cols = decode_trace(raw)
    assert cols.decoder == "msgspec"
    return _columns_of(kineto._from_columns(cols))


def _scanned(raw: bytes):
    s = scan_trace(raw)
    return None if s is None else _columns_of(kineto._from_scanned(s))


def _table_dump(read) -> tuple:
    ev = read.events
    return {k: ev[k].tolist() for k in ev.cols}, list(ev.strings), read.rank, read.world_size, list(read.issues)


@pytest.mark.parametrize("sample", SAMPLES)
def test_real_traces_scan_to_the_structs_columns_and_the_same_table(sample, monkeypatch):
    path = realdata(f"{HTA}/{sample}")
    raw = gzip.decompress(path.read_bytes())
    scanned = _scanned(raw)
    assert scanned is not None, "the scanner declined a real Kineto trace"
    assert scanned == _reference(raw)
    fast = kineto.read_kineto(path, warn=print)
    monkeypatch.setattr(trace_decode, "_scanner", None)
    assert _table_dump(fast) == _table_dump(kineto.read_kineto(path, warn=print))


ODD_BUT_TAKEN = [
    {"ph": "X", "cat": "kernel", "name": "void k<int>(float*)", "pid": 0, "tid": 7, "ts": 1661938466283080.123,
     "dur": 2.5004, "args": {"stream": 7, "correlation": 3, "device": 0, "Input Dims": [[1, 2], []]}},
    {"ph": "X", "cat": "cpu_op", "name": "na\u00efve \"quoted\" \\ \U0001F600", "pid": "host", "tid": True,
     "ts": 10, "dur": -0.0, "args": None},
    {"ph": "X", "cat": "", "name": "", "pid": -(2**63), "tid": 2**63, "ts": 8999999999999999, "dur": 0.0004},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": -8999999999999999, "dur": 1e-7,
     "args": {"correlation": 2**64, "device": 32768, "stream": 2**31, "labels": {"x": 1}}},
    {"ph": "X", "cat": "kernel", "name": "late", "ts": 9e15, "dur": 1, "pid": 1.0, "tid": None},
    {"ph": "X", "cat": "kernel", "name": "neg", "ts": 5, "dur": -1, "args": {"correlation": -1, "device": False}},
    {"ph": "X", "cat": "kernel", "name": "tiny negative", "ts": 5, "dur": -1e-9},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#3", "ts": 0.5, "dur": 0.0005, "tid": 3},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "ts": 1e3, "dur": 2E+2},
    {"ph": "X", "name": "no cat", "ts": 1, "pid": 123456789012345678901234567890},
    {"ph": "X", "cat": "kernel", "ts": 1, "dur": None},
    {"ph": "X", "cat": "kernel", "name": "bool ts", "ts": False, "dur": 1},
    {"ph": "X", "cat": "kernel", "name": "object ts", "ts": {"a": 1}, "dur": [1]},
    {"ph": "M", "name": "process_labels", "pid": 0, "args": {"labels": "GPU 0"}},
    {"ph": "M", "name": "process_labels", "pid": "str", "args": {"labels": 7}},
    {"ph": "M", "name": "process_labels", "pid": 9},
    {"ph": "M", "name": "process_labels", "args": {}},
    {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "x"}},
    {"ph": "i", "name": 3, "cat": None, "s": "t"},
    {"ph": "f", "id": 1, "bp": "e"},
    {},
    {"ph": ["X"], "name": "not a complete event"},
]


def test_odd_values_are_scanned_as_the_structs_read_them():
    for base in (None, 0, 1_700_000_000_000_000):
        doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0}], "traceEvents": ODD_BUT_TAKEN,
               "distributedInfo": {"rank": 1, "world_size": 2}, "trailing": [1.5e300, "\u00e9"]}
        if base is not None:
            doc["baseTimeNanoseconds"] = base
        for ensure_ascii in (True, False):
            raw = json.dumps(doc, ensure_ascii=ensure_ascii, indent=None if ensure_ascii else 1).encode()
            scanned = _scanned(raw)
            assert scanned is not None
            assert scanned == _reference(raw)


DECLINED = {
    "a bare event list": b'[{"ph": "X", "ts": 1, "dur": 1}]',
    "an args that is a list": b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "args": [1]}]}',
    "an args that is text": b'{"traceEvents": [{"ph": "i", "args": "x"}]}',
    "an entry that is not an object": b'{"traceEvents": [1]}',
    "a ts given as text": b'{"traceEvents": [{"ph": "X", "ts": "12.5", "dur": 1}]}',
    "a cat that is not text": b'{"traceEvents": [{"ph": "X", "ts": 1, "cat": 5}]}',
    "a name that is null": b'{"traceEvents": [{"ph": "X", "ts": 1, "name": null}]}',
    "a used key twice": b'{"traceEvents": [{"ph": "X", "ts": 1, "ts": 2}]}',
    "an args key twice": b'{"traceEvents": [{"ph": "X", "ts": 1, "args": {"stream": 1, "stream": 2}}]}',
    "a key spelt with escapes": b'{"traceEvents": [{"\\u0070h": "X", "ts": 1}]}',
    "a ph spelt with escapes": b'{"traceEvents": [{"ph": "\\u0058", "ts": 1}]}',
    "a used number out of range": b'{"traceEvents": [{"ph": "X", "ts": 1e400}]}',
    "NaN": b'{"traceEvents": [{"ph": "X", "ts": NaN}]}',
    "invalid UTF-8 in a skipped string": b'{"traceEvents": [{"ph": "X", "ts": 1, "x": "\xff"}]}',
    "a lone surrogate": b'{"traceEvents": [{"ph": "X", "ts": 1, "name": "\\ud800"}]}',
    "a control character": b'{"traceEvents": [{"ph": "X", "ts": 1, "name": "a\x01"}]}',
    "a leading zero": b'{"traceEvents": [{"ph": "X", "ts": 01}]}',
    "trailing bytes": b'{"traceEvents": []} x',
    "no traceEvents": b'{"schemaVersion": 1}',
    "traceEvents not a list": b'{"traceEvents": {}}',
    "traceEvents twice": b'{"traceEvents": [], "traceEvents": []}',
    "truncated": b'{"traceEvents": [{"ph": "X", "ts": 1',
    "deep nesting": b'{"traceEvents": [{"x": ' + b"[" * 600 + b"]" * 600 + b"}]}",
}


@pytest.mark.parametrize("what", DECLINED)
def test_shapes_the_structs_read_otherwise_are_declined(what):
    assert scan_trace(DECLINED[what]) is None


def test_a_declined_file_is_read_as_before(tmp_path, monkeypatch):
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "10", "dur": 2,
               "args": {"stream": 7, "correlation": 3}},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 9, "dur": 4}]
    path = tmp_path / "text_ts.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert scan_trace(path.read_bytes()) is None
    read = kineto.read_kineto(path, warn=print)
    monkeypatch.setattr(trace_decode, "_scanner", None)
    assert _table_dump(read) == _table_dump(kineto.read_kineto(path, warn=print)) and len(read.events) == 2


def test_a_base_time_that_takes_a_start_past_int64_is_decided_event_by_event(tmp_path):
    events = [{"ph": "X", "cat": "cpu_op", "name": "early", "ts": 1, "dur": 1},
              {"ph": "X", "cat": "cpu_op", "name": "late", "ts": 8_000_000_000_000_000, "dur": 1}]
    path = tmp_path / "base.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events, "baseTimeNanoseconds": 2**62}))
    assert scan_trace(path.read_bytes()) is not None and not kineto._base_fits(scan_trace(path.read_bytes()))
    warned: list = []
    read = kineto.read_kineto(path, warned.append)
    assert read.events["name"].tolist() == [read.events.strings.index("early")]
    assert "1 complete event(s) without a usable ts/dur" in warned[0]


# -- generated traces --------------------------------------------------------------------------------------
NUMBER_TEXTS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.integers(-(10**16), 10**16).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.tuples(st.integers(0, 10**17), st.integers(0, 10**9)).map(lambda p: f"{p[0]}.{p[1]}"),
    st.tuples(st.integers(-999, 999), st.integers(-30, 30)).map(lambda p: f"{p[0]}e{p[1]}"),
    st.sampled_from(["-0", "-0.0", "0.0005", "0.0015", "1E+2", "9000000000000000", "8999999999999999.5",
                     "9223372036854775807", "-9223372036854775808", "9223372036854775808", "4.5", "2.5"]))
TEXTS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


def _json_text(value, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)


@st.composite
def values(draw, numbers=True) -> str:
    kind = draw(st.sampled_from(["number", "number", "text", "null", "bool", "object", "list"]))
    if kind == "number" and numbers:
        return draw(NUMBER_TEXTS)
    if kind == "text":
        return _json_text(draw(TEXTS), draw(st.booleans()))
    if kind == "object":
        return '{"a": [1, {"b": "c"}], "n": null}'
    if kind == "list":
        return "[1.5, true, []]"
    if kind == "bool":
        return draw(st.sampled_from(["true", "false"]))
    return "null"


@st.composite
def events(draw) -> str:
    fields = {}
    fields["ph"] = draw(st.sampled_from(['"X"', '"X"', '"X"', '"M"', '"i"', "null", "1"]))
    names = st.sampled_from(["process_labels", "aten::mm", "ProfilerStep#7", "void k<float>(int)", "nccl:all_reduce",
                             "ProfilerStep#x", "\u00e9t\u00e9", 'a"b', ""])
    fields["name"] = _json_text(draw(st.one_of(names, TEXTS)), draw(st.booleans()))
    fields["cat"] = _json_text(draw(st.sampled_from(["kernel", "cpu_op", "user_annotation", "gpu_memcpy", "cuda_runtime",
                                                     "python_function", "gpu_user_annotation", "mystery", "cuda_sync",
                                                     ""])), draw(st.booleans()))
    for key in ("pid", "tid", "ts", "dur"):
        fields[key] = draw(st.one_of(NUMBER_TEXTS, values(numbers=False)) if key != "ts"
                           else st.one_of(NUMBER_TEXTS, st.sampled_from(["null", "true", "[]", "{}"])))
    args = {k: draw(st.one_of(NUMBER_TEXTS, values())) for k in ("correlation", "device", "stream", "labels", "other")
            if draw(st.booleans())}
    fields["args"] = "{" + ", ".join(f'"{k}": {v}' for k, v in args.items()) + "}" if draw(st.booleans()) else "null"
    fields["extra"] = draw(values())
    keys = draw(st.permutations(list(fields)))
    keep = [k for k in keys if draw(st.integers(0, 5)) > 0]
    space = draw(st.sampled_from(["", " ", "\n  "]))
    return "{" + ("," + space).join(f'"{k}":{space}{fields[k]}' for k in keep) + "}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(events(), max_size=12), st.one_of(st.none(), st.integers(0, 2**62)))
def test_generated_traces_scan_as_the_structs_read_them(entries, base):
    head = f'"baseTimeNanoseconds": {base}, ' if base is not None else ""
    raw = ('{' + head + '"traceEvents": [' + ", ".join(entries) + '], "distributedInfo": {"rank": 0}}').encode()
    s = scan_trace(raw)
    try:
        cols = decode_trace(raw)
    except TraceDecodeError:
        cols = None
    if cols is None or cols.decoder != "msgspec":    # a file the structs refuse: the scanner declines it too
        assert s is None
        return
    if s is not None and kineto._base_fits(s):
        assert _columns_of(kineto._from_scanned(s)) == _columns_of(kineto._from_columns(cols))


def test_plain_numbers_and_names_are_always_taken():
    raw = json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": i, "tid": i, "ts": i * 1.25,
                                       "dur": i, "args": {"stream": i, "correlation": i}} for i in range(100)]}).encode()
    s = scan_trace(raw)
    assert s is not None and len(s.ts_ns) == 100 and len(s.texts) == 1 + 1 + 100     # "", kernel, k0..k99
    assert s.ts_ns.tolist() == [round(i * 1.25 * 1000) for i in range(100)]


def test_the_pure_python_switch_turns_the_scanner_off():
    code = "from npuprof.readers import trace_decode as t; print(t._scanner is None, t.scan_trace(b'{\"traceEvents\": []}'))"
    for value, off in (("1", "True None"), ("0", "False ScannedTrace")):
        out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, NPUPROF_PURE_PYTHON=value),
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(off)


def test_times_follow_pythons_rounding():
    stamps = [0.0005, 0.0015, 0.0025, 1661938466283080.123, 2.5e-4, 123.4565, 8999999999999.9995]
    raw = json.dumps({"traceEvents": [{"ph": "X", "ts": v, "dur": v} for v in stamps]}).encode()
    s = scan_trace(raw)
    assert s.ts_ns.tolist() == [round(v * 1000) for v in stamps] == s.dur_ns.tolist()
    assert all(math.isfinite(v) for v in stamps) and s.usable.all()
    assert np.array_equal(s.ts_ns, kineto._from_columns(decode_trace(raw)).t)


def _small_real_trace() -> bytes:
    doc = json.loads(gzip.decompress(realdata(f"{HTA}/trace_filter/sampled_rank-0.json.gz").read_bytes()))
    doc["traceEvents"] = doc["traceEvents"][:40]
    return json.dumps(doc, ensure_ascii=False).encode()


SMALL = None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_damaged_bytes_are_declined_or_scanned_as_the_structs_read_them(data):
    global SMALL
    if SMALL is None:
        SMALL = _small_real_trace()
    raw = damaged_json(data, SMALL, empty=b"{")
    s = scan_trace(raw)
    try:
        cols = decode_trace(raw)
    except (TraceDecodeError, UnicodeDecodeError):
        cols = None
    if cols is None or cols.decoder != "msgspec":
        assert s is None
        return
    if s is not None and kineto._base_fits(s):
        assert _columns_of(kineto._from_scanned(s)) == _columns_of(kineto._from_columns(cols))


@pytest.mark.parametrize("sample", ["trace_diff/control/control.json.gz", "trace_filter/sampled_rank-1.json.gz",
                                    "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"])
def test_gzip_scanned_in_chunks_beside_its_decompression_reads_as_the_whole_file(sample, monkeypatch):
    """cpu_only's trace has a list of log lines after its events: the event list's end is found anyway."""
    path = realdata(f"{HTA}/{sample}")
    monkeypatch.setattr(trace_decode, "CHUNK_BYTES", 1 << 16)          # many chunks even for a small file
    chunked = trace_decode.scan_gzip_chunks(path)
    assert chunked is not None
    assert _columns_of(kineto._from_scanned(chunked)) == _reference(gzip.decompress(path.read_bytes()))
    monkeypatch.setattr(trace_decode, "CHUNKED_FROM_BYTES", 0)
    read = kineto.read_kineto(path, warn=print)
    monkeypatch.setattr(trace_decode, "CHUNKED_FROM_BYTES", 1 << 62)
    assert _table_dump(read) == _table_dump(kineto.read_kineto(path, warn=print))


def test_a_gzip_chunk_the_scanner_declines_is_read_by_the_structs(tmp_path, monkeypatch):
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(3000)]
    events[2500]["ts"] = "2500"     # a ts as text, in a late chunk
    path = tmp_path / "late.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    monkeypatch.setattr(trace_decode, "CHUNK_BYTES", 1 << 12)
    assert trace_decode.scan_gzip_chunks(path) is None
    monkeypatch.setattr(trace_decode, "CHUNKED_FROM_BYTES", 0)
    read = kineto.read_kineto(path, warn=print)
    assert len(read.events) == 3000
    monkeypatch.setattr(trace_decode, "_scanner", None)
    assert _table_dump(read) == _table_dump(kineto.read_kineto(path, warn=print))


def test_a_text_msgspec_refuses_is_declined_and_any_other_error_raised():
    """A ValueError of the decode callable (msgspec's DecodeError is one) is the file's fault: declined, the
    decoder then reads it; any other error (out of memory, an interrupt) is raised, never taken for a decline."""
    from npuprof.readers import _tracescan

    raw = b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "name": "\\u0041"}]}'
    assert _tracescan.scan(raw, lambda text: "A")[8] == ["", "A"]

    def refuses(text):
        raise ValueError("refused")

    def fails(text):
        raise MemoryError()

    assert _tracescan.scan(raw, refuses) is None
    assert _tracescan.scan(raw, lambda text: 65) is None     # not a text: declined
    with pytest.raises(MemoryError):
        _tracescan.scan(raw, fails)


def _gunzip_threads() -> list:
    import threading
    return [t for t in threading.enumerate() if t.name == "npuprof-gunzip"]


def test_the_gunzip_thread_has_ended_however_the_chunked_scan_ends(tmp_path, monkeypatch):
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(3000)]
    good = gzip.compress(json.dumps({"traceEvents": events}).encode())
    monkeypatch.setattr(trace_decode, "CHUNK_BYTES", 1 << 12)
    path = tmp_path / "t.pt.trace.json.gz"
    path.write_bytes(good)
    assert trace_decode.scan_gzip_chunks(path) is not None and not _gunzip_threads()
    path.write_bytes(good[: len(good) // 2])          # cut: the thread's EOFError ends the scan, then read whole
    assert trace_decode.scan_gzip_chunks(path) is None and not _gunzip_threads()

    def interrupted(pieces):
        trace_decode._next_piece(pieces)
        raise KeyboardInterrupt

    path.write_bytes(good)
    monkeypatch.setattr(trace_decode, "_scan_stream", interrupted)     # an error that is not the file's: raised
    with pytest.raises(KeyboardInterrupt):
        trace_decode.scan_gzip_chunks(path)
    assert not _gunzip_threads()
