"""The flusher's conversion: string codes kept across flushes (and bounded),
one-value columns kept as stride-0 views, and records encoded in one buffer
that read back exactly as the materialised columns would."""
import json
import shutil
import struct

import numpy as np
import pytest

from npuprof import recorder, rawstore
from npuprof.events import NUMERIC_COLUMNS, STRING_COLUMNS, EventKind, EventTable
from npuprof.export import textrows, trace_json
from npuprof.export import writer as export_writer
from npuprof.export.writer import analyse_and_export

import synth

MARK, API, RANGE = int(EventKind.MARK), int(EventKind.API), int(EventKind.RANGE)


def _materialised(t: EventTable) -> EventTable:
    return EventTable({k: np.array(v) for k, v in t.cols.items()}, list(t.strings))


def _same_events(a: EventTable, b: EventTable) -> None:
    assert len(a) == len(b)
    for key in NUMERIC_COLUMNS:
        assert a[key].tolist() == b[key].tolist(), key
    for key in STRING_COLUMNS:
        assert a.column_strings(key) == b.column_strings(key), key


def _written_and_read(tmp_path, name, tables):
    """``tables`` written as raw records, one segment each, and read back: (table, report)."""
    writer = rawstore.RawWriter(tmp_path / name, segment_bytes=1)
    for t in tables:
        writer.append(t)
    writer.close()
    return rawstore.read_raw_dir(tmp_path / name)


def test_codes_kept_across_flushes_and_each_table_has_only_its_strings():
    pool = recorder._StringCodes()
    t1 = recorder.chunks_to_table([(1, 2, ["a", 1, 2, "b", 3, 5], [MARK, "m", 4, 4, "dom", ""])], 0, pool)
    code_b = pool.index["b"]
    t2 = recorder.chunks_to_table([(1, 2, ["b", 6, 9, "c", 7, 8], [])], 0, pool)
    assert pool.index["b"] == code_b and pool.strings.count("b") == 1   # the second flush reused "b"'s code
    assert t1.column_strings("name") == ["a", "b", "m"] and t2.column_strings("name") == ["b", "c"]
    assert t2.column_strings("type") == ["", ""] and set(t2.column_strings("source")) == {"npuprof"}
    assert "a" not in t2.strings and "m" not in t2.strings and "dom" not in t2.strings
    assert pool.strings.index("b") == pool.index["b"]         # "b" coded once, reused by the second flush
    assert t2["dur"].tolist() == [3, 1] and t1["kind"].tolist() == [RANGE, RANGE, MARK]


def test_pool_is_bounded(monkeypatch):
    monkeypatch.setattr(recorder, "MAX_POOL_STRINGS", 10)
    pool = recorder._StringCodes()
    for flush in range(5):
        names = [f"n{flush}_{i}" for i in range(30)]
        ranges = [x for i, n in enumerate(names) for x in (n, i, i + 1)]
        t = recorder.chunks_to_table([(1, 2, ranges, [])], 0, pool)
        assert t.column_strings("name") == names
        assert len(pool.strings) <= 10 + 30 + 2      # started over before this flush
        assert len(t.strings) == 30 + 2              # the table: its names, "" and "npuprof"


def test_one_value_and_mixed_columns_from_several_threads():
    pool = recorder._StringCodes()
    events = [MARK, "m", 5, 5, "d1", "", API, "f", 6, 9, "Python", '{"x": 1}', MARK, "m", 7, 7, "d1", ""]
    chunks = [(9, 1, ["r"] * 0, events), (9, 2, ["r", 1, 4, "r", 2, 3], [MARK, 7, 8, 8, "d1", ""])]
    t = recorder.chunks_to_table(chunks, 100, pool)
    assert t["ts"].tolist() == [105, 106, 107, 101, 102, 108]
    assert t["dur"].tolist() == [0, 3, 0, 3, 1, 0]
    assert t["kind"].tolist() == [MARK, API, MARK, RANGE, RANGE, MARK]
    assert t["tid"].tolist() == [1, 1, 1, 2, 2, 2] and set(t["pid"].tolist()) == {9}
    assert t.column_strings("name") == ["m", "f", "m", "r", "r", "7"]
    assert t.column_strings("type") == ["d1", "Python", "d1", "", "", "d1"]
    assert t.column_strings("args") == ["", '{"x": 1}', "", "", "", ""]
    assert set(t["device"].tolist()) == {-1} and set(t["corr"].tolist()) == {-1}
    # a non-str name seen first as a str of the same text stays readable in a later flush
    t2 = recorder.chunks_to_table([(9, 1, [7, 1, 2, "7", 3, 4], [])], 0, pool)
    assert t2.column_strings("name") == ["7", "7"]


