"""Estimator mode: ProfilingHook on MonitoredTrainingSession (TF 2.21) and NPUEstimator on a
real tf.estimator (TF 2.15.1 + tensorflow-estimator, in a virtualenv the suite creates)."""
from __future__ import annotations

import json
import subprocess

import pytest

tf = pytest.importorskip("tensorflow")

import npuprof  # noqa: E402
from npuprof import ProfilerConfigError  # noqa: E402
from npuprof.integrations import tensorflow as nptf  # noqa: E402
from tf_support import (ESTIMATOR_SCENARIO, build_graph_model, docs_options_with_output,  # noqa: E402
                        ensure_tf215_venv, exported)


@pytest.mark.slow
def test_monitored_training_session_with_profiling_hook(tmp_path):
    graph, _, train_op, x, feed = build_graph_model(tf)
    with graph.as_default():
        hook = nptf.ProfilingHook(output_path=tmp_path / "hook",
                                  schedule=npuprof.schedule(wait=2, active=3, repeat=2))
        stop = tf.compat.v1.train.StopAtStepHook(last_step=12)
        with tf.compat.v1.train.MonitoredTrainingSession(hooks=[hook, stop]) as sess:
            while not sess.should_stop():
                sess.run(train_op, {x: feed})
    assert len(hook.saved_runs) == 2
    assert len(hook.results) == 2  # analysed at end()
    for res, first in zip(hook.results, (2, 7)):
        steps = [int(r["Step"]) for r in exported(res.run_dir, "step_trace_time.csv")]
        assert steps == [first, first + 1, first + 2]
        kernels = exported(res.run_dir, "kernel_details.csv")
        assert any("MatMul" in r["Type"] and float(r["Duration(us)"]) > 0 for r in kernels)
        assert any(r["Type"] == "Relu" for r in kernels)


@pytest.mark.slow
def test_profiling_hook_schedule_follows_the_global_step(tmp_path):
    """A second session resuming at global step 6 keeps the schedule's global-step positions."""
    graph, _, train_op, x, feed = build_graph_model(tf)
    ckpt = tmp_path / "ckpt"
    with graph.as_default():
        with tf.compat.v1.train.MonitoredTrainingSession(
                checkpoint_dir=str(ckpt), save_checkpoint_steps=1,
                hooks=[tf.compat.v1.train.StopAtStepHook(last_step=6)]) as sess:
            while not sess.should_stop():
                sess.run(train_op, {x: feed})
        with pytest.warns(FutureWarning, match="task_trace"):  # the docs string uses the deprecated key
            hook = nptf.ProfilingHook(docs_options_with_output(tmp_path / "prof"),
                                      schedule=npuprof.schedule(wait=1, active=2, repeat=1, skip_first=7))
        with tf.compat.v1.train.MonitoredTrainingSession(
                checkpoint_dir=str(ckpt), save_checkpoint_steps=None, save_checkpoint_secs=None,
                hooks=[hook, tf.compat.v1.train.StopAtStepHook(last_step=12)]) as sess:
            while not sess.should_stop():
                sess.run(train_op, {x: feed})
    [run_dir] = hook.saved_runs
    info = json.loads(next(run_dir.glob("profiler_info_*.json")).read_text())
    # global steps 6 (skipped), 7 (wait), 8 and 9 recorded = local run numbers 2 and 3
    assert info["npuprof"]["steps"] == [2, 3]
    assert info["profiler_parameters"]["schedule"]["global_step_offset"] == 6
    assert str(hook.profilers[0].config.profiler_level) == "Level1"


def test_hook_and_configs_validate_early(tmp_path):
    with pytest.raises(ProfilerConfigError) as info:
        nptf.ProfilingHook('{"output":"/tmp/x","task_time":"l7"}')
    assert info.value.param == "task_time"
    with pytest.raises(ProfilerConfigError) as info:
        nptf.ProfilingHook(output_path=tmp_path, profiler_level="Level9")
    assert info.value.param == "profiler_level"
    with pytest.raises(ProfilerConfigError) as info:
        nptf.ProfilingConfig(enable_profiling="yes")
    assert info.value.param == "enable_profiling"
    with pytest.raises(ProfilerConfigError) as info:
        nptf.ProfilingConfig(enable_profiling=True, profiling_options='{"output":"/tmp/x","hccl":"1"}')
    assert info.value.param == "hccl"
    cfg = nptf.ProfilingConfig()  # disabled, no options: nothing to validate
    assert cfg.enable_profiling is False and cfg.options is None
    assert nptf.ProfilingConfig(True).options.defaulted  # enabled without options -> adapter defaults
    assert isinstance(nptf.ProfilingHook(output_path=tmp_path), tf.compat.v1.train.SessionRunHook)


def test_estimator_classes_explain_tf_2_21():
    if hasattr(tf, "estimator"):
        pytest.fail("this test expects TF >= 2.16 in the main environment")
    with pytest.raises(ImportError, match="removed in 2.16"):
        nptf.NPURunConfig  # noqa: B018
    with pytest.raises(ImportError, match="removed in 2.16"):
        from npuprof.integrations.tensorflow import NPUEstimator  # noqa: F401


@pytest.mark.slow
def test_npu_estimator_on_real_tf_estimator(tmp_path):
    """TF 2.15.1 + tensorflow-estimator 2.15 in .venv-tf215 (created on first run)."""
    python = ensure_tf215_venv()
    script = tmp_path / "scenario.py"
    script.write_text(ESTIMATOR_SCENARIO)
    proc = subprocess.run([str(python), str(script), str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=540)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("REPORT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    report = json.loads(lines[-1][len("REPORT "):])
    assert report["tf"].startswith("2.15")
    train, evaluate, predict = report["npu_estimator"]
    for runs in (train, evaluate, predict):
        assert len(runs) == 1
        assert runs[0]["run_dir"].startswith(str(tmp_path / "out" / "profiling"))
        assert runs[0]["matmul_total_us"] > 0
    assert train[0]["steps"] == list(range(6))
    assert {"ReluGrad", "ResourceApplyGradientDescent"} <= set(train[0]["op_types"])
    assert len(evaluate[0]["steps"]) >= 3
    assert report["predictions"] == 64
    assert report["npu_options"] == {"iterations_per_loop": 1, "precision_mode": "allow_mix_precision"}
    [hook_run] = report["hook"]
    assert hook_run["steps"] == [2, 3] and report["hook_steps_in_info"] == [[2, 3]]
    assert report["errors"]["profiling_config"] == "task_time"
    assert report["errors"]["run_config"] == "profiling_config"
    assert "no_such_argument" in report["errors"]["unknown_kwarg"]

