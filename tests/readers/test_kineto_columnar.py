"""The columnar Kineto reader: msgspec and its orjson fallback give the same event table, on real traces and on
files only the fallback takes; the vectorised value rules equal the per-value ones."""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from npuprof.readers import trace_decode
from npuprof.readers.kineto import _INT64, _int_column, _int_in, _number, _times, read_kineto
from npuprof.readers.trace_decode import DECODER_ENV, decode_trace
from realdata import realdata

HTA = "hta/tests/data"


def _table_dump(read) -> tuple:
    ev = read.events
    return {k: ev[k].tolist() for k in ev.cols}, list(ev.strings), read.rank, read.world_size, list(read.issues)


@pytest.mark.parametrize("sample", ["trace_filter/sampled_rank-0.json.gz", "trace_diff/test/test.json.gz",
                                    "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"])
def test_msgspec_and_orjson_decoders_read_real_traces_alike(sample, monkeypatch):
    pytest.importorskip("msgspec")
    monkeypatch.delenv(DECODER_ENV, raising=False)
    path = realdata(f"{HTA}/{sample}")
    fast = read_kineto(path, warn=print)
    monkeypatch.setenv(DECODER_ENV, "orjson")
    assert trace_decode.decoder_name() == "orjson"
    slow = read_kineto(path, warn=print)
    assert _table_dump(fast) == _table_dump(slow)
    assert len(fast.events) > 0


def _write(tmp_path: Path, doc) -> Path:
    path = tmp_path / "odd.pt.trace.json"
    path.write_text(json.dumps(doc))      # Python's json: NaN written as NaN, which only json.loads takes back
    return path


def test_shapes_the_typed_decoder_refuses_fall_back_to_orjson_then_json(tmp_path, monkeypatch):
    pytest.importorskip("msgspec")
    monkeypatch.delenv(DECODER_ENV, raising=False)
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 2,
               "args": {"stream": 7, "correlation": 3}},
              {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 9, "dur": 4, "args": [1]}]
    # an args that is a list: msgspec refuses the shape, orjson reads it, the event keeps its defaults
    cols = decode_trace(json.dumps({"traceEvents": events}).encode())
    assert cols.decoder == "orjson" and cols.correlation == [3, None] and cols.stream == [7, None]
    # a bare list of events
    assert decode_trace(json.dumps(events[:1]).encode()).ts == [10]
    # NaN: neither msgspec nor orjson takes it, Python's json does; the event is skipped as unusable
    warned = []
    read = read_kineto(_write(tmp_path, {"traceEvents": [*events, {**events[0], "ts": math.nan}]}), warned.append)
    assert len(read.events) == 2 and "1 complete event(s) without a usable ts/dur" in warned[0]
    with pytest.raises(trace_decode.NoTraceEvents):
        decode_trace(b'{"a": 1}')
    with pytest.raises(trace_decode.TraceDecodeError):
        decode_trace(b'{"traceEvents": [')


VALUES = [0, 1, -1, 5, 32767, 32768, 2**31, 2**53 - 1, 2**53 + 1, 2**62, 2**63 - 1, 2**63, -(2**63), 2**70, None, True,
          False, 1.0, 2.5, "3", math.nan]


@pytest.mark.parametrize("bounds,default", [(_INT64, 0), ((0, _INT64[1]), -1), ((0, 32767), -1), ((0, 2**31 - 1), -1)])
def test_int_column_is_int_in_of_every_value(bounds, default):
    rng = np.random.default_rng(0)
    for _ in range(50):
        values = [VALUES[i] for i in rng.integers(0, len(VALUES), size=rng.integers(0, 12))]
        assert _int_column(values, bounds, default).tolist() == [_int_in(v, bounds, default) for v in values]


TIMES = [0, 1, 1661938466265032, 8999999999999999, 9 * 10**15, -5, 12.3455, 0.0005, 1.0015, 1e16, math.inf, -math.inf,
         math.nan, "12.5", "x", None, True, 2**80]


def _times_one_by_one(ts: list, dur: list, base: int) -> list:
    out = []
    for start, length in zip(ts, dur):
        if isinstance(start, str):
            try:
                start = float(start)
            except ValueError:
                start = None
        if not _number(start) or not _number(length) or length < 0:
            out.append(None)
            continue
        t, d = base + round(start * 1000), round(length * 1000)
        out.append((t, d) if _INT64[0] <= t <= _INT64[1] else None)
    return out


@pytest.mark.parametrize("base", [0, 1_700_000_000_000_000_000, 2**62])
def test_vectorised_times_equal_the_rules_value_by_value(base):
    rng = np.random.default_rng(1)
    numeric = [v for v in TIMES if type(v) in (int, float)]
    for pool in (numeric, TIMES, [v for v in numeric if type(v) is int]):
        for _ in range(60):
            n = int(rng.integers(0, 10))
            ts = [pool[i] for i in rng.integers(0, len(pool), size=n)]
            dur = [pool[i] for i in rng.integers(0, len(pool), size=n)]
            t, d, ok = _times(ts, dur, base)
            got = [(int(a), int(b)) if k else None for a, b, k in zip(t.tolist(), d.tolist(), ok.tolist())]
            assert got == _times_one_by_one(ts, dur, base), (ts, dur)


@pytest.mark.parametrize("sample", ["trace_diff/control/control.json.gz", "trace_filter/sampled_rank-1.json.gz",
                                    "cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"])
def test_gzip_decoded_in_chunks_beside_its_decompression_reads_as_the_whole_file(sample, monkeypatch):
    """cpu_only's trace has a list of log lines after its events: the event list's end is found anyway."""
    pytest.importorskip("msgspec")
    monkeypatch.delenv(DECODER_ENV, raising=False)       # the chunks are msgspec's path
    path = realdata(f"{HTA}/{sample}")
    monkeypatch.setattr(trace_decode, "CHUNK_BYTES", 1 << 16)          # many chunks even for a small file
    chunked = trace_decode._decode_chunks(path)
    whole = decode_trace(gzip.decompress(path.read_bytes()))
    for key in ("ts", "dur", "cat", "name", "pid", "tid", "correlation", "device", "stream", "labels", "other", "doc"):
        assert getattr(chunked, key) == getattr(whole, key), key
    monkeypatch.setattr(trace_decode, "CHUNKED_FROM_BYTES", 0)
    read = read_kineto(path, warn=print)
    monkeypatch.setattr(trace_decode, "CHUNKED_FROM_BYTES", 1 << 62)
    assert _table_dump(read) == _table_dump(read_kineto(path, warn=print))


def test_a_damaged_gzip_stream_is_reported_as_before(tmp_path, monkeypatch):
    monkeypatch.setattr(trace_decode, "CHUNKED_FROM_BYTES", 0)
    good = gzip.compress(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1,
                                                      "ts": 1, "dur": 1}] * 100}).encode())
    path = tmp_path / "cut.pt.trace.json.gz"
    path.write_bytes(good[: len(good) // 2])
    from npuprof.errors import ProfilerDataError
    with pytest.raises(ProfilerDataError, match="is not a readable trace"):
        read_kineto(path, warn=print)