def test_one_value_columns_are_written_once_per_record(tmp_path):
    pool = recorder._StringCodes()
    chunks = [(3, 4, ["a", 10, 20] * 5, [API, "f", 1, 2, "Python", ""] * 3)]
    t = recorder.chunks_to_table(chunks, 1_000, pool)
    views = {k for k, v in t.cols.items() if v.strides == (0,)}     # one-value columns are views
    assert {"pid", "tid", "device", "stream", "value", "step", "source", "corr"} <= views
    full = _materialised(t)
    payload, materialised = rawstore.encode_chunk(t), rawstore.encode_chunk(full)
    (hlen,) = struct.unpack_from("<I", payload)
    const = json.loads(payload[4:4 + hlen])["const"]
    assert set(const) == views - {"corr"} and const["pid"] == 3 and const["tid"] == 4   # corr: not written at all
    # the column section holds only the other columns: ts, dur, kind, name and type here (args: all "")
    row_bytes = sum(rawstore._DTYPES[k].itemsize for k in rawstore.COLUMN_ORDER if k not in const)
    assert len(payload) - 4 - hlen == row_bytes * len(t) and row_bytes == 25 and len(materialised) > len(payload)
    for back in (rawstore.decode_chunk(payload), rawstore.decode_chunk(payload, copy=False)):
        _same_events(back, full)
    assert rawstore.decode_chunk(payload)["pid"].flags.writeable            # copy=True: plain columns
    assert rawstore.decode_chunk(payload, copy=False)["pid"].strides == (0,)
    w = rawstore.RawWriter(tmp_path / "NPUPROF")
    w.append(t)
    w.append(recorder.chunks_to_table([(3, 4, ["b", 30, 31], [])], 0, pool))
    w.close()
    table, report = rawstore.read_raw_dir(tmp_path / "NPUPROF")
    assert not report.problems and report.records == 2
    assert table.column_strings("name") == ["a"] * 5 + ["f"] * 3 + ["b"]
    assert table["ts"].tolist()[-1] == 30 and table["dur"].tolist()[:5] == [10] * 5


def test_encoding_a_table_whose_pool_has_unused_strings():
    t = EventTable.from_records(ts=[1, 2], dur=[0, 1], name=["x", "y"], type="t", source="s")
    t = EventTable(t.cols, t.strings + ["unused"])
    back = rawstore.decode_chunk(rawstore.encode_chunk(t))
    assert "unused" not in back.strings
    _same_events(back, t)


def test_a_flush_writes_everything_in_records_of_bounded_size(tmp_path, monkeypatch):
    import threading

    import npuprof
    from npuprof import mstx, record_function

    monkeypatch.setattr(recorder, "MAX_FLUSH_EVENTS", 700)
    with npuprof.Profiler(output_path=tmp_path, activities=["CPU"]) as prof:
        rec = recorder.active_recorder()
        rec._stop.set()          # park the flusher thread: the one flush below does it all
        rec._thread.join()

        def produce(tag):
            for i in range(1000):
                with record_function(f"{tag}{i % 3}"):
                    pass
                mstx.mark(tag)

        other = threading.Thread(target=produce, args=("t",))
        other.start()
        other.join()
        produce("m")
        prof.step()
        assert rec.pending() == 4001
        assert rec.flush() == 4001 and rec.pending() == 0
    report = rawstore.ReadReport()
    tables = []
    for seg in sorted((prof.saved_runs[0] / "NPUPROF").glob("events_*.npr")):
        tables += rawstore.read_segment(seg, report)
    assert not report.problems and max(len(t) for t in tables) <= 700 and len(tables) >= 6
    names = [n for t in tables for n in t.column_strings("name")]
    for name, count in (("t", 1000), ("m", 1000), ("t0", 334), ("m2", 333)):
        assert names.count(name) == count, name


