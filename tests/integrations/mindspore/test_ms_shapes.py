"""record_shapes end to end with real MindSpore 2.10 on CPU (GRAPH and PyNative).

A Dense(64, 128) + ReLU net trained with MSELoss and SGD on batches of 8, for
3 steps under ``npuprof.Profiler(record_shapes=...)``, in a child process
(this file is the child's script: GRAPH mode compiles code from a file). The
run directory is then analysed here as a user would.

What MindSpore really records on CPU: every GRAPH-mode kernel launch, with
non-tensor inputs as ``NoShape``; in PyNative only the operators that do not
go through its "pyboost" path (MatMul, ReLU ... there carry no shapes).
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import npuprof

HERE = Path(__file__).resolve()
BATCH, IN, OUT = 8, 64, 128
STEPS = 3
FORWARD_MATMUL = [[BATCH, IN], [OUT, IN], [], []]     # x, weight (out, in), transpose_a, transpose_b
BACKWARD_MATMUL = [[BATCH, OUT], [BATCH, IN], [], []]  # dW = dY^T x
BIAS_ADD = [[BATCH, OUT], [OUT], []]

pytestmark = pytest.mark.slow


def train(mode: str, out: str, record_shapes: bool) -> None:
    """The child: a real training loop under the Profiler."""
    import mindspore as ms
    import numpy as np
    from mindspore import nn

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_device("CPU")

    class Net(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Dense(IN, OUT)
            self.relu = nn.ReLU()

        def construct(self, x):  # noqa: ANN001, ANN201 - MindSpore compiles this
            return self.relu(self.fc(x))

    net = Net()
    loss_fn = nn.MSELoss()
    opt = nn.SGD(net.trainable_params(), 0.01)

    def forward(x, y):  # noqa: ANN001, ANN202 - MindSpore parses this (no lambda in GRAPH mode)
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)
    rng = np.random.default_rng(0)
    x = ms.Tensor(rng.random((BATCH, IN)).astype(np.float32))
    y = ms.Tensor(rng.random((BATCH, OUT)).astype(np.float32))
    with npuprof.Profiler(output_path=out, activities=["CPU"], record_shapes=record_shapes) as prof:
        for _ in range(STEPS):
            loss, grads = grad_fn(x, y)
            opt(grads)
            loss.asnumpy()
            prof.step()
    Path(out, "runs.json").write_text(json.dumps([str(p) for p in prof.saved_runs]))
    if record_shapes:   # torch's key_averages(group_by_input_shape=True), in the training process
        Path(out, "key_averages.txt").write_text(prof.key_averages(group_by_input_shape=True).table(row_limit=-1))


def run_training(out: Path, mode: str, record_shapes: bool) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GLOG_v="3")
    proc = subprocess.run([sys.executable, str(HERE), mode, str(out), "1" if record_shapes else "0"],
                          capture_output=True, text=True, timeout=600, env=env, cwd=out)
    assert proc.returncode == 0, proc.stderr[-4000:]
    (run,) = json.loads((out / "runs.json").read_text())
    npuprof.analyse(run)
    return Path(run) / "ASCEND_PROFILER_OUTPUT"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes")
    return {key: run_training(root / "_".join(map(str, key)), *key)
            for key in (("graph", True), ("pynative", True), ("graph", False))}


def trace_ops(out: Path) -> tuple[dict, list]:
    trace = json.loads((out / "trace_view.json").read_text())
    return trace, [e for e in trace["traceEvents"] if e.get("cat") == "cpu_op"]


def details(out: Path) -> list:
    with open(out / "operator_details.csv", newline="") as fh:
        return list(csv.reader(fh))


def dims_by_type(ops: list) -> dict:
    found: dict = {}
    for e in ops:
        if "Input Dims" in e["args"]:
            found.setdefault(e["args"]["Op Type"], []).append(e["args"]["Input Dims"])
    return found


def test_graph_mode_every_launch_carries_its_input_dims(outputs):
    trace, ops = trace_ops(outputs["graph", True])
    assert trace["record_shapes"] == 1
    assert ops and all("Input Dims" in e["args"] for e in ops)
    dims = dims_by_type(ops)
    # forward and backward MatMul launches, each step
    assert sorted(map(json.dumps, dims["MatMul"])) == sorted(map(json.dumps, [FORWARD_MATMUL, BACKWARD_MATMUL]
                                                                   * STEPS))
    assert dims["BiasAdd"] == [BIAS_ADD] * STEPS


def test_graph_mode_operator_details_lists_each_launch(outputs):
    rows = details(outputs["graph", True])
    _, ops = trace_ops(outputs["graph", True])
    assert rows[0] == ["Name", "Input Shapes"]
    assert len(rows) - 1 == len(ops)
    shapes_of = {}
    for name, shapes in rows[1:]:
        shapes_of.setdefault(name.rsplit("/", 1)[-1].split("-op")[0], set()).add(shapes)
    assert shapes_of["MatMul"] == {f"{BATCH},{IN};{OUT},{IN}", f"{BATCH},{OUT};{BATCH},{IN}"}
    assert shapes_of["BiasAdd"] == {f"{BATCH},{OUT};{OUT}"}


def test_graph_mode_op_shape_statistic_splits_matmul_by_shape(outputs):
    out = outputs["graph", True]
    _, ops = trace_ops(out)
    with open(out / "op_shape_statistic.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    matmul = {r["Input Shapes"]: r for r in rows if r["OP Type"] == "MatMul"}
    assert set(matmul) == {f"{BATCH},{IN};{OUT},{IN}", f"{BATCH},{OUT};{BATCH},{IN}"}
    assert all(int(r["Count"]) == STEPS for r in matmul.values())
    # the per-shape totals are the measured launches: they add up to the trace's MatMul time
    traced = sum(e["dur"] for e in ops if e["args"]["Op Type"] == "MatMul")
    assert sum(float(r["Total Time(us)"]) for r in matmul.values()) == pytest.approx(traced, abs=0.01)
    assert sum(float(r["Type Share(%)"]) for r in matmul.values()) == pytest.approx(100.0, abs=0.01)
    assert sum(int(r["Count"]) for r in rows) == len(ops)


def test_key_averages_by_input_shape_in_the_training_process(outputs):
    out = outputs["graph", True]
    lines = (out.parent.parent / "key_averages.txt").read_text().splitlines()
    assert lines[0].split()[:4] == ["Name", "Input", "Shapes", "Core"]
    matmul = [ln.split() for ln in lines[2:-1] if ln.startswith("MatMul ")]
    assert sorted(row[1] for row in matmul) == sorted([f"{BATCH},{IN};{OUT},{IN}", f"{BATCH},{OUT};{BATCH},{IN}"])
    assert all(row[2:4] == ["HOST_CPU", str(STEPS)] for row in matmul)


def test_pynative_shapes_are_those_mindspore_records(outputs):
    out = outputs["pynative", True]
    _, ops = trace_ops(out)
    dims = dims_by_type(ops)
    assert dims["BiasAdd"] == [BIAS_ADD] * STEPS
    assert "MatMul" not in dims                      # pyboost ops: MindSpore writes an empty line
    assert any(e["args"]["Op Type"] == "MatMul" for e in ops)
    rows = details(out)
    assert len(rows) - 1 == sum(len(v) for v in dims.values())
    assert [n for n, _ in rows[1:]].count("Default/BiasAdd-op0") == STEPS


def test_without_record_shapes_no_shapes_anywhere(outputs):
    out = outputs["graph", False]
    trace, ops = trace_ops(out)
    assert ops and "record_shapes" not in trace
    assert not any("Input Dims" in e["args"] or "Input Shapes" in e["args"] for e in ops)
    assert not (out / "operator_details.csv").exists()
    assert not (out / "op_shape_statistic.csv").exists()


if __name__ == "__main__":
    train(sys.argv[1], sys.argv[2], sys.argv[3] == "1")
