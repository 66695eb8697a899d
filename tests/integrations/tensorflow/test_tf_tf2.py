"""TF2 on real TensorFlow 2.21 (CPU): tf.function under Profiler, Keras callback, global_options/open."""
from __future__ import annotations

import json

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import npuprof  # noqa: E402
from npuprof import ProfilerConfigError  # noqa: E402
from npuprof.integrations import tensorflow as nptf  # noqa: E402
from npuprof.integrations.tensorflow import tf2 as tf2_mod  # noqa: E402
from tf_support import build_tf2_train_step, exported  # noqa: E402


def op_types(run_dir):
    return {r["Type"] for r in exported(run_dir, "kernel_details.csv")}


@pytest.mark.slow
def test_tf_function_loop_one_window_per_cycle(tmp_path):
    train_step = build_tf2_train_step(tf)
    x = tf.ones([32, 64])
    train_step(x)  # trace outside the profile
    sched = npuprof.schedule(wait=1, warmup=1, active=2, repeat=3)
    with nptf.Profiler(output_path=tmp_path / "prof", schedule=sched) as prof:
        for _ in range(14):
            train_step(x)
            prof.step()
    assert len(prof.saved_runs) == 3  # one window per cycle
    results = prof.analyse()
    assert len(results) == 3
    for i, res in enumerate(results):
        steps = [int(r["Step"]) for r in exported(res.run_dir, "step_trace_time.csv")]
        assert steps == [4 * i + 2, 4 * i + 3]  # the active steps of cycle i
        kernels = exported(res.run_dir, "kernel_details.csv")
        durations = [float(r["Duration(us)"]) for r in kernels if "MatMul" in r["Type"] or r["Type"] == "Relu"]
        assert durations and all(d > 0 for d in durations)
        assert {"Relu", "ReluGrad"} <= op_types(res.run_dir)
        # ops are attributed to the recorded steps only
        assert {int(r["Step ID"]) for r in kernels} <= set(steps)


@pytest.mark.slow
def test_profiling_options_drive_the_tf2_profiler(tmp_path):
    train_step = build_tf2_train_step(tf)
    x = tf.ones([16, 64])
    opts = json.dumps({"output": str(tmp_path / "o"), "task_time": "l2", "host_sys": "cpu,mem",
                       "host_sys_usage_freq": 20})
    with nptf.Profiler(profiling_options=opts) as prof:
        for _ in range(3):
            train_step(x)
            prof.step()
    assert str(prof.config.profiler_level) == "Level2"
    assert [str(h) for h in prof.config.host_sys] == ["cpu", "mem"]
    assert prof.config.host_sys_usage_freq == 20
    [res] = prof.analyse()
    assert "Relu" in op_types(res.run_dir)
    assert json.loads(nptf.render_profiling_options(prof.config))["task_time"] == "l2"


