"""Fuzzing the readers of offline analysis with hypothesis, for a fixed and
deterministic budget (``derandomize``; ``REL_FUZZ_SCALE=10`` multiplies it
for a longer local run), plus a coverage-guided atheris run of the raw
reader when atheris is installed (slow).

Property everywhere: any input gives a result or ProfilerDataError naming
the file, never another exception. For npuprof's raw store the properties
are exact: a truncated segment yields exactly its whole records, flipped
bytes drop exactly the records they touch, junk spliced in drops nothing.

Bugs found in other helpers' readers that are not fixed yet are listed in
KNOWN_BUGS (matched by exception type and file), counted and reported
instead of failing the run; each also has a strict-xfail regression in
test_rel_corrupt.py.
The number of cases run per target is printed in the terminal summary.
"""
from __future__ import annotations

import gzip
import importlib
import json
import os
import resource
import sqlite3
import subprocess
import sys
import traceback
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rel_support as rs
from npuprof import ProfilerDataError
from npuprof.rawstore import FRAME, MAGIC, ReadReport, parse_records
from npuprof.runinfo import read_info
from rel_support import counts_summary  # noqa: F401

SCALE = float(os.environ.get("REL_FUZZ_SCALE", "1"))
HERE = Path(__file__).resolve().parents[1]         # tests/

# (exception type, reader file) -> description of bug classes already reported to the reader's owner
# and not fixed yet. Empty: the classes found so far (pyACL's msprof timeline/db readers, TF's XSpace
# metadata ids, cluster rank_of) are fixed and have regressions in test_rel_corrupt.py. Any crash
# other than ProfilerDataError fails the test.
KNOWN_BUGS: dict = {}


_SHOWN: set = set()


def fuzz_settings(n: int) -> settings:
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


def tolerate(target: str, fn, *args, **kwargs):
    """Call a reader: ProfilerDataError is fine; a known bug is counted;
    anything else fails the test with the input's traceback."""
    rs.COUNTS[f"fuzz cases: {target}"] += 1
    try:
        return fn(*args, **kwargs)
    except ProfilerDataError:
        return None
    except Exception as e:  # noqa: BLE001
        # the deepest frame in a reader (not in the shared EventTable constructor or numpy)
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if not f.filename.endswith(("events.py",)) and "numpy" not in f.filename]
        frame = frames[-1]
        key = (type(e).__name__, Path(frame.filename).name)
        if key in KNOWN_BUGS:
            rs.COUNTS[f"fuzz known-bug hits: {target}"] += 1
            if os.environ.get("REL_FUZZ_SHOW_KNOWN") and key not in _SHOWN:   # reproducers for bug reports
                _SHOWN.add(key)
                shown = [a.read_bytes()[:400] if isinstance(a, Path) and a.is_file() else
                         {p.name: p.read_bytes()[:400] for p in a.iterdir()} if isinstance(a, Path) else a
                         for a in args]
                print(f"\nknown bug {key}: {e}\n  input: {shown!r}"[:1500])
            return None
        raise AssertionError(f"{target}: unexpected {key}: {e}") from e


_SEGMENT: dict = {}


def _segment() -> tuple:
    """A real six-record segment (built once; a module global, not a fixture,
    so hypothesis does not print it with every failing example)."""
    if not _SEGMENT:
        import tempfile

        root = Path(tempfile.mkdtemp(prefix="npuprof-fuzz-"))
        run, seg = rs.make_run(root / "out", chunks=6, per_chunk=20, tag="f")
        data = seg.read_bytes()
        _SEGMENT["v"] = (data, rs.record_spans(data))
    return _SEGMENT["v"]


def _names(tables) -> list:
    return [n for t in tables for n in t.select(t["kind"] == 2).column_strings("name")]


def _chunk(c: int) -> list:
    return [f"f{c}:{i}" for i in range(20)]


# -- npuprof's raw store ----------------------------------------------------------------------

