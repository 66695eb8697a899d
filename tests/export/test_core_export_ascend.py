"""`npuprof export ascend`: the JSON-array trace_view.json (MindSpore/torch_npu form) and the run copy."""
import csv
import json
import shutil
from collections import Counter

import numpy as np
import pytest

from npuprof import Profiler, record_function, schedule
from npuprof.analysis.step_breakdown import assign_steps, step_trace, step_windows
from npuprof.analysis.pipeline import analyse_path
from npuprof.cli import main
from npuprof.events import EventKind, EventTable
from npuprof.export import ascend_copy
from npuprof.export.trace_array import OVERLAP_THREADS, overlap_segments, write_trace_array
from npuprof.export.trace_json import base_time_ns, write_trace
from npuprof.readers.ascend_output import read_ascend_output

DAY0 = 1_795_305_600 * 10**9       # a UTC midnight: relative ts are then the offsets below
K = EventKind


def _table() -> EventTable:
    """Two steps with host ops, a user range, a mark, comm overlapping compute, device kernels,
    counters and memory, one op outside every step and one crossing a step's end."""
    rows = [  # ts(ns), dur, kind, name, type, device, stream
        (1_000, 0, K.MARK, "start", "mstx", -1, -1),
        (10_000, 100_000, K.STEP, "ProfilerStep#1", "ProfilerStep", -1, -1),
        (12_000, 30_000, K.RANGE, "forward", "", -1, -1),
        (15_000, 20_000, K.OP, "MatMul", "MatMul", -1, -1),
        (20_000, 30_000, K.OP, "Add", "Add", -1, -1),
        (30_000, 5_000, K.API, "aclnnAdd", "ACL", -1, -1),
        (40_000, 30_000, K.COMM, "hcom_allReduce_1", "AllReduce", -1, -1),
        (41_000, 1_000, K.STACK, "train.py(12): step", "python_function", -1, -1),
        (60_000, 0, K.COUNTER, "cpu_usage", "host", -1, -1),
        (61_000, 0, K.MEMORY, "[memory]", "", -1, -1),
        (16_000, 4_000, K.KERNEL, "MatMul_k", "MatMul", 0, 3),
        (45_000, 8_000, K.KERNEL, "Add_k", "Add", 0, 3),
        (90_000, 30_000, K.KERNEL, "Long_k", "Cast", 0, 4),       # crosses the end of step 1
        (110_000, 50_000, K.STEP, "ProfilerStep#2", "ProfilerStep", -1, -1),
        (120_000, 10_000, K.KERNEL, "MatMul_k", "MatMul", 0, 3),
        (125_000, 20_000, K.COMM, "hcom_allReduce_2", "AllReduce", 0, 5),
        (200_000, 5_000, K.KERNEL, "Late_k", "Cast", 0, 3),       # after the last step
    ]
    rows.sort(key=lambda r: r[0])
    ts, dur, kind, name, typ, dev, stream = zip(*rows)
    table = EventTable.from_records(ts=[DAY0 + 3_600 * 10**9 + t for t in ts], dur=list(dur), kind=list(kind),
                                    name=list(name), type=list(typ), device=list(dev), stream=list(stream),
                                    pid=4242, tid=7, value=[55.0 if k == K.COUNTER else 1024.0 for k in kind])
    return assign_steps(table)


@pytest.fixture
def traces(tmp_path):
    events = _table()
    kineto = json.loads(write_trace(events, tmp_path / "kineto.json", host_pid=4242).read_text())
    array = json.loads(write_trace_array(events, tmp_path / "ascend" / "trace_view.json", host_pid=4242).read_text())
    return events, kineto, array


def test_array_form_holds_every_kineto_event_with_the_same_times(traces):
    _, kineto, array = traces
    assert isinstance(array, list) and all(isinstance(e, dict) for e in array)
    key = lambda e: (e["ph"], e["name"], e["ts"], e.get("dur"))  # noqa: E731
    theirs = Counter(key(e) for e in kineto["traceEvents"] if e["ph"] != "M")
    ours = Counter(key(e) for e in array if e["ph"] != "M" and e["pid"] != ascend_overlap_pid())
    assert ours == theirs and len(ours) == 18   # 17 events + Record Window End
    for e in array:
        if e["ph"] != "M":
            assert isinstance(e["ts"], float) and isinstance(e.get("dur", 0.0), float)   # numbers, not strings
    assert array[-1]["name"] == "Record Window End"


