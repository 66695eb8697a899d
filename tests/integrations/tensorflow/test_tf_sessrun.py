"""sess.run mode on real TensorFlow 2.21 (CPU): unchanged Ascend session code is profiled."""
from __future__ import annotations

import json
import os

import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig  # noqa: E402

import npuprof  # noqa: E402
from npuprof import ProfilerConfigError  # noqa: E402
from npuprof.integrations import tensorflow as nptf  # noqa: E402
from tf_support import build_graph_model, docs_options_with_output, exported  # noqa: E402


@pytest.fixture
def activation():
    handle = nptf.activate()
    yield handle
    nptf.deactivate()


def ascend_docs_config(options: str):
    """The session config exactly as the Ascend sess.run-mode docs write it."""
    config = tf.compat.v1.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["profiling_mode"].b = True
    custom_op.parameter_map["profiling_options"].s = tf.compat.as_bytes(options)
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF  # Disable remapping.
    return config


@pytest.mark.slow
def test_docs_session_loop_yields_real_op_timings(activation, tmp_path):
    out = tmp_path / "profiling"
    graph, init, train_op, x, feed = build_graph_model(tf)
    config = ascend_docs_config(docs_options_with_output(out))
    with pytest.warns(FutureWarning, match="task_trace"):
        sess = tf.compat.v1.Session(graph=graph, config=config)
    with sess:
        sess.run(init)
        for _ in range(6):
            sess.run(train_op, {x: feed})

    assert len(activation.profilers) == 1
    prof = activation.profilers[0]
    assert prof.config.output_path == out
    assert str(prof.config.profiler_level) == "Level1"
    assert len(prof.saved_runs) == 1
    run_dir = prof.saved_runs[0]
    assert run_dir.parent == out

    kernels = exported(run_dir, "kernel_details.csv")
    by_type: dict = {}
    for row in kernels:
        by_type.setdefault(row["Type"], []).append(float(row["Duration(us)"]))
    matmul = [d for t, ds in by_type.items() if "MatMul" in t for d in ds]
    relu = by_type.get("Relu", [])
    assert len(matmul) >= 6 * 4  # 2 forward + 2 gradient MatMuls (at least) per step
    assert len(relu) == 6
    assert all(d > 0 for d in matmul + relu)
    names = {row["Name"] for row in kernels}
    assert "Relu" in names and "MatMul" in names  # node names from "<node>:<OpType>"

    stats = {row["OP Type"]: row for row in exported(run_dir, "op_statistic.csv")}
    assert float(stats["Relu"]["Total Time(us)"]) > 0
    assert any("MatMul" in t and float(r["Total Time(us)"]) > 0 for t, r in stats.items())

    steps = exported(run_dir, "step_trace_time.csv")
    assert [int(r["Step"]) for r in steps] == list(range(7))  # the initializer run + 6 training runs
    trace = json.loads((run_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert any(e.get("name") == "MatMul" and e.get("dur", 0) > 0 for e in events)
    info = json.loads(next(run_dir.glob("profiler_info_*.json")).read_text())
    assert "tensorflow" in info["npuprof"]["plugins"]
    assert json.loads(info["profiler_parameters"]["extra"]["profiling_options"])["output"] == str(out)


def test_invalid_options_in_session_config_raise_before_the_session(activation, tmp_path):
    graph, *_ = build_graph_model(tf)
    bad = json.dumps({"output": str(tmp_path / "p"), "task_time": "l9"})
    with pytest.raises(ProfilerConfigError) as info:
        tf.compat.v1.Session(graph=graph, config=ascend_docs_config(bad))
    assert info.value.param == "task_time"
    assert not (tmp_path / "p").exists()
    assert activation.profilers == []


def test_profiling_mode_false_is_not_profiled(activation, tmp_path):
    graph, init, train_op, x, feed = build_graph_model(tf)
    config = nptf.session_config(json.dumps({"output": str(tmp_path / "p")}), enable=False)
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        sess.run(train_op, {x: feed})
    assert activation.profilers == []
    assert not (tmp_path / "p").exists()


def test_plain_session_is_untouched(activation):
    graph, init, train_op, x, feed = build_graph_model(tf)
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run(init)
        sess.run(train_op, {x: feed})
    assert activation.profilers == []


@pytest.mark.slow
def test_environment_mode_and_schedule(activation, tmp_path, monkeypatch):
    out = tmp_path / "envprof"
    monkeypatch.setenv("PROFILING_MODE", "true")
    monkeypatch.setenv("PROFILING_OPTIONS", json.dumps({"output": str(out), "task_time": "l0"}))
    nptf.activate(schedule=npuprof.schedule(wait=1, active=2, repeat=2))
    graph, init, train_op, x, feed = build_graph_model(tf)
    with tf.compat.v1.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(8):
            sess.run(train_op, {x: feed})
    prof = activation.profilers[0]
    assert str(prof.config.profiler_level) == "Level0"
    assert len(prof.saved_runs) == 2  # one window per schedule cycle
    for run_dir in prof.saved_runs:
        steps = [int(r["Step"]) for r in exported(run_dir, "step_trace_time.csv")]
        assert len(steps) == 2
        assert any("MatMul" in r["Type"] for r in exported(run_dir, "kernel_details.csv"))


def test_environment_mode_errors(monkeypatch):
    monkeypatch.setenv("PROFILING_MODE", "maybe")
    with pytest.raises(ProfilerConfigError) as info:
        nptf.profiling_from_config(None)
    assert info.value.param == "PROFILING_MODE"
    monkeypatch.setenv("PROFILING_MODE", "true")
    monkeypatch.setenv("PROFILING_OPTIONS", '{"output":"/tmp/x","aicpu":"maybe"}')
    with pytest.raises(ProfilerConfigError) as info:
        nptf.profiling_from_config(None)
    assert info.value.param == "aicpu"
    # the script's own setting wins over the environment
    config = nptf.session_config('{"output":"/tmp/x"}', enable=False)
    assert nptf.profiling_from_config(config) is None


def test_session_config_helper(tmp_path):
    text = json.dumps({"output": str(tmp_path), "task_time": "l2"})
    config = nptf.session_config(text)
    rewrite = config.graph_options.rewrite_options
    [custom] = [c for c in rewrite.custom_optimizers if c.name == "NpuOptimizer"]
    assert custom.parameter_map["profiling_mode"].b is True
    assert custom.parameter_map["use_off_line"].b is True
    assert custom.parameter_map["profiling_options"].s.decode() == text
    assert rewrite.remapping == RewriterConfig.OFF
    assert nptf.profiling_from_config(config).task_time == "l2"
    # amending keeps the user's settings and reuses the NpuOptimizer entry
    existing = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2)
    custom = existing.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    custom.parameter_map["use_off_line"].b = False
    amended = nptf.session_config(text, existing)
    assert amended is existing and amended.inter_op_parallelism_threads == 2
    assert len(amended.graph_options.rewrite_options.custom_optimizers) == 1
    assert amended.graph_options.rewrite_options.custom_optimizers[0].parameter_map["use_off_line"].b is False
    with pytest.raises(ProfilerConfigError) as info:
        nptf.session_config('{"output":"/tmp/x","l2":"yes"}')
    assert info.value.param == "l2"
    with pytest.raises(ProfilerConfigError) as info:
        nptf.session_config(None, config="not a config")
    assert info.value.param == "config"


def test_wrong_parameter_types_in_config_are_named():
    config = tf.compat.v1.ConfigProto()
    custom = config.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    custom.parameter_map["profiling_mode"].s = b"true"
    with pytest.raises(ProfilerConfigError) as info:
        nptf.profiling_from_config(config)
    assert info.value.param == "profiling_mode"


def test_deactivate_restores_tf_session():
    from tensorflow.python.client import session as tf_session

    original = tf_session.BaseSession.run
    handle = nptf.activate()
    assert tf_session.BaseSession.run is not original
    assert nptf.activate() is handle  # idempotent
    nptf.deactivate()
    assert tf_session.BaseSession.run is original
    assert not handle.active


def test_activate_validates_its_arguments():
    with pytest.raises(ProfilerConfigError) as info:
        nptf.activate(schedule=5)
    assert info.value.param == "schedule"
    with pytest.raises(ProfilerConfigError) as info:
        nptf.activate(host_sys=["gpu"])
    assert info.value.param == "host_sys"
    assert nptf.current_activation() is None
    assert os.environ.get("PROFILING_MODE") is None


SESSION_SCRIPT = '''
import numpy as np, tensorflow as tf
g = tf.Graph()
with g.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [8, 16])
    w = tf.Variable(tf.ones([16, 4]))
    y = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)))
    init = tf.compat.v1.global_variables_initializer()
with tf.compat.v1.Session(graph=g) as sess:      # no profiling in the script itself
    sess.run(init)
    for _ in range(4):
        sess.run(y, {x: np.ones((8, 16), np.float32)})
print("SCRIPT DONE")
'''


@pytest.mark.slow
def test_launcher_with_ascend_environment_switch(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text(SESSION_SCRIPT)
    out = tmp_path / "prof"
    env = dict(os.environ, PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps({"output": str(out)}))
    proc = subprocess.run([sys.executable, "-m", "npuprof.integrations.tensorflow", str(script)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "SCRIPT DONE" in proc.stdout
    [run_dir] = [p for p in out.iterdir() if p.is_dir()]
    steps = [int(r["Step"]) for r in exported(run_dir, "step_trace_time.csv")]
    assert steps == [0, 1, 2, 3, 4]  # the initializer run + 4 runs, one step each
    types = {r["Type"] for r in exported(run_dir, "kernel_details.csv")}
    assert "Relu" in types


def test_launcher_rejects_bad_environment_options(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text("print('should not run')\n")
    env = dict(os.environ, PROFILING_MODE="true", PROFILING_OPTIONS='{"output":"/tmp/x","task_time":"x"}')
    proc = subprocess.run([sys.executable, "-m", "npuprof.integrations.tensorflow", str(script)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert "task_time" in proc.stderr and "should not run" not in proc.stdout