@fuzz_settings(400)
@given(data=st.binary(max_size=4096))
def test_raw_reader_never_raises_on_arbitrary_bytes(data):
    rs.COUNTS["fuzz cases: raw reader, arbitrary bytes"] += 1
    report = ReadReport()
    parse_records(data, "x.npr", report)
    assert report.skipped_bytes <= len(data)


@fuzz_settings(250)
@given(cut=st.integers(min_value=0, max_value=10 ** 9))
def test_raw_reader_truncation_keeps_exactly_the_whole_records(cut):
    rs.COUNTS["fuzz cases: raw reader, truncation"] += 1
    data, spans = _segment()
    cut %= len(data) + 1
    whole = [i for i, (_, end) in enumerate(spans) if end <= cut]
    tables = parse_records(data[:cut], "x.npr", ReadReport())
    assert _names(tables) == [n for i in whole for n in _chunk(i)]


@fuzz_settings(300)
@given(flips=st.lists(st.tuples(st.integers(min_value=0, max_value=10 ** 9), st.integers(1, 255)),
                      min_size=1, max_size=6))
def test_raw_reader_flipped_bytes_drop_exactly_the_touched_records(flips):
    rs.COUNTS["fuzz cases: raw reader, byte flips"] += 1
    data, spans = _segment()
    buf = bytearray(data)
    for pos, mask in flips:
        buf[pos % len(buf)] ^= mask
    changed = [i for i, (a, b) in enumerate(zip(data, buf)) if a != b]   # two flips of one byte may cancel
    touched = {i for i, (a, b) in enumerate(spans) for pos in changed if a <= pos < b}
    report = ReadReport()
    tables = parse_records(bytes(buf), "x.npr", report)
    assert _names(tables) == [n for i in range(len(spans)) if i not in touched for n in _chunk(i)]
    assert all(p.startswith("x.npr: ") for p in report.problems)


@fuzz_settings(250)
@given(where=st.integers(min_value=0, max_value=10 ** 9), junk=st.binary(min_size=1, max_size=300),
       magic_in_junk=st.booleans())
def test_raw_reader_junk_spliced_between_records_loses_nothing(where, junk, magic_in_junk):
    rs.COUNTS["fuzz cases: raw reader, spliced junk"] += 1
    data, spans = _segment()
    boundary = [a for a, _ in spans][where % len(spans)]
    if magic_in_junk:
        junk = junk[: len(junk) // 2] + MAGIC + junk[len(junk) // 2:]
    tables = parse_records(data[:boundary] + junk + data[boundary:], "x.npr", ReadReport())
    names = _names(tables)
    expected = [n for i in range(len(spans)) for n in _chunk(i)]
    # the junk can only add (a forged record would need a matching CRC), never hide a real record
    assert [n for n in names if n in set(expected)] == expected


@fuzz_settings(300)
@given(header=st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(["n", "strings", "x"]),
                                                                                c, max_size=3), max_leaves=12),
       tail=st.binary(max_size=200))
def test_raw_reader_survives_records_with_valid_checksums_and_hostile_payloads(header, tail):
    rs.COUNTS["fuzz cases: raw reader, forged records"] += 1
    text = json.dumps(header).encode()
    payload = len(text).to_bytes(4, "little") + text + tail
    record = FRAME.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload
    report = ReadReport()
    parse_records(record * 2, "x.npr", report)
    assert report.records + len(report.problems) >= 2 or report.records == 2


@fuzz_settings(120)
@given(info=st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
                         lambda c: st.lists(c, max_size=3) | st.dictionaries(
                             st.sampled_from(["npuprof", "clock", "monotonic_ns", "realtime_ns", "rank_id", "pid",
                                              "world_size", "steps", "profiler_parameters", "export_type",
                                              "ms_profiler_info", "device_id", "rank", "partial"]), c, max_size=4),
                         max_leaves=16))
