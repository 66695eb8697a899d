"""Corrupt or truncated input for offline analysis: every reader reports
ProfilerDataError naming the file and the problem (never a traceback from
deep inside a parser), and the analysis still exports what is readable.

Covers npuprof's raw data and profiler_info, and the integrations'
importers: TF XSpace, MindSpore FRAMEWORK and ASCEND_PROFILER_OUTPUT files,
CANN op_summary CSV, msprof JSON timeline and msprof sqlite database, and
the pyACL subscription records.
"""
from __future__ import annotations

import concurrent.futures.thread
import importlib
import json
import sqlite3
from pathlib import Path

import pytest

import rel_support as rs
from npuprof import ProfilerDataError, analyse
from npuprof.analysis.pipeline import analyse_run
from npuprof.cli import main as cli_main
from npuprof.rawstore import ReadReport, read_segment
from npuprof.runinfo import read_info
from rel_support import counts_summary  # noqa: F401

CHUNKS, PER_CHUNK = 5, 50


def known_bug(owner: str, what: str, *values: object) -> object:
    """A case that fails today because of a bug in another helper's reader;
    strict: it turns red once fixed, so the mark gets removed."""
    return pytest.param(*values, marks=pytest.mark.xfail(strict=True, reason=f"{owner}: {what} (issue 7 report)"))



def _chunk_names(chunks) -> set:
    return {f"c{c}:{i}" for c in chunks for i in range(PER_CHUNK)}