def make_model():
    model = tf.keras.Sequential([tf.keras.Input((20,)), tf.keras.layers.Dense(32, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    data = np.random.default_rng(0).random((256, 20), dtype=np.float32)
    return model, data, data[:, :1]


@pytest.mark.slow
def test_keras_fit_with_profile_batch(tmp_path):
    model, x, y = make_model()
    cb = nptf.ProfilerCallback(profile_batch=(3, 5), output_path=tmp_path / "keras")
    model.fit(x, y, batch_size=32, epochs=2, callbacks=[cb], verbose=0)
    assert len(cb.saved_runs) == 1
    [res] = cb.results
    steps = exported(res.run_dir, "step_trace_time.csv")
    assert len(steps) == 3  # batches 3, 4 and 5, both ends inclusive
    kernels = exported(res.run_dir, "kernel_details.csv")
    assert any("MatMul" in r["Type"] and float(r["Duration(us)"]) > 0 for r in kernels)


@pytest.mark.slow
def test_keras_fit_with_schedule_across_epochs(tmp_path):
    model, x, y = make_model()
    cb = nptf.ProfilerCallback(schedule=npuprof.schedule(wait=2, active=3, repeat=2), output_path=tmp_path / "k")
    model.fit(x, y, batch_size=32, epochs=2, callbacks=[cb], verbose=0)  # 16 batches
    assert len(cb.saved_runs) == 2
    for res, first in zip(cb.results, (2, 7)):
        steps = [int(r["Step"]) for r in exported(res.run_dir, "step_trace_time.csv")]
        assert steps == [first, first + 1, first + 2]


@pytest.mark.parametrize("value,expected", [
    (0, None), (None, None), (3, (3, 3)), ((2, 4), (2, 4)), ([2, 4], (2, 4)), ("2,4", (2, 4)), ("5", (5, 5)),
])
def test_profile_batch_forms(value, expected):
    assert nptf.parse_profile_batch(value) == expected


@pytest.mark.parametrize("value", [-1, (4, 2), (0, 2), "a,b", "1,2,3", (1.5, 2), True, {"start": 1}])
def test_profile_batch_invalid(value):
    with pytest.raises(ProfilerConfigError) as info:
        nptf.parse_profile_batch(value)
    assert info.value.param == "profile_batch"


def test_callback_arguments_are_checked_at_construction(tmp_path):
    with pytest.raises(ProfilerConfigError) as info:
        nptf.ProfilerCallback(profile_batch=2, schedule=npuprof.schedule(wait=0, active=1))
    assert info.value.param == "schedule"
    with pytest.raises(ProfilerConfigError) as info:
        nptf.ProfilerCallback(profiling_options='{"output":"/tmp/x","l2":"1"}')
    assert info.value.param == "l2"
    with pytest.raises(ProfilerConfigError) as info:
        nptf.ProfilerCallback(output_path=tmp_path, host_sys_usage_freq=0)
    assert info.value.param == "host_sys_usage_freq"
    assert isinstance(nptf.ProfilerCallback(output_path=tmp_path), tf.keras.callbacks.Callback)


@pytest.fixture
def fresh_global_options(monkeypatch):
    monkeypatch.setattr(tf2_mod, "_global", None)
    return nptf.global_options()


def test_global_options_validate_on_assignment(fresh_global_options):
    pc = fresh_global_options.profiling_config
    assert pc.enable_profiling is False
    assert json.loads(pc.profiling_options)["output"] == "./"  # the adapter default
    with pytest.raises(ProfilerConfigError) as info:
        pc.enable_profiling = "True"
    assert info.value.param == "enable_profiling"
    with pytest.raises(ProfilerConfigError) as info:
        pc.profiling_options = '{"output":"/tmp/x","aic_metrics":"Pipe"}'
    assert info.value.param == "aic_metrics"
    with pytest.raises(ProfilerConfigError, match="has no option"):
        pc.enable_profilling = True
    fresh_global_options.precision_mode = "allow_mix_precision"  # other npu_device options are kept
    assert fresh_global_options.precision_mode == "allow_mix_precision"


@pytest.mark.slow
def test_global_options_and_open(fresh_global_options, tmp_path):
    out = tmp_path / "home_profiling"
    npu_device = nptf  # the docs' code, with one import changed
    npu_device.global_options().profiling_config.enable_profiling = True
    profiling_options = '{"output":"%s", \
			"training_trace":"on", \
			"task_trace":"on", \
			"fp_point":"", \
			"bp_point":""}' % out
    with pytest.warns(FutureWarning):
        npu_device.global_options().profiling_config.profiling_options = profiling_options
    with pytest.warns(FutureWarning):
        handle = npu_device.open().as_default()
    train_step = build_tf2_train_step(tf)
    for _ in range(3):
        train_step(tf.ones([8, 64]))
    results = handle.close()
    assert len(results) == 1
    assert results[0].run_dir.parent == out
    assert "Relu" in op_types(results[0].run_dir)
    assert handle.close() == []  # idempotent


def test_open_without_profiling_starts_nothing(fresh_global_options):
    handle = nptf.open()
    assert handle.profiler is None and handle.as_default() is handle
    assert handle.close() == []