def test_any_profiler_info_is_used_or_refused_with_a_data_error(tmp_path_factory, info):
    """read_info either returns it (and then the whole analysis copes) or
    raises ProfilerDataError naming the file."""
    from npuprof.analysis.pipeline import analyse_run

    rs.COUNTS["fuzz cases: profiler_info"] += 1
    run = tmp_path_factory.mktemp("info") / "w_1_20260101000000000_ascend_ms"
    run.mkdir()
    (run / "profiler_info_0.json").write_text(json.dumps(info, allow_nan=True))
    try:
        read_info(run)
    except ProfilerDataError as e:
        assert e.path.endswith("profiler_info_0.json")
        return
    try:   # a run with no data at all is a data error naming the run ("0 events" is never a success)
        analyse_run(run)
    except ProfilerDataError as e:
        assert e.path == str(run) and "holds no data" in str(e)


@fuzz_settings(150)
@given(info=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                         lambda c: st.lists(c, max_size=3) | st.dictionaries(
                             st.sampled_from(["npuprof", "rank_id", "rank", "ms_profiler_info"]), c, max_size=3),
                         max_leaves=8))
def test_cluster_rank_of_any_profiler_info(tmp_path_factory, info):
    ranks = importlib.import_module("npuprof.cluster.ranks")
    run = tmp_path_factory.mktemp("rank")
    (run / "profiler_info_3.json").write_text(json.dumps(info))
    tolerate("cluster rank_of", ranks.rank_of, run)


# -- the integrations' importers --------------------------------------------------------------

def _xspace() -> bytes:
    from npuprof.events import EventKind, EventTable
    from npuprof.export.xplane import xspace_bytes

    t = EventTable.from_records(ts=[1_700_000_000_000_000_000 + i * 1000 for i in range(10)], dur=500,
                                kind=int(EventKind.OP), name=[f"op{i}:MatMul" for i in range(10)], type="MatMul",
                                pid=1, tid=[2, 3] * 5)
    return xspace_bytes(t, hostname="host")


@fuzz_settings(200)
@given(edits=st.lists(st.tuples(st.integers(0, 10 ** 9), st.integers(0, 255)), max_size=8),
       cut=st.one_of(st.none(), st.integers(0, 10 ** 9)))
def test_xspace_reader(tmp_path_factory, edits, cut):
    pytest.importorskip("tensorflow", reason="the XSpace proto comes with TensorFlow")
    xplane = importlib.import_module("npuprof.integrations.tensorflow.xplane")
    buf = bytearray(_XSPACE.setdefault("b", _xspace()))
    for pos, value in edits:
        buf[pos % len(buf)] = value
    if cut is not None:
        buf = buf[: cut % (len(buf) + 1)]
    path = tmp_path_factory.mktemp("xs") / "host.xplane.pb"
    path.write_bytes(bytes(buf))
    tolerate("TF XSpace", xplane.read_xspace, path)


_XSPACE: dict = {}

_line = st.lists(st.sampled_from(list("0123456789.,; -/abcXYZ\t:eE+") + ["HostCpuOps", "nan", "inf", ";HostCpuOps;",
                                                                       "1795306215611889403", "9" * 30]),
                 max_size=40).map("".join)


@fuzz_settings(200)
@given(lines=st.lists(_line, max_size=12), detail=st.lists(_line, max_size=4))
def test_mindspore_framework_reader(tmp_path_factory, lines, detail):
    ff = importlib.import_module("npuprof.integrations.mindspore.framework_files")
    fw = tmp_path_factory.mktemp("fw")
    (fw / "cpu_op_execute_timestamp_0.txt").write_text("\n".join(lines))
    if detail:
        (fw / "cpu_op_detail_info_0.csv").write_text("op_side,op_type,op_name,full_op_name,pid\n" + "\n".join(detail))
    tolerate("MindSpore FRAMEWORK", ff.read_framework_dir, fw)


_json_value = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) |
                           st.text(max_size=10),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(
                               st.sampled_from(["ph", "name", "pid", "tid", "ts", "dur", "args", "cat", "id",
                                                "traceEvents", "Task Type"]), c, max_size=5),
                           max_leaves=20)