def ascend_overlap_pid() -> int:
    from npuprof.export.trace_array import OVERLAP_PID
    return OVERLAP_PID


def test_array_form_names_processes_as_the_ascend_tools_expect(traces):
    _, _, array = traces
    names = {e["pid"]: e["args"]["name"] for e in array if e["ph"] == "M" and e["name"] == "process_name"}
    by_event = {}
    for e in array:
        if e["ph"] == "X":
            by_event.setdefault(e["name"], names[e["pid"]])
    assert by_event["ProfilerStep#1"] == by_event["MatMul"] == by_event["aclnnAdd"] == "MindSpore"
    assert by_event["hcom_allReduce_1"] == "HCCL"           # host-side communication
    assert by_event["hcom_allReduce_2"] == "Ascend Hardware"   # on the device: its stream
    assert by_event["forward"] == "MsTx" and by_event["Add_k"] == "Ascend Hardware"
    assert by_event["Computing"] == by_event["Free"] == "Overlap Analysis"
    overlap = [e for e in array if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == ascend_overlap_pid()]
    assert [e["args"]["name"] for e in sorted(overlap, key=lambda e: e["tid"])] == list(OVERLAP_THREADS)
    labels = {e["pid"]: e["args"]["labels"] for e in array if e["ph"] == "M" and e["name"] == "process_labels"}
    assert [labels[p] for p, n in names.items() if n == "Ascend Hardware"] == ["NPU 0"]


def test_hccl_threads_are_communication_groups_with_a_sort_index(tmp_path):
    """msprof-analyze compare reads communication ops only from HCCL threads whose name holds "Communication"
    and that have a thread_sort_index: one such thread per group, whatever host thread issued the op."""
    args = ['{"group": "world", "size": 64}', '{"group": "dp"}', '{"group": "world", "size": 128}', "", "{bad"]
    ev = EventTable.from_records(ts=[DAY0 + i * 1_000 for i in range(6)], dur=500,
                                 kind=[K.COMM] * 5 + [K.OP], name=[f"hcom_allReduce_{i}" for i in range(5)] + ["Add"],
                                 args=args + [""], pid=4242, tid=[7, 8, 7, 7, 9, 7])
    array = json.loads(write_trace_array(ev, tmp_path / "t.json", host_pid=4242).read_text())
    hccl = next(e["pid"] for e in array if e["ph"] == "M" and e["name"] == "process_name"
                and e["args"]["name"] == "HCCL")
    names = {e["tid"]: e["args"]["name"] for e in array
             if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == hccl}
    sort = {e["tid"]: e["args"]["sort_index"] for e in array
            if e["ph"] == "M" and e["name"] == "thread_sort_index" and e["pid"] == hccl}
    assert sorted(names.values()) == ["Communication", "Group dp Communication", "Group world Communication"]
    assert set(sort) == set(names) and len(set(sort.values())) == 3
    thread_of = {e["name"]: names[e["tid"]] for e in array if e["ph"] == "X" and e["pid"] == hccl}
    assert thread_of == {"hcom_allReduce_0": "Group world Communication", "hcom_allReduce_2": "Group world Communication",
                         "hcom_allReduce_1": "Group dp Communication", "hcom_allReduce_3": "Communication",
                         "hcom_allReduce_4": "Communication"}   # no group, or args that are not JSON
    add = next(e for e in array if e["ph"] == "X" and e["name"] == "Add")
    assert (add["pid"], add["tid"]) == (4242, 7)   # other host events keep their thread