def test_drain_takes_whole_events_up_to_a_limit():
    buf = ["a", 1, 2, "b", 3, 4, "c", 5, 6]
    assert recorder._drain(buf, 6) == ["a", 1, 2, "b", 3, 4] and buf == ["c", 5, 6]
    assert recorder._drain(buf, 0) == [] and recorder._drain(buf) == ["c", 5, 6] and buf == []


def test_reading_a_raw_dir_gives_the_concatenation_of_its_records(tmp_path):
    """read_raw_dir copies each record straight into columns sized for the whole
    directory: same rows as decoding the records one by one and concatenating
    them (string pools merged, corr kept one value until a record sets it)."""
    rng = np.random.default_rng(7)

    def chunk(n, names, corr=None):
        t = EventTable.from_records(ts=rng.integers(0, 10**9, n).tolist(), dur=rng.integers(0, 99, n).tolist(),
                                    name=[names[i % len(names)] for i in range(n)], type="t",
                                    source="npuprof", tid=rng.integers(1, 4, n).tolist())
        return t if corr is None else t.with_column("corr", np.asarray(corr, dtype=np.int64))

    parts = [chunk(5, ["a", "b"]), chunk(4, ["c", "a"], corr=[3, -1, 7, 9]), chunk(1, ["d"]), chunk(6, ["b"])]
    table, report = _written_and_read(tmp_path, "NPUPROF", parts)
    assert report.files == len(parts) and report.records == len(parts) and not report.problems
    _same_events(table, EventTable.concat(parts))
    assert table["corr"].tolist() == [-1] * 5 + [3, -1, 7, 9] + [-1] * 7
    plain, _ = _written_and_read(tmp_path, "plain", [parts[0], parts[3]])
    assert plain["corr"].strides == (0,) and plain["corr"].tolist() == [-1] * 11   # no record set it
    _same_events(plain, EventTable.concat([parts[0], parts[3]]))


def test_records_copied_on_a_second_thread_are_not_overwritten_by_the_segments_read_after_them(tmp_path,
                                                                                                monkeypatch):
    """Each segment's columns are copied into the table on a thread of their own while later segments are
    read into the buffers in turn: with the copies held back, more segments than buffers (segments of
    different sizes, pools and one-value columns) still load as the concatenation of their records, and
    a buffer is only read into again once the copies out of it are done."""
    import threading
    import time as _time

    rng = np.random.default_rng(11)
    parts = []
    for i in range(3 * rawstore.READ_BUFFERS + 1):
        n = int(rng.integers(1, 60))
        parts.append(EventTable.from_records(ts=rng.integers(0, 10**9, n).tolist(), dur=rng.integers(0, 99, n).tolist(),
                                             name=[f"s{i}_{j % 5}" for j in range(n)], type="t", source="npuprof",
                                             tid=[i] * n))
    copying = threading.Event()
    real_copy = rawstore._copy_columns

    def slow_copy(copies):
        copying.set()
        _time.sleep(0.01)          # later segments are read meanwhile
        real_copy(copies)

    monkeypatch.setattr(rawstore, "_copy_columns", slow_copy)
    table, report = _written_and_read(tmp_path, "NPUPROF", parts)
    assert copying.is_set() and report.records == len(parts) and not report.problems
    _same_events(table, EventTable.concat(parts))