_trace_event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "M", "i", "s", "f", "C", 5, None])},
    optional={"name": st.sampled_from(["process_name", "thread_name", "MatMul", "AscendCL@x", "a@b"]) | _json_value,
              "pid": st.integers(-5, 1 << 40) | _json_value, "tid": st.integers(-5, 99) | _json_value,
              "ts": st.sampled_from(["1700000000000000.5", "abc", ""]) | _json_value, "dur": _json_value,
              "args": _json_value})


@fuzz_settings(200)
@given(events=st.lists(_trace_event, max_size=10), wrap=st.booleans())
def test_mindspore_trace_view_reader(tmp_path_factory, events, wrap):
    ao = importlib.import_module("npuprof.readers.ascend_output")
    out = tmp_path_factory.mktemp("ao")
    (out / "trace_view.json").write_text(json.dumps({"traceEvents": events} if wrap else events))
    tolerate("MindSpore trace_view.json", ao.read_ascend_output, out)


@fuzz_settings(200)
@given(events=st.lists(_trace_event, max_size=10), wrap=st.booleans())
def test_cann_timeline_reader(tmp_path_factory, events, wrap):
    ci = importlib.import_module("npuprof.integrations.pyacl.cann_import")
    path = tmp_path_factory.mktemp("tl") / "msprof_1.json"
    path.write_text(json.dumps({"traceEvents": events} if wrap else events))
    tolerate("CANN msprof timeline", ci.read_timeline, path, [].append, True)


_kineto_event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "M", "i", "s", "f", 5, None]),
     "cat": st.sampled_from(["cpu_op", "kernel", "user_annotation", "gpu_memcpy", "cuda_runtime", "python_function",
                             "gpu_user_annotation", "Trace", 3, None])},
    optional={"name": st.sampled_from(["ProfilerStep#3", "ProfilerStep#x", "ncclKernel_AllReduce", "aten::mm",
                                       "void k<int>(int)"]) | _json_value,
              "pid": st.integers(-5, 1 << 40) | _json_value, "tid": st.integers(-5, 99) | _json_value,
              "ts": st.floats(allow_nan=True) | _json_value, "dur": st.floats(allow_nan=True) | _json_value,
              "args": st.fixed_dictionaries({}, optional={"device": _json_value, "stream": _json_value,
                                                          "correlation": _json_value}) | _json_value})


@fuzz_settings(200)
@given(events=st.lists(_kineto_event, max_size=10), base=_json_value, info=_json_value, gz=st.booleans(),
       cut=st.one_of(st.none(), st.integers(0, 400)))
def test_kineto_trace_reader(tmp_path_factory, events, base, info, gz, cut):
    kineto = importlib.import_module("npuprof.readers.kineto")
    path = tmp_path_factory.mktemp("kt") / ("rank.pt.trace.json" + (".gz" if gz else ""))
    data = json.dumps({"schemaVersion": 1, "baseTimeNanoseconds": base, "distributedInfo": info,
                       "traceEvents": events}).encode()
    data = data[:cut] if cut is not None else data
    path.write_bytes(gzip.compress(data) if gz else data)
    tolerate("Kineto trace", kineto.read_kineto, path, [].append)


@fuzz_settings(200)
@given(events=st.lists(_trace_event, max_size=10), start=_json_value, end=_json_value)
def test_cann_device_timeline_reader(tmp_path_factory, events, start, end):
    ct = importlib.import_module("npuprof.readers.cann_timeline")
    prof = tmp_path_factory.mktemp("PROF_000001_20230101000000000_ABCDEFGHIJKLMNOP")
    dev = prof / "device_0"
    (dev / "timeline").mkdir(parents=True)
    (dev / "timeline" / "msprof_0_1_1.json").write_text(json.dumps(events))
    (dev / "start_info.0").write_text(json.dumps({"collectionTimeBegin": start, "clockMonotonicRaw": "1000"}))
    (dev / "end_info.0").write_text(json.dumps({"collectionTimeEnd": end, "clockMonotonicRaw": 5}))
    tolerate("CANN device timeline", ct.read_device_timelines, prof, [].append)


