"""record_shapes without a framework: MindSpore's cpu_framework shape file, the
operator_details analyzer and its CSV, the Kineto metadata, and the CANN tensor
columns kept in kernel args.

The MindSpore fixtures are lines of real MindSpore 2.10 CPU runs (npuprof's
integration, record_shapes=True, a Dense(64, 128) + ReLU + MSELoss + SGD step,
batch 8): the first step of a GRAPH-mode run and of a PyNative run.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import npuprof
from npuprof.analysis.operators import input_shapes_text, op_shape_statistic, operator_details
from npuprof.events import EventKind, EventTable
from npuprof.integrations.mindspore import parser
from npuprof.integrations.mindspore.framework_files import read_framework_dir
from npuprof.integrations.mindspore.shapes import shapes_args
from ms_support import Ctx

GRAPH_TIMESTAMPS = """\
Gradients/Default/Grad_ReLU/ReluGrad-op0;HostCpuOps;1795314826606929234,0.006433,0 
Expand/_PowTensorScalar/Pow-op0;HostCpuOps;1795314826606840745,0.011424,0 
Default/ReduceMean-op0;HostCpuOps;1795314826606814403,0.013087,0 
Default/SGD-op1;HostCpuOps;1795314826701629275,0.030892,0 
Default/SGD-op0;HostCpuOps;1795314826701585075,0.02201,0 
Gradients/Default/Grad_ReduceMean/RealDiv-op0;HostCpuOps;1795314826598151655,0.347984,0 
Default/MatMul-op0;HostCpuOps;1795314826598529111,8.06046,0 
Gradients/Default/Grad_MatMul/MatMul-op0;HostCpuOps;1795314826606942450,0.077491,0 
Default/BiasAdd-op0;HostCpuOps;1795314826606661693,0.018317,0 
Expand/_Muls/Mul-op0;HostCpuOps;1795314826606856583,0.007755,0 
Gradients/Default/Grad_BiasAdd/BiasAddGrad-op0;HostCpuOps;1795314826607028598,0.003521,0 
Gradients/Default/Grad_Square/Mul-op0;HostCpuOps;1795314826606920787,0.003027,0 
Default/Square-op0;HostCpuOps;1795314826606805274,0.003977,0 
Default/AssignAdd-op0;HostCpuOps;1795314826701502558,0.03003,0 
Default/Sub-op0;HostCpuOps;1795314826606760918,0.028159,0 
Default/ReLU-op0;HostCpuOps;1795314826606691050,0.049098,0 
"""
GRAPH_SHAPES = """\
RealDiv;RealDiv-op0;3758042519;input_1:[8, 128];input_2:[];
MatMul;MatMul-op0;3758042519;input_1:[8, 64];input_2:[128, 64];input_3:NoShape;input_4:NoShape;
BiasAdd;BiasAdd-op0;3758042519;input_1:[8, 128];input_2:[128];input_3:NoShape;
ReLU;ReLU-op0;3758042519;input_1:[8, 128];
Sub;Sub-op0;3758042519;input_1:[8, 128];input_2:[8, 128];
Square;Square-op0;3758042519;input_1:[8, 128];
ReduceMean;ReduceMean-op0;3758042519;input_1:[8, 128];input_2:TupleShape(NoShape, NoShape);input_3:NoShape;
Pow;Pow-op0;3758042519;input_1:[8, 128];input_2:[];
Mul;Mul-op0;3758042519;input_1:[8, 128];input_2:[];
Mul;Mul-op0;3758042519;input_1:[8, 128];input_2:[8, 128];
ReluGrad;ReluGrad-op0;3758042519;input_1:[8, 128];input_2:[8, 128];
MatMul;MatMul-op0;3758042519;input_1:[8, 128];input_2:[8, 64];input_3:NoShape;input_4:NoShape;
BiasAddGrad;BiasAddGrad-op0;3758042519;input_1:[8, 128];input_2:NoShape;
AssignAdd;AssignAdd-op0;3758042519;input_1:[1];input_2:[1];input_3:NoShape;
SGD;SGD-op0;3758042519;input_1:[128];input_2:[128];input_3:[];input_4:[128];input_5:[];input_6:[128];input_7:NoShape;
SGD;SGD-op1;3758042519;input_1:[128, 64];input_2:[128, 64];input_3:[];input_4:[128, 64];input_5:[];input_6:[128, 64];input_7:NoShape;
"""
GRAPH_DETAIL = """\
op_side,op_type,op_name,full_op_name,op_occurrences,op_total_time(ms),op_avg_time(ms),total_proportion,subgraph,pid
Host,MatMul,MatMul-op0,Default/MatMul-op0,3,8.1471,2.7157,0.882546,Default,12359
Host,MatMul,MatMul-op0,Gradients/Default/Grad_MatMul/MatMul-op0,3,0.358226,0.119409,0.0388054,Default,12359
Host,Mul,Mul-op0,Gradients/Default/Grad_Square/Mul-op0,3,0.006689,0.00222967,0.000724596,Default,12359
Host,Mul,Mul-op0,Expand/_Muls/Mul-op0,3,0.011516,0.00383867,0.00124749,Default,12359
"""
PYNATIVE_TIMESTAMPS = """\
ReluGrad;HostCpuOps;1795314910693818107,0.005785,0 
Pow;HostCpuOps;1795314910693732456,0.012172,0 
Default/SGD-op0;HostCpuOps;1795314910753263338,0.017984,0 
Default/AssignAdd-op0;HostCpuOps;1795314910753211715,0.026829,0 
Default/BiasAddGrad-op0;HostCpuOps;1795314910693848290,0.003581,0 
MatMul;HostCpuOps;1795314910665816690,13.4109,0 1795314910695113686,0.095964,0 
Default/BiasAdd-op0;HostCpuOps;1795314910679718761,0.024806,0 
Default/RealDiv-op0;HostCpuOps;1795314910693645448,0.013566,0 
ReLU;HostCpuOps;1795314910679914684,0.043606,0 
SubExt;HostCpuOps;1795314910680074166,0.030155,0 
Square;HostCpuOps;1795314910680143374,0.004425,0 
Ones;HostCpuOps;1795314910690183246,0.008359,0 
Mul;HostCpuOps;1795314910680253635,0.016807,0 1795314910693686248,0.003692,0 1795314910693759067,0.003929,0 1795314910693772972,0.001502,0 
Default/ReduceMean-op0;HostCpuOps;1795314910686104987,0.024813,0 
Tile;HostCpuOps;1795314910693594068,0.016863,0 
Default/SGD-op1;HostCpuOps;1795314910753301812,0.02678,0 
"""
PYNATIVE_SHAPES = """\
;;1853828503;
BiasAdd;BiasAdd-op0;1853828503;input_1:[8, 128];input_2:[128];input_3:NoShape;
;;1853828503;
;;1853828503;
;;1853828503;
;;1853828503;
ReduceMean;ReduceMean-op0;1853828503;input_1:[8, 128];input_2:TupleShape(NoShape, NoShape);input_3:NoShape;
;;1853828503;
;;1853828503;
RealDiv;RealDiv-op0;1853828503;input_1:[8, 128];input_2:[];
;;1853828503;
;;1853828503;
;;1853828503;
;;1853828503;
;;1853828503;
BiasAddGrad;BiasAddGrad-op0;1853828503;input_1:[8, 128];input_2:NoShape;
;;1853828503;
AssignAdd;AssignAdd-op0;1853828503;input_1:[1];input_2:[1];input_3:NoShape;
SGD;SGD-op0;1853828503;input_1:[128];input_2:[128];input_3:[];input_4:[128];input_5:[];input_6:[128];input_7:NoShape;
SGD;SGD-op1;1853828503;input_1:[128, 64];input_2:[128, 64];input_3:[];input_4:[128, 64];input_5:[];input_6:[128, 64];input_7:NoShape;
"""
FORWARD_MATMUL_DIMS = [[8, 64], [128, 64], [], []]    # x (batch 8, 64 features), weight (128, 64), 2 flags
BACKWARD_MATMUL_DIMS = [[8, 128], [8, 64], [], []]


def write_fw(root: Path, timestamps: str, shapes: str, detail: str = "") -> Path:
    fw = root / "FRAMEWORK"
    fw.mkdir(parents=True, exist_ok=True)
    (fw / "cpu_op_execute_timestamp_0.txt").write_text(timestamps)
    (fw / "cpu_framework_0.txt").write_text(shapes)
    if detail:
        (fw / "cpu_op_detail_info_0.csv").write_text(detail)
    return fw


def op_args(table: EventTable) -> dict:
    """full op name -> list of parsed args (one per launch, start order)."""
    out: dict = {}
    order = np.argsort(table["ts"], kind="stable")
    for i in order.tolist():
        text = table.strings[table["args"][i]]
        out.setdefault(table.strings[table["name"][i]], []).append(json.loads(text) if text else None)
    return out


# -- the shape file ----------------------------------------------------------------------------------------------
def test_graph_mode_launches_get_their_own_shapes_even_with_one_op_name(tmp_path):
    # forward and backward MatMul are both "MatMul-op0" in the shape file: only the launch order tells them apart
    fw = write_fw(tmp_path, GRAPH_TIMESTAMPS, GRAPH_SHAPES, GRAPH_DETAIL)
    table, problems = read_framework_dir(fw, record_shapes=True)
    assert problems == []
    args = op_args(table)
    assert len(args) == 16 and all(a[0] is not None for a in args.values())
    assert args["Default/MatMul-op0"][0]["Input Dims"] == FORWARD_MATMUL_DIMS
    assert args["Default/MatMul-op0"][0]["Input Shapes"] == "8,64;128,64"
    assert args["Gradients/Default/Grad_MatMul/MatMul-op0"][0]["Input Dims"] == BACKWARD_MATMUL_DIMS
    assert args["Expand/_Muls/Mul-op0"][0]["Input Dims"] == [[8, 128], []]
    assert args["Gradients/Default/Grad_Square/Mul-op0"][0]["Input Dims"] == [[8, 128], [8, 128]]
    # a tuple input is a list of entries; a 0-d tensor is empty in the Ascend text form
    assert args["Default/ReduceMean-op0"][0] == {"Input Dims": [[8, 128], [[], []], []], "Input Shapes": "8,128"}
    assert args["Gradients/Default/Grad_ReduceMean/RealDiv-op0"][0]["Input Shapes"] == "8,128;"
    assert args["Default/SGD-op1"][0]["Input Shapes"] == "128,64;128,64;;128,64;;128,64"


def test_pynative_pyboost_ops_have_no_shapes_the_others_do(tmp_path):
    fw = write_fw(tmp_path, PYNATIVE_TIMESTAMPS, PYNATIVE_SHAPES)
    table, problems = read_framework_dir(fw, record_shapes=True)
    assert problems == []
    args = op_args(table)
    assert args["MatMul"] == [None, None] and args["ReLU"] == [None] and args["Mul"] == [None] * 4
    assert args["Default/BiasAdd-op0"] == [{"Input Dims": [[8, 128], [128], []], "Input Shapes": "8,128;128"}]
    assert args["Default/SGD-op0"][0]["Input Dims"] == [[128], [128], [], [128], [], [128], []]


def test_without_record_shapes_the_shape_file_is_ignored(tmp_path):
    fw = write_fw(tmp_path, GRAPH_TIMESTAMPS, GRAPH_SHAPES, GRAPH_DETAIL)
    table, problems = read_framework_dir(fw)
    assert problems == [] and len(table) == 16
    assert set(table["args"].tolist()) == {0}


def test_a_cut_short_shape_file_keeps_the_launches_before_the_cut(tmp_path):
    lines = GRAPH_SHAPES.splitlines(keepends=True)
    torn = lines[10][:45]          # "ReluGrad;ReluGrad-op0;3758042519;input_1:[8, 1"
    fw = write_fw(tmp_path, GRAPH_TIMESTAMPS, "".join(lines[:10]) + torn, GRAPH_DETAIL)
    table, problems = read_framework_dir(fw, record_shapes=True)
    args = op_args(table)
    assert len(problems) == 2, problems
    assert "1 damaged line" in problems[0] and "the first 10 line up, the other 6" in problems[1]
    assert args["Default/MatMul-op0"][0]["Input Dims"] == FORWARD_MATMUL_DIMS
    assert args["Default/ReLU-op0"][0]["Input Dims"] == [[8, 128]]
    # after the cut nothing is guessed: the backward MatMul has the same op name but other shapes
    assert args["Gradients/Default/Grad_MatMul/MatMul-op0"] == [None]
    assert args["Gradients/Default/Grad_ReLU/ReluGrad-op0"] == [None]
    assert args["Default/SGD-op1"] == [None]


def test_shape_lines_of_other_ops_stop_the_matching(tmp_path):
    # a line naming another op than the launch at its place: nothing from there on is trusted
    lines = GRAPH_SHAPES.splitlines(keepends=True)
    swapped = lines[:3] + [lines[4], lines[3]] + lines[5:]
    table, problems = read_framework_dir(write_fw(tmp_path, GRAPH_TIMESTAMPS, "".join(swapped), GRAPH_DETAIL),
                                         record_shapes=True)
    args = op_args(table)
    assert "the first 3 line up" in problems[0]
    assert args["Default/BiasAdd-op0"][0] is not None and args["Default/ReLU-op0"] == [None]


@pytest.mark.parametrize("line", [
    "MatMul;MatMul-op0;1;input_1:[8, x];",
    "MatMul;MatMul-op0;1;input_1:[8, 64",
    "MatMul;MatMul-op0;1;input_1:Weird;",
    "MatMul;MatMul-op0;1;first:[8];",
    "MatMul;MatMul-op0",
])
def test_damaged_shape_lines_are_refused(line):
    assert shapes_args(line) is None


def test_nested_tuple_shapes_keep_their_tensors():
    op, args = shapes_args("Concat;Concat-op3;7;input_1:TupleShape([2, 3], [4, 3]);input_2:NoShape;")
    assert op == "Concat-op3"
    assert json.loads(args) == {"Input Dims": [[[2, 3], [4, 3]], []], "Input Shapes": "2,3;4,3"}


def test_parser_follows_the_runs_record_shapes(tmp_path):
    write_fw(tmp_path, GRAPH_TIMESTAMPS, GRAPH_SHAPES, GRAPH_DETAIL)
    on = parser.parse_run(tmp_path, Ctx({"profiler_parameters": {"record_shapes": True}}))
    off = parser.parse_run(tmp_path, Ctx({"profiler_parameters": {"record_shapes": False}}))
    unknown = parser.parse_run(tmp_path, Ctx())      # a CPU-only *_ascend_ms dir has no profiler_info
    assert (on["args"] != 0).all()
    assert (off["args"] == 0).all() and (unknown["args"] == 0).all()
    # MindSpore's own profiler_info (Ascend runs keep it under MINDSPORE/) decides when npuprof's has none
    nested = tmp_path / "MINDSPORE" / "host_1_20260101000000000_ascend_ms"
    nested.mkdir(parents=True)
    (nested / "profiler_info_0.json").write_text(json.dumps({"profiler_parameters": {"record_shapes": True}}))
    assert (parser.parse_run(tmp_path, Ctx())["args"] != 0).all()


# -- operator_details ---------------------------------------------------------------------------------------------
def test_operator_details_rows_follow_launch_order_and_skip_shapeless_events():
    ev = EventTable.from_records(
        ts=[30, 10, 20, 40, 50], dur=[1] * 5,
        kind=[EventKind.OP, EventKind.OP, EventKind.OP, EventKind.RANGE, EventKind.API],
        name=["ReLU-op0", "MatMul-op0", "MatMul", "fwd", "load"],
        args=['{"Input Dims": [[8, 128]], "Input Shapes": "8,128"}',
              '{"Input Dims": [[8, 64], [128, 64], [], []], "Input Shapes": "8,64;128,64"}',
              "", '{"Input Dims": [[1]]}', '{"Input Dims": [[4, 3], [[2], [5, 6]], []]}']).sorted()
    t = operator_details(ev)
    assert t.columns == ["Name", "Input Shapes"]
    assert t.rows() == [["MatMul-op0", "8,64;128,64"], ["ReLU-op0", "8,128"]]   # user ranges, API calls: no


def test_input_dims_alone_give_the_ascend_text():
    ev = EventTable.from_records(ts=[1], dur=[1], kind=[EventKind.OP], name=["Concat"],
                                 args=['{"Input Dims": [[4, 3], [[2], [5, 6]], []]}'])
    assert operator_details(ev).rows() == [["Concat", "4,3;2;5,6;"]]


def test_operator_details_is_empty_without_shapes():
    ev = EventTable.from_records(ts=[1, 2], dur=[1, 1], kind=[EventKind.OP, EventKind.OP], name=["a", "b"],
                                 args=['{"Op Type": "MatMul"}', "not json"])
    assert len(operator_details(ev)) == 0
    assert len(operator_details(EventTable.empty())) == 0


# -- op_shape_statistic (torch's key_averages(group_by_input_shape=True)) ------------------------------------------
def test_op_shape_statistic_groups_by_type_shapes_and_core():
    ev = EventTable.from_records(
        ts=[1, 2, 3, 4, 5, 6], dur=[4000, 1000, 3000, 2000, 500, 700],
        kind=[EventKind.OP, EventKind.OP, EventKind.OP, EventKind.KERNEL, EventKind.OP, EventKind.OP],
        name=["Default/MatMul-op0", "Grad/MatMul-op0", "Default/MatMul-op0", "MatMul_1", "ReLU-op0", "x"],
        type=["MatMul", "MatMul", "MatMul", "MatMul", "ReLU", "Add"], device=[-1, -1, -1, 0, -1, -1],
        args=['{"Input Shapes": "8,64;128,64"}', '{"Input Shapes": "8,128;8,64"}', '{"Input Shapes": "8,64;128,64"}',
              '{"Input Shapes": "8,64;128,64"}', '{"Input Dims": [[8, 128]]}', '{"Op Type": "Add"}']).sorted()
    t = op_shape_statistic(ev)
    assert t.columns[:5] == ["Device_id", "OP Type", "Input Shapes", "Core Type", "Count"]
    rows = [r[:5] + [r[5], r[-1]] for r in t.rows()]
    assert rows == [   # by total time; the kernel is its own group; shapeless Add is left out
        ["host", "MatMul", "8,64;128,64", "HOST_CPU", 2, 7.0, 87.5],
        ["0", "MatMul", "8,64;128,64", "AI_CORE", 1, 2.0, 100.0],
        ["host", "MatMul", "8,128;8,64", "HOST_CPU", 1, 1.0, 12.5],
        ["host", "ReLU", "8,128", "HOST_CPU", 1, 0.5, 100.0]]
    first = t.records()[0]
    assert (first["Min Time(us)"], first["Avg Time(us)"], first["Max Time(us)"]) == (3.0, 3.5, 4.0)


def test_op_shape_statistic_is_empty_without_shapes():
    ev = EventTable.from_records(ts=[1], dur=[1], kind=[EventKind.OP], name=["a"], args=['{"Op Type": "a"}'])
    assert len(op_shape_statistic(ev)) == 0 and len(op_shape_statistic(EventTable.empty())) == 0


def test_input_shapes_text_prefers_the_recorded_text():
    assert input_shapes_text('{"Input Dims": [[8, 128], []], "Input Shapes": "8,128"}') == "8,128"
    assert input_shapes_text('{"Input Dims": [[8, 128], []]}') == "8,128;"
    assert input_shapes_text('{"Input Dims": "8"}') is None
    assert input_shapes_text("{broken") is None
    # compact JSON, dynamic dims (the JSON path), a non-string value (falls back to Input Dims)
    assert input_shapes_text('{"Task Id":3,"Input Shapes":"8,64;128,64"}') == "8,64;128,64"
    assert input_shapes_text('{"Input Shapes": "-1,64;\\u0031"}') == "-1,64;1"
    assert input_shapes_text('{"Input Shapes": [8], "Input Dims": [[8]]}') == "8"


# -- a whole analysis ------------------------------------------------------------------------------------------------
def make_run(root: Path, record_shapes: bool) -> Path:
    run = root / "host_12359_20261122023346370_ascend_ms"
    write_fw(run, GRAPH_TIMESTAMPS, GRAPH_SHAPES, GRAPH_DETAIL)
    (run / "profiler_info_0.json").write_text(json.dumps({
        "rank_id": 0, "profiler_parameters": {"record_shapes": record_shapes, "export_type": ["text"]},
        "ms_profiler_info": {"rank_id": "0", "device_id": "0"}}))
    return run


def test_analysis_with_shapes_writes_operator_details_and_trace_args(tmp_path):
    run = make_run(tmp_path, True)
    (res,) = npuprof.analyse(run, output_path=tmp_path / "out")   # MindSpore's files: outputs elsewhere
    out = tmp_path / "out" / run.name / "ASCEND_PROFILER_OUTPUT"
    with open(out / "operator_details.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["Name", "Input Shapes"] and len(rows) == 17
    assert ["Default/MatMul-op0", "8,64;128,64"] in rows
    assert ["Gradients/Default/Grad_MatMul/MatMul-op0", "8,128;8,64"] in rows
    with open(out / "op_shape_statistic.csv", newline="") as fh:
        stats = {(r["OP Type"], r["Input Shapes"]): r for r in csv.DictReader(fh)}
    # 16 launches, 16 groups: forward/backward MatMul, the two Mul and the two SGD launches differ by shape
    assert len(stats) == 16 and {r["Count"] for r in stats.values()} == {"1"}
    assert stats["MatMul", "8,64;128,64"]["Total Time(us)"] == "8060.46"
    assert stats["MatMul", "8,128;8,64"]["Type Share(%)"] == "0.952"
    trace = json.loads((out / "trace_view.json").read_text())
    assert trace["record_shapes"] == 1
    ops = {e["name"]: e for e in trace["traceEvents"] if e.get("cat") == "cpu_op"}
    assert ops["Default/MatMul-op0"]["args"]["Input Dims"] == FORWARD_MATMUL_DIMS
    assert ops["Default/MatMul-op0"]["args"]["Input Shapes"] == "8,64;128,64"


def test_show_prints_the_shape_statistic_only_when_shapes_exist(tmp_path, capsys, monkeypatch):
    from npuprof.cli import main

    monkeypatch.setenv("COLUMNS", "300")   # rich folds long cells to the terminal width

    with_shapes, without = make_run(tmp_path / "a", True), make_run(tmp_path / "b", False)
    assert main(["show", "-dir", str(with_shapes), "--limit", "40"]) == 0
    shown = capsys.readouterr().out
    assert "op_shape_statistic" in shown and "8,128;8,64" in shown
    assert main(["show", "-dir", str(without)]) == 0
    shown = capsys.readouterr().out
    assert "op_statistic" in shown and "op_shape_statistic" not in shown


def test_analysis_without_shapes_writes_neither(tmp_path):
    run = make_run(tmp_path, False)
    npuprof.analyse(run, output_path=tmp_path / "out")
    out = tmp_path / "out" / run.name / "ASCEND_PROFILER_OUTPUT"
    assert (out / "trace_view.json").is_file() and not (out / "operator_details.csv").exists()
    trace = json.loads((out / "trace_view.json").read_text())
    assert "record_shapes" not in trace
    assert not any("Input Dims" in e.get("args", {}) for e in trace["traceEvents"])


# -- CANN tensor columns ---------------------------------------------------------------------------------------------
OP_SUMMARY_HEADER = ["Device_id", "Model ID", "Task ID", "Stream ID", "Op Name", "OP Type", "OP State", "Task Type",
                     "Task Start Time(us)", "Task Duration(us)", "Task Wait Time(us)", "Block Num", "Mix Block Num",
                     "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                     "Output Data Types", "Output Formats", "Context ID"]


def test_op_summary_tensor_columns_reach_kernel_args(tmp_path):
    from npuprof.integrations.pyacl.cann_import import read_op_summary

    path = tmp_path / "op_summary_20260101000000.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(OP_SUMMARY_HEADER)
        w.writerow(["0", "1", "3", "2", "MatMul-op1", "MatMul", "static", "AI_CORE", "1700000000000100.250\t",
                    "12.5", "0", "8", "0", "NO", "8,64;128,64", "FLOAT16;FLOAT16", "ND;ND", "8,128", "FLOAT16",
                    "ND", "N/A"])
        w.writerow(["0", "1", "4", "2", "Add-op2", "Add", "static", "AI_VECTOR_CORE", "1700000000000200.000\t",
                    "3.125", "0", "2", "0", "NO", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A"])
    table = read_op_summary(path, warn=lambda m: None)
    args = {n: json.loads(a) for n, a in zip(table.column_strings("name"), table.column_strings("args"))}
    assert args["MatMul-op1"]["Input Shapes"] == "8,64;128,64"
    assert args["MatMul-op1"]["Input Data Types"] == "FLOAT16;FLOAT16"
    assert args["MatMul-op1"]["Output Shapes"] == "8,128" and args["MatMul-op1"]["Output Formats"] == "ND"
    assert "Input Shapes" not in args["Add-op2"]


def test_mindspore_kernel_details_tensor_columns_reach_kernel_args(tmp_path):
    from npuprof.readers.ascend_output import read_ascend_output

    (tmp_path / "kernel_details.csv").write_text(
        "Step ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Num,Mix Block Num,"
        "HF32 Eligible,Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,"
        "Context ID\n"
        '1,Default/MatMul-op0,MatMul,AI_CORE,1795306209649981.618\t,12.5,0,8,0,NO,"8,64;128,64",FLOAT;FLOAT,ND;ND,'
        '"8,128",FLOAT,ND,N/A\n')
    table, problems = read_ascend_output(tmp_path, device=0)
    assert problems == []
    args = json.loads(table.column_strings("args")[0])
    assert args["Input Shapes"] == "8,64;128,64" and args["Output Shapes"] == "8,128"
    assert args["Input Data Types"] == "FLOAT;FLOAT"