def test_the_kineto_form_keeps_host_threads_for_communication(tmp_path):
    ev = EventTable.from_records(ts=[DAY0, DAY0 + 1_000], dur=500, kind=[K.COMM, K.OP], name=["hcom_x", "Add"],
                                 args=['{"group": "world"}', ""], pid=4242, tid=7)
    doc = json.loads(write_trace(ev, tmp_path / "k.json", host_pid=4242).read_text())
    assert {(e["name"], e["tid"]) for e in doc["traceEvents"] if e["ph"] == "X"} == {("hcom_x", 7), ("Add", 7)}
    assert [e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"] == \
        ["Thread 7"]


def test_overlap_analysis_sums_to_step_trace_time(traces):
    events, _, array = traces
    st = step_trace(events).records()
    got = {name: 0.0 for name in OVERLAP_THREADS}
    spans = {name: [] for name in OVERLAP_THREADS}
    for e in array:
        if e["ph"] == "X" and e["pid"] == ascend_overlap_pid():
            got[e["name"]] += e["dur"]
            spans[e["name"]].append((e["ts"], e["ts"] + e["dur"]))
    for name, column in (("Computing", "Computing"), ("Communication", "Communication"),
                         ("Communication(Not Overlapped)", "Communication(Not Overlapped)"), ("Free", "Free")):
        assert got[name] == pytest.approx(sum(r[column] for r in st), abs=1e-6), name
    # the advisor's E2E is last end - first start of these events: from the first step window's start to the
    # last one's end (a step with device work is measured over its activity, see step_breakdown.step_windows)
    ends = [e for s in spans.values() for _, e in s]
    starts = [s for v in spans.values() for s, _ in v]
    _, win_starts, win_ends = step_windows(events)
    assert max(ends) - min(starts) == pytest.approx((win_ends[-1] - win_starts[0]) / 1000, abs=1e-6)
    assert sum(r["Stage"] for r in st) == pytest.approx((win_ends - win_starts).sum() / 1000, abs=1e-6)
    for name, segs in spans.items():   # disjoint within each thread
        segs.sort()
        assert all(a[1] <= b[0] for a, b in zip(segs, segs[1:])), name
    # hand-checked: step 1 computes on kernels [16,20) [45,53) [90,110) -> 32 µs; comm (host) [40,70) -> 30 µs,
    # 8 of them under Add_k; step 2: kernel [120,130), comm [125,145) -> 10 and 20, 5 overlapped
    assert got["Computing"] == pytest.approx(42.0) and got["Communication"] == pytest.approx(50.0)
    assert got["Communication(Not Overlapped)"] == pytest.approx(37.0)
    # windows [16,110) and [120,145) µs: 94 + 25, less busy 54 + 25
    assert got["Free"] == pytest.approx(94.0 + 25.0 - 54.0 - 25.0)


def test_overlap_segments_without_steps_cover_the_run():
    ev = EventTable.from_records(ts=[0, 100, 200], dur=[50, 50, 100], kind=[K.OP, K.OP, K.COMM],
                                 name=["a", "b", "c"])
    seg = overlap_segments(ev)
    length = {k: int((e - s).sum()) for k, (s, e) in seg.items()}
    assert length == {"Computing": 100, "Communication": 100, "Communication(Not Overlapped)": 100, "Free": 100}
    empty = overlap_segments(EventTable.empty())
    assert all(len(s) == 0 for s, _ in empty.values())


def test_empty_table_writes_a_loadable_array(tmp_path):
    doc = json.loads(write_trace_array(EventTable.empty(), tmp_path / "t.json").read_text())
    assert isinstance(doc, list) and doc[-1]["name"] == "Record Window End"


def test_npuprof_reads_the_array_form_back(traces, tmp_path):
    events, _, _ = traces
    back, problems = read_ascend_output(tmp_path / "ascend", device=0, pid=4242)
    assert problems == []
    base = base_time_ns(events)
    original = Counter((events.strings[n], int(t) - base, int(d)) for n, t, d, k in
                       zip(events["name"], events["ts"], events["dur"], events["kind"]) if k != K.COUNTER)
    read = Counter((back.strings[n], int(t), int(d)) for n, t, d, k in
                   zip(back["name"], back["ts"], back["dur"], back["kind"]) if k != K.COUNTER)
    # Overlap Analysis is derived and skipped by the reader; the closing instant comes back as a mark
    assert read - original == Counter({("Record Window End", 205_000 + 3_600 * 10**9, 0): 1})
    assert original - read == Counter()
    kinds = {back.strings[n]: EventKind(k) for n, k in zip(back["name"], back["kind"])}
    assert kinds["ProfilerStep#1"] == K.STEP and kinds["MatMul"] == K.OP and kinds["forward"] == K.RANGE
    assert kinds["hcom_allReduce_1"] == kinds["hcom_allReduce_2"] == K.COMM and kinds["Add_k"] == K.KERNEL
    assert kinds["start"] == K.MARK
    counters = [(int(t), float(v)) for t, v, k in zip(back["ts"], back["value"], back["kind"]) if k == K.COUNTER]
    assert counters == [(60_000 + 3_600 * 10**9, 55.0)]


# -- the run copy and the command line -----------------------------------------------------------------
@pytest.fixture
def run(tmp_path):
    """One window of three steps, rank 1 of 2, text and db outputs."""
    prof = Profiler(output_path=tmp_path / "prof", schedule=schedule(wait=0, active=3, repeat=1),
                    export_type=["text", "db"], rank=1, world_size=2)
    prof.start()
    for step in range(3):
        with record_function("train"):
            sum(range(20000 + step))
        prof.step()
    prof.stop()
    return prof.analyse()[0]


def _tree(path):
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_export_ascend_copies_a_run_with_the_array_trace(run, tmp_path, capsys):
    before = _tree(run.run_dir)
    out = tmp_path / "ascend"
    assert main(["export", "ascend", "-dir", str(run.run_dir), "-o", str(out)]) == 0
    copy = out / run.run_dir.name
    assert capsys.readouterr().out.split() == [str(copy)]
    after = _tree(run.run_dir)
    assert after.keys() == before.keys()   # the source run gains or loses nothing
    src_out = run.run_dir / "ASCEND_PROFILER_OUTPUT"
    assert isinstance(json.loads((src_out / "trace_view.json").read_text()), dict)   # #2: Kineto form stays
    got = _tree(copy)
    # what the Ascend tools read; npuprof's own record of the analysis (npuprof_analysis.json) is not copied
    expected = {"profiler_info_1.json"} | {f"ASCEND_PROFILER_OUTPUT/{p.name}" for p in src_out.iterdir()
                                           if p.name != "npuprof_analysis.json"}
    assert set(got) == expected and "ASCEND_PROFILER_OUTPUT/ascend_mindspore_profiler_1.db" in got
    for name, data in got.items():
        if not name.endswith("trace_view.json"):
            assert data == after[name], name
    trace = json.loads(got["ASCEND_PROFILER_OUTPUT/trace_view.json"])
    assert isinstance(trace, list)
    names = [e["name"] for e in trace if e["ph"] == "X"]
    assert names.count("train") == 3 and {"ProfilerStep#0", "ProfilerStep#2", "Free"} <= set(names)
    with open(src_out / "step_trace_time.csv", newline="") as fh:
        free = sum(float(r["Free"]) for r in csv.DictReader(fh))
    assert sum(e["dur"] for e in trace if e["name"] == "Free" and e["ph"] == "X") == pytest.approx(free, abs=0.01)
    assert not [p for p in out.rglob("*") if ".npuprof-export." in p.name or ".tmp." in p.name]


def test_a_copy_is_read_back_and_never_rewritten(run, tmp_path, capsys, monkeypatch):
    out = tmp_path / "ascend"
    assert main(["export", "ascend", "-dir", str(run.run_dir), "-o", str(out)]) == 0
    copy = out / run.run_dir.name
    before = _tree(copy)
    capsys.readouterr()
    assert main(["show", "-dir", str(out)]) == 0          # #34.2: everything npuprof writes, npuprof reads
    shown = capsys.readouterr().out
    assert "holds no data" not in shown and "ProfilerStep" not in shown and "train" in shown
    (back,) = analyse_path(out)
    assert not back.info.writable                           # a copy is read-only input, as the tool's own runs
    named = Counter(back.events.strings[n] for n in back.events["name"])
    assert named["train"] == 3 and {"ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2"} <= set(named)
    assert [r[0] for r in back.tables["step_trace_time"].rows()] == [r[0] for r in run.tables["step_trace_time"].rows()]
    monkeypatch.chdir(tmp_path)
    assert main(["analyse", str(copy), "--quiet"]) == 0       # outputs go to ./npuprof_output, not into the copy
    assert main(["analyse", str(copy), "-o", str(tmp_path / "again"), "--quiet"]) == 0
    assert _tree(copy) == before
    assert (tmp_path / "npuprof_output").is_dir() and (tmp_path / "again").is_dir()
    # the source run, which has its raw data, is analysed again as before
    assert main(["analyse", str(run.run_dir), "--quiet"]) == 0


def test_export_ascend_keeps_the_layout_of_a_parent(tmp_path):
    prof = tmp_path / "job"
    for rank in (0, 1):
        with Profiler(output_path=prof / f"rank{rank}", rank=rank, world_size=2) as p:
            sum(range(1000))
        p.analyse()
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")     # OUT may exist and hold other things
    assert main(["export", "ascend", "-dir", str(prof), "-o", str(out)]) == 0
    copies = sorted(p.relative_to(out).parts[0] for p in out.glob("rank*/*_ascend_ms"))
    assert copies == ["rank0", "rank1"] and (out / "keep.txt").read_text() == "mine"
    for c in out.glob("rank*/*_ascend_ms"):
        assert isinstance(json.loads((c / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text()), list)


def test_copies_of_other_frameworks_take_the_suffix_msprof_analyze_knows(tmp_path, capsys):
    with Profiler(output_path=tmp_path / "prof", framework="tf") as p:
        sum(range(1000))
    (res,) = p.analyse()
    assert res.run_dir.name.endswith("_ascend_tf")
    out = tmp_path / "out"
    assert main(["export", "ascend", "-dir", str(tmp_path / "prof"), "-o", str(out)]) == 0
    (copy,) = out.iterdir()
    assert copy.name == res.run_dir.name[:-len("tf")] + "ms"
    assert capsys.readouterr().out.split() == [str(copy)]
    info = json.loads((copy / "profiler_info_0.json").read_text())
    assert info == json.loads((res.run_dir / "profiler_info_0.json").read_text())   # still says what ran


def test_two_runs_with_one_copy_name_are_refused_before_writing(tmp_path, capsys):
    with Profiler(output_path=tmp_path / "prof", framework="tf") as p:
        sum(range(1000))
    (res,) = p.analyse()
    twin = res.run_dir.with_name(res.run_dir.name[:-len("tf")] + "ms")   # e.g. a MindSpore run of that instant
    shutil.copytree(res.run_dir, twin)
    assert main(["export", "ascend", "-dir", str(tmp_path / "prof"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "invalid -dir=" in err and "two runs would both be copied to" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", ["no_o", "inside_dir", "is_file", "missing_dir", "copy_exists", "run_parent"])
def test_export_ascend_refuses_bad_paths(run, tmp_path, capsys, case):
    src = run.run_dir
    argv = ["export", "ascend", "-dir", str(src), "-o", str(tmp_path / "out")]
    param = "-o"
    if case == "no_o":
        argv = argv[:-2]
    elif case == "inside_dir":
        argv[-1] = str(src / "ascend_copy")
    elif case == "is_file":
        (tmp_path / "f").write_text("x")
        argv[-1] = str(tmp_path / "f")
    elif case == "missing_dir":
        argv[3], param = str(tmp_path / "nope"), "-dir"
    elif case == "copy_exists":
        (tmp_path / "out" / src.name).mkdir(parents=True)
    elif case == "run_parent":      # OUT/<run name> would be the run itself
        argv[-1] = str(src.parent)
    before = _tree(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"npuprof: error: invalid {param}=") and err.count("\n") == 1
    assert _tree(tmp_path) == before        # nothing written anywhere


def test_a_failed_copy_leaves_nothing(run, tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ascend_copy, "write_trace_array", boom)
    out = tmp_path / "out"
    assert main(["export", "ascend", "-dir", str(run.run_dir), "-o", str(out)]) == 1
    assert [p for p in out.rglob("*")] == []


def test_overlap_of_random_events_equals_step_trace():
    rng = np.random.default_rng(7)
    n = 400
    ts = np.sort(rng.integers(0, 1_000_000, n))
    kind = rng.choice([int(K.KERNEL), int(K.COMM), int(K.OP)], n)
    ev = EventTable.from_records(ts=np.concatenate([[0, 400_000], ts]), dur=np.concatenate(
        [[400_000, 700_000], rng.integers(1, 30_000, n)]), kind=np.concatenate([[int(K.STEP)] * 2, kind]),
        name=["ProfilerStep#0", "ProfilerStep#1"] + [f"e{i}" for i in range(n)],
        device=np.concatenate([[-1, -1], np.where(kind == int(K.KERNEL), 0, -1)]))
    ev = assign_steps(ev.select(np.argsort(ev["ts"], kind="stable")))
    st = step_trace(ev).records()
    seg = overlap_segments(ev)
    for name in OVERLAP_THREADS:
        s, e = seg[name]
        assert int((e - s).sum()) == round(sum(r[name] for r in st) * 1000), name