@pytest.mark.parametrize("failing", ["first", "last"])
def test_a_copy_that_fails_on_the_copy_thread_fails_the_read_instead_of_leaving_rows_out(tmp_path, monkeypatch,
                                                                                          failing):
    """A copy that raises on the copy thread is raised by read_raw_dir, whether it is waited for before its
    read buffer is reused (the first segment's, more segments than buffers) or at the end (the last one's):
    never a table with those rows missing. The reader and copy threads are gone afterwards."""
    import threading

    parts = [EventTable.from_records(ts=list(range(i * 10, i * 10 + 10)), name=f"s{i}", tid=[i] * 10)
             for i in range(2 * rawstore.READ_BUFFERS)]
    writer = rawstore.RawWriter(tmp_path / "raw", segment_bytes=1)
    for t in parts:
        writer.append(t)
    writer.close()
    real_copy, calls = rawstore._copy_columns, []

    def copy(copies):
        calls.append(1)
        if len(calls) == (1 if failing == "first" else len(parts)):
            raise MemoryError("copy")
        real_copy(copies)

    monkeypatch.setattr(rawstore, "_copy_columns", copy)
    with pytest.raises(MemoryError, match="copy"):
        rawstore.read_raw_dir(tmp_path / "raw")
    assert not [t for t in threading.enumerate() if t.name.startswith(("npuprof-read", "npuprof-copy"))]


def test_frame_checksums_are_those_of_each_record_up_to_the_first_frame_that_does_not_fit():
    records = [rawstore.encode_record(EventTable.from_records(ts=list(range(n)), name="a")).tobytes()
               for n in (3, 1, 7)]
    data = b"".join(records)
    starts = [0, len(records[0]), len(records[0]) + len(records[1])]
    sums = rawstore.frame_checksums(data, len(data))
    assert sums == {pos: rawstore.zlib.crc32(r[rawstore.FRAME.size:]) for pos, r in zip(starts, records)}
    assert list(rawstore.frame_checksums(data, len(data) - 1)) == starts[:2]          # the torn last one: left out
    junk = data[:starts[1]] + b"junk" + data[starts[1]:]
    assert list(rawstore.frame_checksums(junk, len(junk))) == [0]                      # stops at damage
    # parse_records checks what it was not given itself, so damage is reported the same either way
    for given in (None, rawstore.frame_checksums(junk, len(junk))):
        report = rawstore.ReadReport()
        tables = rawstore.parse_records(junk, "x.npr", report, checksums=given)
        assert [len(t) for t in tables] == [3, 1, 7] and report.skipped_bytes == 4
    forged = {pos: crc ^ 1 for pos, crc in sums.items()}       # a checksum computed on other bytes: refused
    report = rawstore.ReadReport()
    assert rawstore.parse_records(data, "x.npr", report, checksums=forged) == []
    assert report.problems and all("checksum mismatch" in p for p in report.problems[:1])


def test_a_column_of_one_value_in_every_record_is_one_value_in_the_loaded_table(tmp_path):
    """Records whose pools code "npuprof" differently still load as one source value; the first record
    that holds another value (a string or a number) makes the column real, with every row right."""
    def host(n, pool, source, pid=7):
        table = EventTable.from_codes({"ts": np.arange(n, dtype=np.int64)}, {"name": np.zeros(n, np.int32)}, pool)
        return table.with_column("source", np.broadcast_to(np.int32(pool.index(source)), (n,))) \
                    .with_column("pid", np.broadcast_to(np.int64(pid), (n,)))

    same = [host(3, ["", "npuprof"], "npuprof"), host(2, ["", "x", "npuprof"], "npuprof"),
            host(1, ["npuprof"], "npuprof")]
    table = _written_and_read(tmp_path, "same", same)[0]
    one_value = {k for k, v in table.cols.items() if v.strides == (0,)}
    assert one_value == {"pid", "source", "corr"}     # the columns the records held as one value
    _same_events(table, EventTable.concat([_materialised(t) for t in same]))
    assert EventTable.concat(same)["source"].strides == (0,)          # concat keeps it too, through the remaps

    mixed = same + [host(2, ["", "mindspore"], "mindspore", pid=8), host(2, ["npuprof", ""], "npuprof")]
    table = _written_and_read(tmp_path, "mixed", mixed)[0]
    assert table["source"].strides != (0,) and table["pid"].strides != (0,) and table["source"].flags.writeable
    assert table.column_strings("source") == ["npuprof"] * 6 + ["mindspore"] * 2 + ["npuprof"] * 2
    assert table["pid"].tolist() == [7] * 6 + [8] * 2 + [7] * 2
    _same_events(table, EventTable.concat([_materialised(t) for t in mixed]))
    assert EventTable.concat(mixed).column_strings("source") == table.column_strings("source")
    same_code = [host(3, ["", "npuprof"], "npuprof"), host(2, ["", "mindspore"], "mindspore")]   # code 1 in both
    for table in (_written_and_read(tmp_path, "same_code", same_code)[0], EventTable.concat(same_code)):
        assert table.column_strings("source") == ["npuprof"] * 3 + ["mindspore"] * 2


