"""MindSpore file parsers: FRAMEWORK CPU op files and a finished *_ascend_ms directory.

These tests write files in the exact formats MindSpore 2.10 writes (the CPU
ones were captured from real CPU runs; the NPU ones follow MindSpore's
viewers: kernel_details.csv columns and trace_view.json process names) and
never import MindSpore, so they run in the pytest process.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import npuprof
from npuprof.events import EventKind
from npuprof.integrations.mindspore import parser
from npuprof.readers.ascend_output import read_ascend_output
from npuprof.readers.time_text import us_text_to_ns
from npuprof.integrations.mindspore.framework_files import op_type_of, read_framework_dir
from ms_support import Ctx

# Real lines from MindSpore 2.10 CPU runs (GRAPH mode, then PyNative), one op per line.
GRAPH_TIMESTAMPS = (
    "Default/fc1-Dense/MatMul-op0;HostCpuOps;1795306215611889403,3.77458,0 1795306215616859798,0.025441,0 \n"
    "Default/fc1-Dense/BiasAdd-op0;HostCpuOps;1795306215615709044,0.014307,0 1795306215616897368,0.014372,0 \n"
    "Default/relu-ReLU/ReLU-op0;HostCpuOps;1795306215615731754,0.02512,0 \n"
)
GRAPH_DETAIL = (
    "op_side,op_type,op_name,full_op_name,op_occurrences,op_total_time(ms),op_avg_time(ms),total_proportion,"
    "subgraph,pid\n"
    "Host,MatMul,MatMul-op0,Default/fc1-Dense/MatMul-op0,2,3.80002,1.90001,0.97,Default,2762\n"
    "Host,BiasAdd,BiasAdd-op0,Default/fc1-Dense/BiasAdd-op0,2,0.028679,0.01434,0.01,Default,2762\n"
    "Host,ReLU,ReLU-op0,Default/relu-ReLU/ReLU-op0,1,0.02512,0.02512,0.01,Default,2762\n"
)
PYNATIVE_TIMESTAMPS = (
    "MatMul;HostCpuOps;1795306209649981581,4.67636,0 1795306209655389286,0.010725,0 \n"
    "Default/BiasAdd-op0;HostCpuOps;1795306209654767406,0.037607,0 \n"
)


def write_framework(root: Path, timestamps: str, detail: str = "", rank: int = 0) -> Path:
    fw = root / "FRAMEWORK"
    fw.mkdir(parents=True, exist_ok=True)
    (fw / f"cpu_op_execute_timestamp_{rank}.txt").write_text(timestamps)
    if detail:
        (fw / f"cpu_op_detail_info_{rank}.csv").write_text(detail)
    return fw


# -- FRAMEWORK ----------------------------------------------------------------------------------------------------
def test_graph_mode_ops_keep_exact_ns_and_types_from_detail_file(tmp_path):
    fw = write_framework(tmp_path, GRAPH_TIMESTAMPS, GRAPH_DETAIL)
    table, problems = read_framework_dir(fw)
    assert problems == []
    t = table.sorted()
    assert len(t) == 5
    assert set(t["kind"].tolist()) == {int(EventKind.OP)}
    assert t["ts"][0] == 1795306215611889403                      # exact: no float round trip
    assert t["dur"][0] == 3774580                                 # 3.77458 ms
    assert t.column_strings("type") == ["MatMul", "BiasAdd", "ReLU", "MatMul", "BiasAdd"]
    assert t.column_strings("name")[0] == "Default/fc1-Dense/MatMul-op0"
    assert set(t["pid"].tolist()) == {2762}
    assert set(t.column_strings("source")) == {"mindspore"}


def test_pynative_names_give_their_type_without_detail_file(tmp_path):
    fw = write_framework(tmp_path, PYNATIVE_TIMESTAMPS)
    table, problems = read_framework_dir(fw, default_pid=77)
    assert sorted(table.column_strings("type")) == ["BiasAdd", "MatMul", "MatMul"]
    assert set(table["pid"].tolist()) == {77}
    assert op_type_of("Gradients/Default/fc1-Dense/gradMatMul/MatMul-op12") == "MatMul"
    assert op_type_of("ReLU") == "ReLU"


def test_damaged_and_torn_lines_are_skipped_and_reported_rest_kept(tmp_path):
    text = (GRAPH_TIMESTAMPS
            + "Default/Broken-op1;HostCpuOps;1795306215615731754,abc,0 \n"
            + "no separators here\n"
            + "Default/fc2-Dense/MatMul-op1;HostCpuOps;1795306215617000000,0.5,0 17953062156")   # torn by a kill
    fw = write_framework(tmp_path, text, GRAPH_DETAIL)
    table, problems = read_framework_dir(fw)
    assert len(table) == 5
    assert len(problems) == 3 and all("skipped" in p for p in problems)


def test_memory_record_becomes_counter_series(tmp_path):
    fw = write_framework(tmp_path, PYNATIVE_TIMESTAMPS)
    (fw / "cpu_ms_memory_record_0.txt").write_text(
        "Timestamp(ns),Total Allocated(Byte),Total Reserved(Byte),Total Active(Byte)\n"
        "1795307196769466164,512,1073741824,512\n1795307196769565282,1024,1073741824,1024\n1795307196\n")
    table, problems = read_framework_dir(fw)
    ctr = table.select(table["kind"] == int(EventKind.COUNTER))
    assert len(ctr) == 6 and len(problems) == 1
    alloc = ctr.select(ctr.string_array("name") == "MindSpore Total Allocated(Byte)")
    assert alloc["ts"].tolist() == [1795307196769466164, 1795307196769565282]
    assert alloc["value"].tolist() == [512.0, 1024.0]


def test_us_text_to_ns_is_exact_at_epoch_magnitude():
    assert us_text_to_ns("1795306209649981.618") == 1795306209649981618
    assert us_text_to_ns("1795306209649981.6184\t") == 1795306209649981618
    assert us_text_to_ns("1795306209649981.6186") == 1795306209649981619
    assert us_text_to_ns("12") == 12000
    assert us_text_to_ns(4.25) == 4250
    # a float would have lost the ns here
    assert int(float("1795306209649981.618") * 1000) != 1795306209649981618


# -- a finished *_ascend_ms directory (NPU layout) -----------------------------------------------------------------
def _npu_trace() -> list:
    def meta(pid, name, labels=None):
        ev = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}]
        if labels:
            ev.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": labels}})
        return ev

    hw_pid, cann_pid, hccl_pid, freq_pid, tx_pid = 1000031, 1000000, 1000033, 1000034, 1000040
    return (meta(1, "MindSpore", "CPU") + meta(2, "CPU OP", "CPU") + meta(3, "Scope Layer")
            + meta(cann_pid, "CANN", "CPU") + meta(hw_pid, "Ascend Hardware", "NPU 3")
            + meta(hccl_pid, "HCCL", "NPU 3") + meta(freq_pid, "AI Core Freq", "NPU 3")
            + meta(tx_pid, "python3", "CPU")
            + [{"ph": "M", "name": "thread_name", "pid": hw_pid, "tid": 7, "args": {"name": "Stream 7"}}]
            + [
                {"ph": "X", "name": "ProfilerStep#4", "pid": 1, "tid": 11, "ts": "1700000000000000.000",
                 "dur": "900.000", "cat": ""},
                {"ph": "X", "name": "Default/MatMul-op0", "pid": 1, "tid": 11, "ts": "1700000000000010.500",
                 "dur": "20.000", "cat": "", "args": {"Sequence number": 3}},
                {"ph": "X", "name": "Kernel::KernelLaunch::Default/MatMul-op0", "pid": 1, "tid": 11,
                 "ts": "1700000000000012.000", "dur": "5.000"},
                {"ph": "X", "name": "train.py(12): step", "pid": 1, "tid": 11, "ts": "1700000000000001.000",
                 "dur": "800.000", "cat": "python_function"},
                {"ph": "X", "name": "Default/MatMul-op0", "pid": 2, "tid": 0, "ts": "1700000000000010.000",
                 "dur": "19.000", "args": {"type": "HostCpuOps"}},
                {"ph": "X", "name": "Default", "pid": 3, "tid": 0, "ts": "1700000000000010.000", "dur": "500.000"},
                {"ph": "X", "name": "AscendCL@aclnnMatmul", "pid": cann_pid, "tid": 11,
                 "ts": "1700000000000013.000", "dur": "3.250"},
                {"ph": "X", "name": "Default/MatMul-op0", "pid": hw_pid, "tid": 7, "ts": "1700000000000040.001",
                 "dur": "12.345", "args": {"Task Type": "AI_CORE", "Physic Stream Id": 7}},
                {"ph": "X", "name": "hcom_allReduce__123_0_1", "pid": hccl_pid, "tid": 2,
                 "ts": "1700000000000100.000", "dur": "50.000"},
                {"ph": "C", "name": "AI Core Freq", "pid": freq_pid, "tid": 0, "ts": "1700000000000000.000",
                 "args": {"MHz": 1800}},
                {"ph": "X", "name": "my_range", "pid": tx_pid, "tid": 11, "ts": "1700000000000005.000",
                 "dur": "100.000"},
                {"ph": "s", "id": 1, "name": "mindspore_to_npu", "cat": "async_npu", "pid": 1, "tid": 11,
                 "ts": "1700000000000012.000"},
            ])


KERNEL_DETAILS = (
    "Step ID,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),"
    "Wait Time(us),Block Num\n"
    "4,4294967295,11,7,Default/MatMul-op0,MatMul,static,AI_CORE,1700000000000040.001\t,12.345,0,8\n"
    "4,4294967295,12,7,Default/BiasAdd-op0,BiasAdd,static,AI_VECTOR_CORE,1700000000000060.000\t,2.5,7.654,4\n"
    "4,N/A,N/A,N/A,hcom_allReduce__123_0_1,hcom_allReduce_,N/A,COMMUNICATION,1700000000000100.000\t,50,0,N/A\n"
)


def write_ascend_ms(root: Path, name: str = "node1_4242_20250101000000000_ascend_ms", kernel_details: bool = True,
                    framework: bool = True) -> Path:
    run = root / name
    out = run / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "trace_view.json").write_text(json.dumps(_npu_trace()))
    if kernel_details:
        (out / "kernel_details.csv").write_text(KERNEL_DETAILS)
    (out / "op_statistic.csv").write_text("Device_id,OP Type,Core Type,Count,Total Time(us)\n3,MatMul,AI_CORE,1,12\n")
    (run / "profiler_info_0.json").write_text(json.dumps({"ms_profiler_info": {"rank_id": "0", "device_id": "3"},
                                                          "profiler_parameters": {}}))
    if framework:
        write_framework(run, "Default/MatMul-op0;HostCpuOps;1700000000000010000,0.019,11 \n")
    return run


def _by_kind(table) -> dict:
    out = {}
    for kind, name, typ in zip(table["kind"].tolist(), table.column_strings("name"), table.column_strings("type")):
        out.setdefault(EventKind(kind).name, []).append((name, typ))
    return out


def test_trace_view_processes_map_to_event_kinds(tmp_path):
    run = write_ascend_ms(tmp_path, kernel_details=False)
    table, problems = read_ascend_output(run / "ASCEND_PROFILER_OUTPUT", device=3, pid=4242, skip_cpu_ops=True)
    assert problems == []
    kinds = _by_kind(table)
    assert kinds["STEP"] == [("ProfilerStep#4", "ProfilerStep")]
    assert kinds["OP"] == [("Default/MatMul-op0", "MatMul")]          # MindSpore process; CPU OP skipped
    assert ("AscendCL@aclnnMatmul" not in [n for n, _ in kinds["API"]])
    assert ("aclnnMatmul", "AscendCL") in kinds["API"] and ("Kernel::KernelLaunch::Default/MatMul-op0",
                                                             "Kernel") in kinds["API"]
    assert kinds["KERNEL"] == [("Default/MatMul-op0", "MatMul")]
    assert kinds["COMM"] == [("hcom_allReduce__123_0_1", "hcom_allReduce_")]   # the type kernel_details names
    assert kinds["COUNTER"] == [("AI Core Freq MHz", "AI Core Freq")]
    assert kinds["RANGE"] == [("my_range", "mstx")]
    assert kinds["STACK"] == [("train.py(12): step", "python_function")]
    assert "Default" not in [n for n, _ in sum(kinds.values(), [])]  # Scope Layer is derived: skipped
    kern = table.select(table["kind"] == int(EventKind.KERNEL))
    assert kern["device"].tolist() == [3] and kern["stream"].tolist() == [7]
    assert kern["ts"].tolist() == [1700000000000040001] and kern["dur"].tolist() == [12345]
    host_op = table.select(table["kind"] == int(EventKind.OP))
    assert host_op["device"].tolist() == [-1]


def test_kernel_details_replace_hardware_trace_events(tmp_path):
    run = write_ascend_ms(tmp_path)
    table, problems = read_ascend_output(run / "ASCEND_PROFILER_OUTPUT", device=3, pid=4242)
    assert problems == []
    kinds = _by_kind(table)
    assert sorted(kinds["KERNEL"]) == [("Default/BiasAdd-op0", "BiasAdd"), ("Default/MatMul-op0", "MatMul")]
    # the COMMUNICATION row of kernel_details; the HCCL process's event of that operator only gives its group
    assert kinds["COMM"] == [("hcom_allReduce__123_0_1", "hcom_allReduce_")]
    kern = table.select(table["kind"] == int(EventKind.KERNEL)).sorted()
    assert kern["step"].tolist() == [4, 4]
    assert kern["stream"].tolist() == [7, 7]
    assert kern["ts"].tolist() == [1700000000000040001, 1700000000000060000]
    assert json.loads(kern.column_strings("args")[0])["Accelerator Core"] == "AI_CORE"


# launch links: MindSpore's HostToDevice (CANN node -> task) and async_npu (framework op -> task) flows
HW_TASK = {"pid": 1000031, "tid": 7, "ts": "1700000000000040.001"}
H2D_FLOWS = [{"ph": "s", "id": 51, "cat": "HostToDevice", "name": "HostToDevice", "pid": 1000000, "tid": 11,
              "ts": "1700000000000013.000"}, {"ph": "f", "id": 51, "cat": "HostToDevice", "name": "HostToDevice",
                                               "bp": "e", **HW_TASK}]
ASYNC_NPU_END = {"ph": "f", "id": 1, "cat": "async_npu", "name": "mindspore_to_npu", "bp": "e", **HW_TASK}


def _linked_run(tmp_path, flows: list, kernel_details: bool) -> Path:
    run = write_ascend_ms(tmp_path, kernel_details=kernel_details, framework=False)
    trace = run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    trace.write_text(json.dumps(json.loads(trace.read_text()) + flows))
    return run


def _links(table) -> dict:
    """name -> corr of the linked events."""
    return {n: c for n, c in zip(table.column_strings("name"), table["corr"].tolist()) if c >= 0}


@pytest.mark.parametrize("kernel_details", [False, True])
def test_host_to_device_flows_link_the_cann_call_to_its_task(tmp_path, kernel_details):
    run = _linked_run(tmp_path, H2D_FLOWS + [ASYNC_NPU_END], kernel_details)
    table, problems = read_ascend_output(run / "ASCEND_PROFILER_OUTPUT", device=3, pid=4242)
    assert problems == []
    # HostToDevice wins over async_npu (never a mix); the task read from kernel_details.csv (no ids there)
    # takes the link of the trace's hardware task with its start and name
    assert _links(table) == {"aclnnMatmul": 51, "Default/MatMul-op0": 51}
    kern = table.select(table["corr"] == 51)
    assert sorted(EventKind(k).name for k in kern["kind"].tolist()) == ["API", "KERNEL"]


def test_async_npu_flows_link_the_framework_launch_when_there_is_no_host_to_device(tmp_path):
    run = _linked_run(tmp_path, [ASYNC_NPU_END], kernel_details=True)   # the fixture has the async_npu start
    table, _ = read_ascend_output(run / "ASCEND_PROFILER_OUTPUT", device=3, pid=4242)
    assert _links(table) == {"Kernel::KernelLaunch::Default/MatMul-op0": 1, "Default/MatMul-op0": 1}


def test_flows_that_end_nowhere_link_nothing(tmp_path):
    run = _linked_run(tmp_path, [], kernel_details=True)   # only the fixture's dangling async_npu start
    table, _ = read_ascend_output(run / "ASCEND_PROFILER_OUTPUT", device=3, pid=4242)
    assert set(_links(table)) <= {"Kernel::KernelLaunch::Default/MatMul-op0"}
    kern = table.select(table["kind"] == int(EventKind.KERNEL))
    assert (kern["corr"] < 0).all()


def test_analysis_of_a_linked_ascend_ms_dir_draws_the_launch_arrow(tmp_path):
    run = _linked_run(tmp_path, H2D_FLOWS, kernel_details=True)
    (res,) = npuprof.analyse(run, output_path=tmp_path / "out")
    trace = json.loads((tmp_path / "out" / run.name / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    corr = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X" and "correlation" in e.get("args", {}):
            corr.setdefault(e["name"], []).append((e["pid"], e["args"]["correlation"]))
    assert set(corr) == {"aclnnMatmul", "Default/MatMul-op0"}   # the host op of that name stays unlinked
    (host,), (task,) = corr["aclnnMatmul"], corr["Default/MatMul-op0"]
    assert host[1] == task[1] and host[0] != task[0]
    flows = [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")]
    assert sorted(e["ph"] for e in flows) == ["f", "s"] and {e["cat"] for e in flows} == {"ac2g"}


def test_unreadable_trace_is_reported_not_fatal(tmp_path):
    run = write_ascend_ms(tmp_path, framework=False)
    (run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text('[{"ph": "X", "name": "cut')
    table, problems = read_ascend_output(run / "ASCEND_PROFILER_OUTPUT", device=3)
    assert any("not valid JSON" in p for p in problems)
    assert int((table["kind"] == int(EventKind.KERNEL)).sum()) == 2     # kernel_details still read


# -- the plugin in npuprof's pipeline ---------------------------------------------------------------------------
def test_npuprof_analyse_reads_a_foreign_ascend_ms_dir_and_stays_idempotent(tmp_path):
    run = write_ascend_ms(tmp_path)
    before = {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}
    first = npuprof.analyse(tmp_path, output_path=tmp_path.parent / "out")   # the parent: runs found below it
    assert [r.run_dir for r in first] == [run]
    ev = first[0].events
    counts = {k.name: int((ev["kind"] == int(k)).sum()) for k in EventKind}
    assert counts["KERNEL"] == 2 and counts["OP"] == 2 and counts["STEP"] == 1 and counts["API"] == 2
    ops = {r[1]: r for r in first[0].tables["op_statistic"].rows()}
    assert "MatMul" in ops and ops["MatMul"][3] == 1
    # MindSpore's run is read-only input: npuprof's outputs went elsewhere, MindSpore's files are as they were
    assert (tmp_path.parent / "out" / run.name / "ASCEND_PROFILER_OUTPUT" / "analyse.done").exists()
    assert {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()} == before
    second = npuprof.analyse(run, output_path=tmp_path.parent / "out2")
    counts2 = {k.name: int((second[0].events["kind"] == int(k)).sum()) for k in EventKind}
    assert counts2 == counts


def test_recognise_claims_mindspore_dirs_only(tmp_path):
    foreign = write_ascend_ms(tmp_path / "a")
    assert parser.recognise(foreign)
    assert not parser.recognise(tmp_path / "a")                  # the parent is not a run
    empty = tmp_path / "b"
    (empty / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    assert not parser.recognise(empty)
    # an npuprof run with npuprof's own output and no FRAMEWORK is not MindSpore data
    own = tmp_path / "c"
    (own / "NPUPROF").mkdir(parents=True)
    (own / "ASCEND_PROFILER_OUTPUT").mkdir()
    (own / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text('{"traceEvents": []}')
    assert not parser.recognise(own)
    assert parser.parse_run(own, Ctx()) is None
    write_framework(own, PYNATIVE_TIMESTAMPS)
    assert parser.recognise(own)
    table = parser.parse_run(own, Ctx({"npuprof": {"pid": 99}}))
    assert len(table) == 3 and set(table["pid"].tolist()) == {99}


def test_plugin_modules_do_not_import_mindspore():
    code = ("import sys, npuprof.integrations.mindspore as m, npuprof.integrations.mindspore.plugin, "
            "npuprof.integrations.mindspore.parser; print('mindspore' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_framework_parsing_is_vectorised_per_line(tmp_path):
    # 200k timestamps on 4 lines parse without a Python loop per event
    rng = np.random.default_rng(0)
    starts = 1_700_000_000_000_000_000 + np.cumsum(rng.integers(1000, 5000, 200_000))
    lines = []
    for i, chunk in enumerate(np.array_split(starts, 4)):
        triples = " ".join(f"{s},0.001234,{i}" for s in chunk)
        lines.append(f"Default/op{i}/MatMul-op{i};HostCpuOps;{triples} ")
    fw = write_framework(tmp_path, "\n".join(lines) + "\n")
    table, problems = read_framework_dir(fw)
    assert problems == [] and len(table) == 200_000
    assert int(table["dur"].min()) == 1234
    assert np.array_equal(np.sort(table["ts"]), starts)


@pytest.mark.parametrize("bad", ["-5,0.1,0", "123,-0.5,0", "1,2"])
def test_bad_numbers_are_rejected_per_line(tmp_path, bad):
    fw = write_framework(tmp_path, f"Default/X-op0;HostCpuOps;{bad} \n" + PYNATIVE_TIMESTAMPS)
    table, problems = read_framework_dir(fw)
    assert len(table) == 3 and len(problems) == 1


def test_ascend_layout_nested_in_an_npuprof_run_is_read_once(tmp_path):
    # On Ascend the backend leaves MindSpore's *_ascend_ms whole under <run>/MINDSPORE/ and
    # MindSpore's analysis writes its ASCEND_PROFILER_OUTPUT there; npuprof's own ranges were
    # forwarded to mstx, so the trace's mstx copies must not be read a second time.
    with npuprof.Profiler(output_path=str(tmp_path / "out"), activities=["CPU"]) as prof:
        with npuprof.record_function("my_range"):
            pass
    (run,) = prof.saved_runs
    write_ascend_ms(run / "MINDSPORE")
    res = npuprof.analyse(run)[0]
    ev = res.events
    kinds = _by_kind(ev)
    assert sorted(kinds["KERNEL"]) == [("Default/BiasAdd-op0", "BiasAdd"), ("Default/MatMul-op0", "MatMul")]
    assert kinds["RANGE"] == [("my_range", "")]               # npuprof's own, not the trace's mstx copy
    assert len(kinds["OP"]) == 2                               # FRAMEWORK op + MindSpore framework op
    # the device operators, the HCCL row of kernel_details.csv included (as the tool lists it)
    assert {r["Name"]: r["Accelerator Core"] for r in res.tables["kernel_details"].records()} == {
        "Default/MatMul-op0": "AI_CORE", "Default/BiasAdd-op0": "AI_VECTOR_CORE",
        "hcom_allReduce__123_0_1": "COMMUNICATION"}
    assert set(ev.select(ev["kind"] == int(EventKind.KERNEL))["device"].tolist()) == {3}


@pytest.mark.parametrize("bad", ["9" * 40 + ",1.0,0", "1795306215615731754,nan,0", "1795306215615731754,-inf,0"])
def test_out_of_range_numbers_are_rejected_per_line(tmp_path, bad):
    fw = write_framework(tmp_path, f"Default/X-op0;HostCpuOps;{bad} \n" + PYNATIVE_TIMESTAMPS)
    table, problems = read_framework_dir(fw)
    assert len(table) == 3 and len(problems) == 1


def test_trace_events_with_odd_args_are_skipped_not_fatal(tmp_path):
    out = tmp_path / "ASCEND_PROFILER_OUTPUT"
    out.mkdir()
    (out / "trace_view.json").write_text(json.dumps([
        {"ph": "M", "name": "process_name", "pid": 1, "args": ["not", "a", "dict"]},
        {"ph": "C", "name": "HBM", "pid": 5, "ts": "1.000", "args": ["x"]},
        {"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": {"a": 1}, "dur": "1"},
        {"ph": "X", "name": "Default/MatMul-op0", "pid": 1, "tid": 1, "ts": "2.000", "dur": "1.000"},
    ]))
    table, problems = read_ascend_output(out)
    assert len(problems) == 1 and "1 malformed" in problems[0]
    assert table.column_strings("name") == ["Default/MatMul-op0"]


def test_unhashable_or_huge_ids_in_a_trace_are_survived(tmp_path):
    out = tmp_path / "ASCEND_PROFILER_OUTPUT"
    out.mkdir()
    (out / "trace_view.json").write_text(json.dumps([
        {"ph": "M", "name": "process_name", "pid": [1], "args": {"name": "x"}},
        {"ph": "X", "name": "a", "pid": 1 << 70, "tid": 1, "ts": "1700000000000000.5", "dur": 1},
        {"ph": "X", "name": "b", "pid": [2], "tid": 1, "ts": "1700000000000001.0", "dur": 1},
    ]))
    table, problems = read_ascend_output(out)
    assert table.column_strings("name") == ["a"] and len(problems) == 1
