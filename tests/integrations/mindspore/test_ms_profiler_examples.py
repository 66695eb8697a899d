"""MindSpore's own ``Profiler`` docstring examples run on ``npuprof.integrations.mindspore.Profiler``.

Real MindSpore 2.10 on CPU, GRAPH mode, each example in its own interpreter (GRAPH mode compiles the
network from its source file, so each runs as a script). The examples are the seed's
(``tests/ms_seed_examples.py``), changed only in their import line; the class example also sets
``device_target="CPU"`` where it says ``"Ascend"`` (its own comment says to set the machine's device
target; MindSpore's CPU build refuses "Ascend"). The callback examples only define a callback: the
harness around them (a dataset, ``Model.train`` with the callback) is this file's.

What is asserted is what each example analyses: the steps its window holds (``Model.train``'s step
numbers), the operators of those steps, and MindSpore's data_simplification of the run directory.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ms_seed_examples import (ANALYSE_EXAMPLE, CLASS_EXAMPLE, OFFLINE_ANALYSE_EXAMPLE, SEED_EXAMPLES, START_EXAMPLE,
                              STOP_EXAMPLE, as_npuprof, code_lines, seed_example_lines)

# MindSpore runs in the children only: importing it here would make its plugin join every later Profiler
# of this process

SEED = Path(__file__).resolve().parents[3].parent / "shared" / "seeds" / "004_8138ca28afa8a409.txt"
# forward MatMul and the weight-gradient MatMul of nn.Dense(2, 2): two per training step
MATMULS_PER_STEP = 2

HARNESS = '''

import numpy as np
import mindspore as ms
from mindspore import nn
import mindspore.dataset as ds

def harness_data():
    for i in range({steps}):
        yield (np.ones([2, 2]).astype(np.float32), np.ones([2]).astype(np.int32))

if __name__ == "__main__":
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    net = nn.Dense(2, 2)
    model = ms.train.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True),
                           nn.Momentum(net.trainable_params(), 1, 0.9))
    model.train({epochs}, ds.GeneratorDataset(harness_data, ["data", "label"]), callbacks=[{callback}])
'''

COLLECT_ONLY = '''
import numpy as np
import mindspore as ms
from mindspore import nn
import mindspore.dataset as ds
from npuprof.integrations.mindspore import Profiler

def harness_data():
    for i in range(3):
        yield (np.ones([2, 2]).astype(np.float32), np.ones([2]).astype(np.int32))

if __name__ == "__main__":
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    profiler = Profiler(output_path="./profiling_path")
    net = nn.Dense(2, 2)
    model = ms.train.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True),
                           nn.Momentum(net.trainable_params(), 1, 0.9))
    model.train(1, ds.GeneratorDataset(harness_data, ["data", "label"]))
    profiler.stop()
'''


def _run(script: str, cwd: Path, name: str = "example.py") -> subprocess.CompletedProcess:
    path = cwd / name
    path.write_text(script)
    proc = subprocess.run([sys.executable, str(path)], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, GLOG_v="3", PYTHONUNBUFFERED="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return proc


def _one_run(root: Path) -> Path:
    runs = sorted(root.glob("*_ascend_ms"))
    assert len(runs) == 1, runs
    return runs[0]


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _analysed(run: Path) -> dict:
    """What the analysis wrote: step numbers, MatMul count, the trace's op names; and what was simplified."""
    out = run / "ASCEND_PROFILER_OUTPUT"
    steps = [int(r["Step"]) for r in _rows(out / "step_trace_time.csv")]
    matmul = [r for r in _rows(out / "op_statistic.csv") if r["OP Type"] == "MatMul"]
    trace = json.loads((out / "trace_view.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return {"steps": steps, "matmul": int(matmul[0]["Count"]) if matmul else 0,
            "trace_ops": {e.get("name", "").rsplit("/", 1)[-1].split("-op")[0] for e in events if e.get("ph") == "X"},
            "kernel_rows": len(_rows(out / "kernel_details.csv")),
            "left": sorted(p.name for p in run.iterdir())}


def _assert_simplified(left: list) -> None:
    # MindSpore's host files and npuprof's copy of MindSpore's own directory are gone; the deliverables,
    # npuprof's raw data and profiler_info stay (MindSpore keeps its PROF_* raw data likewise)
    assert "FRAMEWORK" not in left and "MINDSPORE" not in left
    assert {"ASCEND_PROFILER_OUTPUT", "NPUPROF", "profiler_info_0.json"} <= set(left)


def test_the_seed_examples_are_the_seeds_own_lines():
    if not SEED.exists():
        pytest.skip(f"seed document not found at {SEED} (../shared/seeds is beside the project's own checkouts)")
    blocks = seed_example_lines(SEED.read_text(encoding="utf-8"))
    # the seed's Examples blocks, in order: class, start, stop, analyse, offline_analyse
    assert len(blocks) == len(SEED_EXAMPLES)
    for block, (owner, example) in zip(blocks, SEED_EXAMPLES.items()):
        assert block == code_lines(example), owner


def test_class_example_trains_and_analyses(tmp_path):
    script = as_npuprof(CLASS_EXAMPLE)
    assert script.count('device_target="Ascend"') == 1
    _run(script.replace('device_target="Ascend"', 'device_target="CPU"'), tmp_path)
    got = _analysed(_one_run(tmp_path / "data"))     # MindSpore's default output_path
    assert got["steps"] == [1, 2]                    # Model.train's two steps
    assert got["matmul"] == 2 * MATMULS_PER_STEP
    assert {"MatMul", "BiasAdd", "ApplyMomentum"} <= got["trace_ops"]
    assert got["kernel_rows"] > 0
    _assert_simplified(got["left"])


def test_start_example_stop_at_step(tmp_path):
    _run(as_npuprof(START_EXAMPLE) + HARNESS.format(steps=6, epochs=1, callback="StopAtStep(2, 4)"), tmp_path)
    got = _analysed(_one_run(tmp_path / "data"))
    assert got["steps"] == [2, 3, 4]
    assert got["matmul"] == 3 * MATMULS_PER_STEP
    _assert_simplified(got["left"])


def test_stop_example_stop_at_epoch(tmp_path):
    _run(as_npuprof(STOP_EXAMPLE) + HARNESS.format(steps=2, epochs=3, callback="StopAtEpoch(1, 2)"), tmp_path)
    got = _analysed(_one_run(tmp_path / "data"))
    assert got["steps"] == [1, 2, 3, 4]              # epochs 1 and 2, two steps each
    assert got["matmul"] == 4 * MATMULS_PER_STEP
    _assert_simplified(got["left"])


def test_analyse_example_step_list(tmp_path):
    _run(as_npuprof(ANALYSE_EXAMPLE) + HARNESS.format(steps=7, epochs=1, callback="StopAtStep()"), tmp_path)
    run = _one_run(tmp_path / "data")
    got = _analysed(run)
    assert got["steps"] == [2, 3, 4]                 # step_list of the window's steps 1..5
    assert got["matmul"] == 3 * MATMULS_PER_STEP
    info = json.loads((run / "profiler_info_0.json").read_text())
    assert info["npuprof"]["steps"] == [1, 2, 3, 4, 5]   # collected: the window; analysed: the list
    _assert_simplified(got["left"])


def test_offline_analyse_example(tmp_path):
    _run(COLLECT_ONLY, tmp_path, "collect.py")
    run = _one_run(tmp_path / "profiling_path")
    assert not (run / "ASCEND_PROFILER_OUTPUT").exists() and (run / "FRAMEWORK").is_dir()
    _run(as_npuprof(OFFLINE_ANALYSE_EXAMPLE), tmp_path)
    got = _analysed(run)
    assert got["steps"] == [1, 2, 3]
    assert got["matmul"] == 3 * MATMULS_PER_STEP
    _assert_simplified(got["left"])


ENUMS = '''
import json, sys
import mindspore
from mindspore.profiler import ProfilerActivity, ProfilerLevel, AicoreMetrics, ExportType, HostSystem
import npuprof
from npuprof import ProfilerConfigError
from npuprof.integrations.mindspore import Profiler

out = {}
core = npuprof.Profiler(output_path="./core", activities=[ProfilerActivity.CPU, ProfilerActivity.NPU],
                        profiler_level=ProfilerLevel.Level1, aic_metrics=AicoreMetrics.MemoryAccess,
                        export_type=[ExportType.Text, ExportType.Db], host_sys=[HostSystem.CPU, HostSystem.MEM],
                        start_profile=False)
c = core.config
out["core"] = [[a.value for a in c.activities], c.profiler_level.value, c.aic_metrics.value,
               [e.value for e in c.export_type], [h.value for h in c.host_sys]]
drop_in = Profiler(start_profile=False, activities=ProfilerActivity.CPU, profiler_level=ProfilerLevel.Level0,
                   aicore_metrics=AicoreMetrics.AiCoreNone, export_type=[ExportType.Db])
c = drop_in.profiler.config
out["drop_in"] = [[a.value for a in c.activities], c.aic_metrics.value, [e.value for e in c.export_type],
                  str(c.output_path)]
errors = {}
for name, kwargs in {
        "osrt": dict(host_sys=[HostSystem.OSRT]),
        "memory_cpu_only": dict(activities=[ProfilerActivity.CPU], profile_memory=True),
        "metrics_cpu_only": dict(activities=[ProfilerActivity.CPU], profiler_level=ProfilerLevel.Level1,
                                 aicore_metrics=AicoreMetrics.PipeUtilization),
        "stack_npu_only": dict(activities=[ProfilerActivity.NPU], with_stack=True),
        "pcie_on_cpu": dict(pcie=True)}.items():
    try:
        Profiler(start_profile=False, **kwargs)
        errors[name] = None
    except ProfilerConfigError as e:
        errors[name] = [e.param, str(e)]
out["errors"] = errors
print(json.dumps(out))
'''


def test_mindspores_own_enum_members_in_core_and_drop_in(tmp_path):
    out = json.loads(_run(ENUMS, tmp_path, "enums.py").stdout.strip().splitlines()[-1])
    assert out["core"] == [["CPU", "NPU"], "Level1", "MemoryAccess", ["text", "db"], ["cpu", "mem"]]
    assert out["drop_in"][:3] == [["CPU"], "None", ["db"]]
    assert Path(out["drop_in"][3]) == (tmp_path / "data").resolve()
    errors = out["errors"]
    assert errors["osrt"][0] == "host_sys" and "osrt" in errors["osrt"][1]
    assert errors["memory_cpu_only"][0] == "profile_memory"
    assert errors["metrics_cpu_only"][0] == "aicore_metrics" and "NPU" in errors["metrics_cpu_only"][1]
    assert errors["stack_npu_only"][0] == "with_stack"
    assert errors["pcie_on_cpu"][0] == "pcie" and "Ascend" in errors["pcie_on_cpu"][1]


SCHEDULED = '''
import numpy as np
import mindspore as ms
from mindspore import nn
import mindspore.dataset as ds
from mindspore.profiler import schedule
from mindspore.train import Callback
import npuprof
from npuprof.integrations.mindspore import Profiler

class StepEveryStep(Callback):
    def __init__(self, profiler):
        super().__init__()
        self.profiler = profiler

    def step_end(self, run_context):
        self.profiler.step()

def harness_data():
    for i in range(5):
        yield (np.ones([2, 2]).astype(np.float32), np.ones([2]).astype(np.int32))

if __name__ == "__main__":
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    profiler = Profiler(schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                        on_trace_ready=npuprof.tensorboard_trace_handler("./tb"))
    net = nn.Dense(2, 2)
    model = ms.train.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True),
                           nn.Momentum(net.trainable_params(), 1, 0.9))
    model.train(1, ds.GeneratorDataset(harness_data, ["data", "label"]), callbacks=[StepEveryStep(profiler)])
    profiler.analyse()          # with a schedule: "use on_trace_ready", nothing more
'''


def test_scheduled_drop_in_with_mindspores_schedule_and_a_trace_handler(tmp_path):
    proc = _run(SCHEDULED, tmp_path)
    got = _analysed(_one_run(tmp_path / "tb"))
    assert got["steps"] == [2, 3]                    # wait 1, warmup 1, active 2: steps #2 and #3 (from 0)
    assert got["matmul"] == 2 * MATMULS_PER_STEP
    _assert_simplified(got["left"])                  # on_trace_ready's window is simplified too
    assert "on_trace_ready" in proc.stderr
    assert not (tmp_path / "data").exists() or not list((tmp_path / "data").glob("*_ascend_ms"))