_cell = st.sampled_from(["", "N/A", "abc", "1700000000000100.250\t", "12.5", "-1", "1e400", "MatMul", "\x00"]) | \
    st.text(max_size=8)


@fuzz_settings(200)
@given(header=st.lists(st.sampled_from(["Op Name", "OP Type", "Task Start Time(us)", "Task Duration(us)",
                                        "Device_id", "Stream ID", "Task ID", "Block Dim", "x"]), max_size=7),
       rows=st.lists(st.lists(_cell, max_size=8), max_size=6))
def test_cann_op_summary_reader(tmp_path_factory, header, rows):
    import csv

    ci = importlib.import_module("npuprof.integrations.pyacl.cann_import")
    path = tmp_path_factory.mktemp("csv") / "op_summary_1.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    tolerate("CANN op_summary.csv", ci.read_op_summary, path, [].append)


# mostly plausible integers, so that rows get past the type conversions and reach the table building
_sql_value = st.one_of(*[st.integers(0, 1 << 40)] * 6, st.integers(-(1 << 63), (1 << 63) - 1), st.none(),
                       st.floats(), st.text(max_size=6), st.binary(max_size=6))


@fuzz_settings(150)
@given(table=st.sampled_from([("CANN_API", "startNs, endNs, type, globalTid, name"),
                              ("MSTX_EVENTS", "startNs, endNs, eventType, message, globalTid"),
                              ("COMMUNICATION_OP", "startNs, endNs, opName, opType, deviceId"),
                              ("TASK", "startNs, endNs, deviceId, streamId, taskType, modelId, taskId, "
                                       "globalTaskId"),
                              ("STRING_IDS", "id, value")]),
       rows=st.lists(st.lists(_sql_value, min_size=8, max_size=8), max_size=4))
def test_cann_database_reader(tmp_path_factory, table, rows):
    ci = importlib.import_module("npuprof.integrations.pyacl.cann_import")
    path = tmp_path_factory.mktemp("db") / "msprof_1.db"
    name, cols = table
    n = len(cols.split(","))
    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE {name}({cols})")
    if name == "TASK":
        con.execute("CREATE TABLE COMPUTE_TASK_INFO(globalTaskId, name, opType)")
        con.executemany("INSERT INTO COMPUTE_TASK_INFO VALUES (?,?,?)", [(r[7], r[0], r[1]) for r in rows])
    con.executemany(f"INSERT INTO {name} VALUES ({','.join('?' * n)})", [r[:n] for r in rows])
    con.commit()
    con.close()
    tolerate("CANN msprof db", ci.read_db, path, [].append)


@fuzz_settings(200)
@given(data=st.binary(max_size=2048), size=st.sampled_from([32, 48, 64, 100, 0, 7]), check=st.booleans())
def test_acl_subscription_records(data, size, check):
    rec = importlib.import_module("npuprof.integrations.pyacl.records")
    tolerate("pyACL subscription records", rec.decode_records, data, size, check)


# -- coverage-guided: atheris ------------------------------------------------------------------

def test_atheris_raw_reader_and_profiler_info(tmp_path):
    pytest.importorskip("atheris", reason="atheris is an optional dev tool (pip install atheris)")
    runs = int(200_000 * SCALE)
    # libFuzzer's memory limit reads the process's peak RSS, and on Linux a child started by fork/vfork + exec
    # begins with its parent's peak (this pytest process's, past 2 GB late in the suite): the harness may use
    # its default 2 GB on top of that
    parent_peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    proc = subprocess.run([sys.executable, str(HERE / "rel_workloads" / "atheris_raw.py"), f"-runs={runs}",
                           "-seed=1", "-max_len=4096", f"-rss_limit_mb={parent_peak_mb + 2048}",
                           f"-artifact_prefix={tmp_path}/"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = [line for line in proc.stderr.splitlines() if line.startswith("Done ")]
    assert done, proc.stderr[-2000:]
    rs.COUNTS["fuzz cases: atheris raw reader + profiler_info"] += int(done[-1].split()[1])