def test_one_value_columns_of_different_values_are_filled_in_even_when_they_compare_equal(tmp_path):
    """0.0 and -0.0 compare equal but write apart; NaN never equals itself: both make the column real."""
    def counters(value, n=2):
        table = EventTable.from_codes({"ts": np.arange(n, dtype=np.int64)}, {}, [""])
        return table.with_column("value", np.broadcast_to(np.float64(value), (n,)))

    for values, view in (([0.0, -0.0], False), ([float("nan")] * 2, False), ([2.5, 2.5], True)):
        parts = [counters(v) for v in values]
        for table in (_written_and_read(tmp_path, f"values_{values}", parts)[0], EventTable.concat(parts)):
            assert (table["value"].strides == (0,)) is view
            assert [repr(v) for v in table["value"].tolist()] == [repr(v) for v in values for _ in range(2)]


@pytest.mark.parametrize("forked", [False, True])
def test_outputs_of_a_run_are_the_same_whether_its_records_hold_one_value_columns_or_not(tmp_path, monkeypatch,
                                                                                        forked):
    """The synthetic run (one-value columns in the record headers, as the recorder writes them) and the
    same records with every column written per row give byte-identical outputs, with the trace rendered
    in many chunks by a forked child or in one process."""
    if forked:
        monkeypatch.setattr(textrows, "MATRIX_BYTES", 1)   # 1024 rows per chunk
        monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 1)
        monkeypatch.setattr(export_writer, "fork_is_safe", lambda: True)
        monkeypatch.setattr(export_writer, "CONCURRENT_MIN_EVENTS", 1)   # beside the analyzers, as a large run

    monkeypatch.setattr(synth.time, "time_ns", lambda: 1_700_000_000_000_000_000)
    compact = synth.make_run(tmp_path / "compact", 30_000, chunk_events=4_000)
    full = tmp_path / "full" / compact.name
    shutil.copytree(compact, full)
    shutil.rmtree(full / rawstore.RAW_DIR)
    writer = rawstore.RawWriter(full / rawstore.RAW_DIR)
    report = rawstore.ReadReport()
    for path in sorted((compact / rawstore.RAW_DIR).glob(rawstore.SEGMENT_GLOB), key=rawstore.segment_order):
        for t in rawstore.parse_records(path.read_bytes(), path.name, report):
            writer.append(_materialised(t))
    writer.close()
    assert report.records > 1 and not report.problems
    size = {run: sum(p.stat().st_size for p in (run / rawstore.RAW_DIR).iterdir()) for run in (compact, full)}
    assert size[compact] < 0.7 * size[full]
    outputs = {}
    for run in (compact, full):
        (result,) = analyse_and_export(run)
        outputs[run] = {p.name: p.read_bytes() for p in result.outputs if p.is_file()}
    assert "trace_view.json" in outputs[compact] and "kernel_details.csv" in outputs[compact]
    assert outputs[compact] == outputs[full]