def _analysed_marks(run: Path) -> tuple[set, list]:
    (res,) = analyse(run)
    assert (run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").stat().st_size > 0
    assert (run / "ASCEND_PROFILER_OUTPUT" / "analyse.done").exists()
    return set(rs.marks_of(res).tolist()), res.warnings


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    run, segment = rs.make_run(tmp_path_factory.mktemp("sample") / "out", CHUNKS, PER_CHUNK)
    data = segment.read_bytes()
    return run, segment.name, data, rs.record_spans(data)


@pytest.fixture
def damaged(sample, tmp_path):
    """A fresh copy of the sample run and a function to rewrite its segment."""
    import shutil

    run, name, data, spans = sample
    copy = tmp_path / run.name
    # npuprof's own files only: when an earlier test of the session imported MindSpore or TensorFlow,
    # the sample also holds their profilers' directories (FRAMEWORK among them), which tests here write
    copy.mkdir()
    shutil.copytree(run / "NPUPROF", copy / "NPUPROF")
    for info in run.glob("profiler_info*.json"):
        shutil.copy2(info, copy)
    seg = copy / "NPUPROF" / name

    def write(new: bytes) -> Path:
        seg.write_bytes(new)
        return copy

    return write, data, spans, seg


@pytest.mark.parametrize("where", ["header", "mid-frame", "mid-payload", "last-byte"])
@pytest.mark.parametrize("record", [0, 2, 4])
def test_truncated_segment_keeps_every_whole_record(damaged, where, record):
    write, data, spans, seg = damaged
    start, end = spans[record]
    cut = {"header": start + 2, "mid-frame": start + 9, "mid-payload": (start + end) // 2, "last-byte": end - 1}[where]
    run = write(data[:cut])
    names, warnings = _analysed_marks(run)
    assert names == _chunk_names(range(record))
    assert any(seg.name in w and "torn record" in w for w in warnings), warnings
    rs.COUNTS["corrupt inputs handled"] += 1


@pytest.mark.parametrize("offset", [0, 5, 9, 13, 40, -1])
def test_flipped_byte_drops_only_its_record_and_resynchronises(damaged, offset):
    write, data, spans, seg = damaged
    start, end = spans[2]
    pos = (start + offset) if offset >= 0 else end - 1
    buf = bytearray(data)
    buf[pos] ^= 0xFF
    names, warnings = _analysed_marks(write(bytes(buf)))
    assert names == _chunk_names([0, 1, 3, 4])
    assert any(seg.name in w and f"at byte {start}" in w for w in warnings), warnings
    rs.COUNTS["corrupt inputs handled"] += 1


@pytest.mark.parametrize("kind", ["zeros", "garbage", "duplicate-header", "fake-magic"])
def test_inserted_junk_between_records_is_skipped(damaged, kind):
    write, data, spans, seg = damaged
    junk = {"zeros": bytes(4096), "garbage": bytes(range(256)) * 7,
            "duplicate-header": data[spans[1][0]:spans[1][0] + 12],
            "fake-magic": b"NPR1" + (2 ** 31).to_bytes(4, "little") + b"\0\0\0\0xyz"}[kind]
    pos = spans[3][0]
    names, warnings = _analysed_marks(write(data[:pos] + junk + data[pos:]))
    assert names == _chunk_names(range(CHUNKS))
    assert any(seg.name in w and "skipped" in w for w in warnings), warnings
    rs.COUNTS["corrupt inputs handled"] += 1


@pytest.mark.parametrize("content", [b"", b"NPR", b"\x00" * 100, b"not an npuprof file at all\n" * 10])
def test_segment_with_nothing_readable_still_analyses(damaged, content):
    write, data, spans, seg = damaged
    names, warnings = _analysed_marks(write(content))
    assert names == set()
    assert content == b"" or any(seg.name in w for w in warnings)
    rs.COUNTS["corrupt inputs handled"] += 1


def test_record_with_valid_checksum_but_undecodable_payload_is_reported(damaged):
    import zlib

    from npuprof.rawstore import FRAME, MAGIC

    write, data, spans, seg = damaged
    payloads = [b"\x05\x00\x00\x00[1,2]", b"\x02\x00\x00\x00{}", b"\xff\xff\xff\x7f{", b"\x0b\x00\x00\x00{\"n\": -5}",
                b"", b"ab"]   # the empty record (CRC 0) was found by atheris
    forged = b"".join(FRAME.pack(MAGIC, len(p), zlib.crc32(p)) + p for p in payloads)
    pos = spans[1][0]
    names, warnings = _analysed_marks(write(data[:pos] + forged + data[pos:]))
    assert names == _chunk_names(range(CHUNKS))
    assert sum("undecodable record" in w for w in warnings) == len(payloads), warnings
    rs.COUNTS["corrupt inputs handled"] += len(payloads)


def test_unreadable_segment_is_skipped_not_fatal(damaged):
    write, data, spans, seg = damaged
    run = write(data)
    (seg.parent / "events_1_00099.npr").mkdir()          # a directory where a segment should be
    (seg.parent / "events_1_00098.npr").symlink_to(seg)  # a link where a segment should be
    names, warnings = _analysed_marks(run)
    assert names == _chunk_names(range(CHUNKS))
    assert sum("not a regular file" in w for w in warnings) == 2
    with pytest.raises(ProfilerDataError) as e:
        read_segment(seg.parent / "events_1_00099.npr", ReadReport())
    assert "events_1_00099.npr" in e.value.path


def test_segment_that_cannot_be_read_is_reported_and_the_others_are_read(damaged, monkeypatch):
    """Segments are read ahead by a helper thread: a read error still names its segment, and the
    segments after it (read into the buffer it would have used) are all there."""
    from npuprof import rawstore

    write, data, spans, seg = damaged
    write(data)
    alone, _ = rawstore.read_raw_dir(seg.parent)
    pid = seg.name.split("_")[1]
    refused, last = (seg.parent / f"events_{pid}_{n:05d}.npr" for n in (90, 91))
    refused.write_bytes(data)
    last.write_bytes(data[:spans[-1][0]])   # shorter than the buffer's previous segment: all but the last record
    real_open = open

    def refusing(path, *args, **kwargs):
        if Path(path) == refused:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(rawstore, "open", refusing, raising=False)
    shortened = sum(len(t) for t in rawstore.parse_records(data[:spans[-1][0]], "last", ReadReport()))
    for exiting in (False, True):   # at interpreter exit no helper thread starts: read in turn
        monkeypatch.setattr(concurrent.futures.thread, "_shutdown", exiting)
        table, report = rawstore.read_raw_dir(seg.parent)
        assert report.problems == [f"{refused.name}: cannot be read (Permission denied); skipped"]
        assert report.files == 3 and report.records == 2 * len(spans) - 1
        assert len(table) == len(alone) + shortened and shortened < len(alone)


# -- profiler_info ---------------------------------------------------------------------------------

@pytest.mark.parametrize("content,problem", [
    ("{\"rank_id\": 0, \"npuprof\": {\"clock\"", "not valid JSON"),
    ("", "not valid JSON"),
    ("[1, 2]", "not hold a JSON object"),
    ('{"npuprof": []}', "npuprof is list"),
    ('{"npuprof": {"clock": {"monotonic_ns": "x", "realtime_ns": 1}}}', "npuprof.clock.monotonic_ns"),
    ('{"npuprof": {"clock": {"monotonic_ns": 1}}}', "lacks an integer monotonic_ns or realtime_ns"),
    ('{"rank_id": "zero"}', "rank_id"),
    ('{"rank_id": true}', "rank_id"),
    ('{"npuprof": {"pid": [1]}}', "npuprof.pid"),
    ('{"npuprof": {"world_size": 1e400}}', "npuprof.world_size"),
    ('{"npuprof": {"steps": "1,2"}}', "npuprof.steps"),
    ('{"profiler_parameters": {"export_type": 5}}', "export_type"),
    ('{"ms_profiler_info": "rank 0"}', "ms_profiler_info"),
    ('[' * 100000 + ']' * 100000, "not valid JSON"),
])
def test_corrupt_profiler_info_is_a_data_error_naming_the_file(damaged, content, problem):
    write, data, spans, seg = damaged
    run = write(data)
    info = run / "profiler_info_0.json"
    info.write_text(content)
    with pytest.raises(ProfilerDataError, match=problem) as e:
        read_info(run)
    assert e.value.path == str(info)
    # the analysis goes on without it: a data-quality issue names the file, the raw events are still
    # exported, and the run is partial (exit 3): its clock, steps and rank are what the data says
    (res,) = analyse(run)
    assert any(str(info) in w for w in res.warnings)
    assert any(str(info) in i.subject for i in res.quality.issues)
    assert len(res.events) > 0
    assert cli_main(["analyse", str(run), "--quiet"]) == 3
    rs.COUNTS["corrupt inputs handled"] += 1


def test_corrupt_profiler_info_still_exports_the_raw_events(damaged):
    write, data, spans, seg = damaged
    run = write(data)
    (run / "profiler_info_0.json").write_text('{"npuprof": {"clock"')
    names, warnings = _analysed_marks(run)
    assert names == _chunk_names(range(CHUNKS))
    assert any("profiler_info_0.json" in w for w in warnings)


# -- the integrations' importers ------------------------------------------------------------------

def _xspace_bytes() -> bytes:
    from npuprof.events import EventKind, EventTable
    from npuprof.export.xplane import xspace_bytes

    t = EventTable.from_records(ts=[1_700_000_000_000_000_000 + i * 1000 for i in range(20)], dur=500,
                                kind=int(EventKind.OP), name=[f"op{i}:MatMul" for i in range(20)], type="MatMul",
                                pid=1, tid=2)
    return xspace_bytes(t, hostname="host")


def _tf_run(run: Path, content: bytes) -> Path:
    d = run / "TF" / "plugins" / "profile" / "2026_01_01_00_00_00"
    d.mkdir(parents=True, exist_ok=True)
    (d / "host.xplane.pb").write_bytes(content)
    return d / "host.xplane.pb"


XSPACE_CORRUPTIONS = {
    "truncated-half": lambda b: b[: len(b) // 2],
    "truncated-3": lambda b: b[:3],
    "garbage": lambda b: bytes(range(256)) * 4,
    "bad-varint": lambda b: b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
    "empty": lambda b: b"",
}


@pytest.mark.parametrize("kind", sorted(XSPACE_CORRUPTIONS))
def test_corrupt_xspace_is_reported_and_the_rest_exported(damaged, kind):
    pytest.importorskip("tensorflow", reason="the XSpace proto comes with TensorFlow")
    xplane = importlib.import_module("npuprof.integrations.tensorflow.xplane")
    write, data, spans, seg = damaged
    run = write(data)
    valid = _xspace_bytes()
    assert len(xplane.read_xspace(_tf_run(run, valid))) == 20   # the sample itself is readable
    path = _tf_run(run, XSPACE_CORRUPTIONS[kind](valid))
    if kind != "empty":
        with pytest.raises(ProfilerDataError) as e:
            xplane.read_xspace(path)
        assert e.value.path == str(path)
    names, warnings = _analysed_marks(run)
    assert names == _chunk_names(range(CHUNKS))
    assert kind == "empty" or any("host.xplane.pb" in w for w in warnings), warnings
    rs.COUNTS["corrupt inputs handled"] += 1


MS_TIMESTAMPS = ("Default/fc1-Dense/MatMul-op0;HostCpuOps;1795306215611889403,3.77458,0 1795306215616859798,0.025441,0 \n"
                 "Default/relu-ReLU/ReLU-op0;HostCpuOps;1795306215615731754,0.02512,0 \n")


@pytest.mark.parametrize("content", [
    MS_TIMESTAMPS[:70],
    MS_TIMESTAMPS + "Default/x;HostCpuOps;abc,def,0 \n",
    MS_TIMESTAMPS + "\x00\xff\xfe binary \x00\n",
    ";;;;\n,,,,\n" * 5,
    MS_TIMESTAMPS + "Default/y;HostCpuOps;" + "9" * 40 + ",1.0,0 \n",
    MS_TIMESTAMPS + "Default/z;HostCpuOps;1795306215615731754,nan,0 1795306215615731754,-inf,0\n",
])
def test_damaged_mindspore_framework_files_skip_only_the_bad_lines(damaged, content):
    ff = importlib.import_module("npuprof.integrations.mindspore.framework_files")
    write, data, spans, seg = damaged
    run = write(data)
    fw = run / "FRAMEWORK"
    fw.mkdir()
    (fw / "cpu_op_execute_timestamp_0.txt").write_text(content, errors="surrogateescape")
    table, problems = ff.read_framework_dir(fw)
    assert all("cpu_op_execute_timestamp_0.txt" in p for p in problems)
    names, warnings = _analysed_marks(run)
    assert names == _chunk_names(range(CHUNKS))
    rs.COUNTS["corrupt inputs handled"] += 1


@pytest.mark.parametrize("file,content", [
    ("trace_view.json", '[{"ph": "X", "name": "cut'),
    ("trace_view.json", '{"traceEvents": [{"ph": "X", "ts": "abc", "dur": [], "pid": {}, "tid": null}]}'),
    ("trace_view.json", '[{"ph": "M", "name": "process_name", "pid": 1, "args": ["not", "a", "dict"]}]'),
    ("trace_view.json", "\x00\x01\x02"),
    ("kernel_details.csv", "Step Id,Name,Type,Start Time(us),Duration(us)\n1,MatMul,MatMul,abc,def\n"),
    ("kernel_details.csv", "\x00\xff garbage"),
    ("kernel_details.csv", "Name\n" + "x\n" * 10),
])
def test_damaged_mindspore_ascend_output_files_are_reported(tmp_path, file, content):
    ao = importlib.import_module("npuprof.readers.ascend_output")
    out = tmp_path / "ASCEND_PROFILER_OUTPUT"
    out.mkdir()
    (out / file).write_text(content, errors="surrogateescape")
    try:
        table, problems = ao.read_ascend_output(out)
    except ProfilerDataError as e:
        assert file in e.path
    else:
        assert all(file in p or str(out) in p for p in problems)
    rs.COUNTS["corrupt inputs handled"] += 1


def _cann_prof(root: Path) -> Path:
    prof = root / "PROF_000001_20220129014731273_KEDKPORHMAGPGDCC"
    (prof / "mindstudio_profiler_output").mkdir(parents=True)
    (prof / "host").mkdir()
    return prof


@pytest.mark.parametrize("file,content", [
    ("op_summary_1.csv", "Op Name,OP Type,Task Start Time(us),Task Duration(us)\nMatMul,MatMul,abc,\x00\n"),
    ("op_summary_1.csv", "Op Name,OP Type,Task Start Time(us),Task Duration(us)\nMatMul,MatMul,1700000000000100"),
    ("op_summary_1.csv", "\xff\xfe\x00garbage\n\n\n"),
    ("op_summary_1.csv", "Op Name,OP Type\n" + "a,b\n" * 3),
    ("msprof_1.json", '[{"ph": "X", "name": "AscendCL@x", "ts": "1', ),
    ("msprof_1.json", '{"traceEvents": 5}'),
    ("msprof_1.json", '[{"ph": "M", "name": "process_name", "pid": 1, "args": ["x"]}]'),
    ("msprof_1.json", '[{"ph": "M", "name": "process_name", "pid": [1], "args": {"name": "CANN"}}, '
                      '{"ph": "X", "name": "AscendCL@a", "pid": [1], "ts": {"t": 1}, "dur": [2]}]'),
    ("msprof_1.json", '[{"ph": "X", "name": "a", "pid": 1, "ts": "1", "args": "text"}]'),
    ("msprof_tx_1.csv", "message,Start_time(us),End_time(us)\nx,abc,\n"),
    ("msprof_1.db", "this is not a database"),
])
def test_damaged_cann_exports_are_reported(tmp_path, file, content):
    ci = importlib.import_module("npuprof.integrations.pyacl.cann_import")
    prof = _cann_prof(tmp_path)
    (prof / "mindstudio_profiler_output" / file).write_text(content, errors="surrogateescape")
    warnings: list = []
    try:
        ci.parse_prof_dir(prof, warnings.append, run_msprof=False)
    except ProfilerDataError as e:
        assert file in e.path
    rs.COUNTS["corrupt inputs handled"] += 1


_GOOD_DB_ROW = {"CANN_API": (10, 20, 20000, 1, "good"), "MSTX_EVENTS": (10, 20, 2, "good", 1),
                "COMMUNICATION_OP": (10, 20, "good", "x", 0)}


@pytest.mark.parametrize("ddl,rows,kept", [
    # kept: how many of ``rows`` are imported (None: the database is refused with ProfilerDataError)
    ("CREATE TABLE CANN_API(startNs, endNs, type, globalTid, name)", [(None, 2, 20000, 1, "x")], 0),
    ("CREATE TABLE CANN_API(startNs, endNs, type, globalTid, name)", [("abc", "def", 1, 1, "x")], 0),
    ("CREATE TABLE MSTX_EVENTS(startNs, endNs, eventType, message, globalTid)", [(1, 2, 0, "m", None)], 1),
    ("CREATE TABLE CANN_API(startNs, endNs, type, globalTid, name)", [(float("inf"), 2, 1, 1, "x")], 0),
    ("CREATE TABLE COMMUNICATION_OP(startNs, endNs, opName, opType, deviceId)",
     [(1, 2, "hcom", "x", 1 << 40), (1, 2, "hcom", "x", b"\x01")], 0),
    ("CREATE TABLE CANN_API(startNs)", [(1,)], None),
])
def test_msprof_database_with_bad_rows_is_reported(tmp_path, ddl, rows, kept):
    """Bad rows are skipped with a warning naming the file; the good row is imported."""
    ci = importlib.import_module("npuprof.integrations.pyacl.cann_import")
    db = tmp_path / "msprof_1.db"
    table = ddl.split()[2].split("(")[0]
    if kept is not None:
        rows = rows + [_GOOD_DB_ROW[table]]
    con = sqlite3.connect(db)
    con.execute(ddl)
    marks = ",".join("?" * len(rows[0]))
    con.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    con.commit()
    con.close()
    warnings: list = []
    if kept is None:
        with pytest.raises(ProfilerDataError) as e:
            ci.read_db(db, warnings.append)
        assert e.value.path == str(db)
    else:
        events = ci.read_db(db, warnings.append)
        assert len(events) == kept + 1 and "good" in events.column_strings("name")
        if kept < len(rows) - 1:
            assert any(str(db) in w and table in w for w in warnings), warnings
    rs.COUNTS["corrupt inputs handled"] += 1


def test_analysis_of_a_run_with_several_damaged_sources_exports_the_readable_ones(damaged):
    """Raw data torn, XSpace truncated, FRAMEWORK file damaged: one analysis,
    a warning per damaged file, and the readable events in the outputs."""
    pytest.importorskip("tensorflow", reason="the XSpace proto comes with TensorFlow")
    importlib.import_module("npuprof.integrations.tensorflow.xplane")
    write, data, spans, seg = damaged
    run = write(data[:spans[3][1] + 5])
    _tf_run(run, _xspace_bytes()[:40])
    fw = run / "FRAMEWORK"
    fw.mkdir()
    (fw / "cpu_op_execute_timestamp_0.txt").write_text(MS_TIMESTAMPS + "Default/broken;HostCpuOps;x,y\n")
    (res,) = analyse(run)
    names = set(res.events.column_strings("name"))
    assert _chunk_names(range(4)) <= names and "Default/fc1-Dense/MatMul-op0" in names
    joined = "\n".join(res.warnings)
    for needle in (seg.name, "host.xplane.pb", "cpu_op_execute_timestamp_0.txt"):
        assert needle in joined, (needle, res.warnings)
    rs.COUNTS["corrupt inputs handled"] += 1


# -- regressions for bugs the fuzzers found in other helpers' readers (strict xfail until fixed) ------

def test_xspace_event_with_an_unknown_metadata_id_is_skipped_with_a_warning(tmp_path):
    """Found by test_rel_fuzz (an IndexError in xplane._host_plane): the one
    bad event is skipped, the file named in a warning, the rest kept."""
    from npuprof.events import EventKind, EventTable
    from npuprof.export.xplane import xspace_bytes

    pytest.importorskip("tensorflow", reason="the XSpace proto comes with TensorFlow")
    xplane = importlib.import_module("npuprof.integrations.tensorflow.xplane")
    t = EventTable.from_records(ts=[1_700_000_000_000_000_000 + i * 1000 for i in range(10)], dur=500,
                                kind=int(EventKind.OP), name=[f"op{i}:MatMul" for i in range(10)], type="MatMul",
                                pid=1, tid=[2, 3] * 5)
    buf = bytearray(xspace_bytes(t, hostname="host"))
    at = buf.index(b'"\x17\x08\x08\x10') + 3      # an event's metadata_id 8 -> 11 (only 10 exist)
    buf[at] = 11
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(bytes(buf))
    warnings: list = []
    table = xplane.read_xspace(path, warn=warnings.append)
    names = table.column_strings("name")
    assert len(names) == 9 and set(names) < {f"op{i}:MatMul" for i in range(10)}, names
    assert len(warnings) == 1 and str(path) in warnings[0] and "metadata id" in warnings[0], warnings
    # the analysis of a run holding that file reports it too
    run = tmp_path / "run"
    _tf_run(run, bytes(buf))

    res = analyse_run(run)
    assert set(names) <= set(res.events.column_strings("name"))
    assert any("host.xplane.pb" in w and "metadata id" in w for w in res.warnings), res.warnings


@pytest.mark.parametrize("events", [
    [{"ph": "X", "name": "a", "pid": 1 << 70, "tid": 1, "ts": "1700000000000000.5", "dur": 1}],
    [{"ph": "M", "name": "process_name", "pid": [1], "args": {"name": "x"}}],
    [{"ph": "M", "name": ["process_name"], "pid": 1, "args": {"name": "x"}}],
])
def test_mindspore_trace_view_with_out_of_range_values(tmp_path, events):
    ao = importlib.import_module("npuprof.readers.ascend_output")
    (tmp_path / "trace_view.json").write_text(json.dumps(events))
    try:
        ao.read_ascend_output(tmp_path)
    except ProfilerDataError:
        pass


@pytest.mark.parametrize("case", ["timeline", "db"])
def test_cann_values_out_of_range(tmp_path, case):
    """Found by test_rel_fuzz (TypeError in us_to_ns, OverflowError building the
    table): the bad event is skipped with a warning naming the file, the good one kept."""
    ci = importlib.import_module("npuprof.integrations.pyacl.cann_import")
    warnings: list = []
    if case == "timeline":
        path = tmp_path / "msprof_1.json"
        path.write_text(json.dumps([{"ph": "X", "name": "AscendCL@a", "ts": [None]},
                                    {"ph": "X", "name": "AscendCL@b", "ts": {"x": 1}, "dur": 1},
                                    {"ph": "X", "name": "AscendCL@c", "ts": "9" * 30, "dur": 1},
                                    {"ph": "X", "name": "AscendCL@good", "ts": "1700000000000000.5", "dur": [3]}]))
        events = ci.read_timeline(path, warnings.append, True)
        assert list(events.column_strings("name")) == ["good"] and events["ts"].tolist() == [1700000000000000500]
        assert events["dur"].tolist() == [0]
    else:
        path = tmp_path / "msprof_1.db"
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE TASK(startNs, endNs, deviceId, streamId, taskType, modelId, taskId, "
                    "globalTaskId)")
        con.execute("CREATE TABLE COMPUTE_TASK_INFO(globalTaskId, name, opType)")
        con.execute("INSERT INTO TASK VALUES (0, 0, 32768, 0, NULL, NULL, NULL, 0)")
        con.execute("INSERT INTO TASK VALUES (5, 9, 1, 2, NULL, X'00ff', NULL, 1)")
        con.execute("INSERT INTO COMPUTE_TASK_INFO VALUES (0, 'k', 't')")
        con.execute("INSERT INTO COMPUTE_TASK_INFO VALUES (1, 'good', 't')")
        con.commit()
        con.close()
        events = ci.read_db(path, warnings.append)
        assert list(events.column_strings("name")) == ["good"] and events["device"].tolist() == [1]
        assert any("device 32768" in w for w in warnings), warnings
    assert warnings and all(str(path) in w for w in warnings), warnings


@pytest.mark.parametrize("info", [
    {"npuprof": None}, {"npuprof": [1]}, {"npuprof": {"rank": True}}, {"rank_id": "abc"}, {"rank_id": -2},
    {"rank_id": "\u00b2"},
])
def test_cluster_rank_of_a_damaged_profiler_info(tmp_path, info):
    """Found by test_rel_fuzz (AttributeError in ranks.rank_of): a damaged
    field falls back to the rank in the file name."""
    ranks = importlib.import_module("npuprof.cluster.ranks")
    (tmp_path / "profiler_info_3.json").write_text(json.dumps(info))
    assert ranks.rank_of(tmp_path) == 3
