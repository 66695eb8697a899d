"""``npuprof.integrations.mindspore.Profiler``: MindSpore's arguments, defaults, rules and methods.

No MindSpore here (a MindSpore import would change the plugins every later test of this process sees):
strings, npuprof's enums and a look-alike of MindSpore's enums (plain ``enum.Enum`` classes with MindSpore's
member names and values, which is all npuprof reads of them). MindSpore's own members and the docstring
examples run in ``tests/integrations/mindspore/test_ms_profiler_examples.py``.
"""
from __future__ import annotations

import enum
import json
import logging
import time
from pathlib import Path

import pytest

import npuprof
from npuprof import ProfilerConfigError, ProfilerDataError
from npuprof.enums import AicoreMetrics, ProfilerActivity
from npuprof.integrations.mindspore import Profiler
from npuprof.integrations.mindspore import profiler as drop_in
from npuprof.integrations.mindspore.profiler import simplify_run


class MsActivity(enum.Enum):          # mindspore.profiler.ProfilerActivity's members (not a str subclass)
    NPU = "NPU"
    GPU = "GPU"
    CPU = "CPU"


class MsMetrics(enum.Enum):           # part of mindspore.profiler.AicoreMetrics
    PipeUtilization = "PipeUtilization"
    AiCoreNone = "None"


def _work(ms: float = 2.0) -> None:
    with npuprof.record_function("work"):
        time.sleep(ms / 1000)


def _runs(root: Path) -> list[Path]:
    return sorted(root.glob("*_ascend_ms"))


# -- constructor ---------------------------------------------------------------------------------------------------
def test_mindspore_defaults(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    prof = Profiler(start_profile=False)
    cfg = prof.profiler.config
    assert cfg.output_path == (tmp_path / "data").resolve()
    assert cfg.activities == (ProfilerActivity.CPU, ProfilerActivity.NPU)
    assert cfg.aic_metrics is AicoreMetrics.AiCoreNone and cfg.profiler_level.value == "Level0"
    assert prof.data_simplification is True and prof.profiler.current_session is None
    # Level1 without metrics: MindSpore's AiCoreNone default becomes PipeUtilization there (no error: not given)
    assert Profiler(start_profile=False, profiler_level="Level1").profiler.config.aic_metrics \
        is AicoreMetrics.PipeUtilization


def test_foreign_enum_members_are_taken_by_value(tmp_path):
    prof = Profiler(start_profile=False, output_path=str(tmp_path), activities=[MsActivity.CPU, MsActivity.NPU],
                    profiler_level="Level1", aic_metrics=MsMetrics.PipeUtilization)
    assert prof.profiler.config.activities == (ProfilerActivity.CPU, ProfilerActivity.NPU)
    assert prof.profiler.config.aic_metrics is AicoreMetrics.PipeUtilization
    core = npuprof.Profiler(output_path=tmp_path, activities=MsActivity.CPU, aic_metrics=MsMetrics.AiCoreNone,
                            start_profile=False)
    assert core.config.activities == (ProfilerActivity.CPU,) and core.config.aic_metrics is AicoreMetrics.AiCoreNone
    with pytest.raises(ProfilerConfigError) as e:
        npuprof.Profiler(output_path=tmp_path, activities=[MsActivity.GPU, "TPU"], start_profile=False)
    assert e.value.param == "activities" and e.value.value == "TPU"


@pytest.mark.parametrize("kwargs, param", [
    (dict(activities=[MsActivity.CPU], profile_memory=True), "profile_memory"),
    (dict(activities=["NPU"], profile_memory=True), "profile_memory"),
    (dict(activities=["CPU"], profiler_level="Level1", aicore_metrics=MsMetrics.PipeUtilization), "aicore_metrics"),
    (dict(activities=["CPU"], profiler_level="Level1", aic_metrics="PipeUtilization"), "aic_metrics"),
    (dict(activities=["NPU"], with_stack=True), "with_stack"),
    (dict(profiler_level="Level1", aicore_metrics=MsMetrics.AiCoreNone), "aicore_metrics"),      # MindSpore: reset
    (dict(profiler_level="Level0", aicore_metrics="PipeUtilization"), "aicore_metrics"),          # MindSpore: reset
    (dict(aicore_metrics="PipeUtilization", aic_metrics="Memory", profiler_level="Level1"), "aic_metrics"),
    (dict(mstx_domain_include=["a"]), "mstx_domain_include"),                                    # MindSpore: reset
    (dict(profiler_level="LevelNone"), "profiler_level"),                                        # MindSpore: Level0
    (dict(activities=["NPU"], record_shapes=True), "record_shapes"),                             # MindSpore: False
    (dict(hbm_ddr=True), "hbm_ddr"),                    # Ascend only; MindSpore is not even imported here
    (dict(data_simplification="yes"), "data_simplification"),
    (dict(start_profile=1), "start_profile"),
    (dict(timeline_limit=500), "timeline_limit"),
    (dict(profile_framework="all"), "profile_framework"),
    (dict(no_such_option=True), "no_such_option"),
])
def test_mindspore_rules_and_silent_resets_raise(tmp_path, kwargs, param):
    with pytest.raises(ProfilerConfigError) as e:
        Profiler(output_path=str(tmp_path), **kwargs)
    assert e.value.param == param
    assert "expected" in str(e.value)
    assert not _runs(tmp_path)     # nothing started


# -- methods --------------------------------------------------------------------------------------------------------
def test_start_stop_analyse_and_simplification(tmp_path):
    prof = Profiler(output_path=str(tmp_path), activities=["CPU"], start_profile=False)
    prof.stop()                                  # not started: logged, nothing happens
    prof.start()
    prof.start()                                 # second start: warned, ignored
    prof.add_metadata("model", "mlp")
    prof.add_metadata_json("sizes", json.dumps({"batch": 2}))
    _work()
    prof.stop()
    [run] = _runs(tmp_path)
    (run / "FRAMEWORK").mkdir(exist_ok=True)     # as MindSpore's plugin leaves them on a real run
    (run / "MINDSPORE" / "x_1_2_ascend_ms" / "logs").mkdir(parents=True, exist_ok=True)
    results = prof.analyse(pretty=True)
    assert [r.run_dir for r in results] == [run]
    out = run / "ASCEND_PROFILER_OUTPUT"
    assert "work" in (out / "range_statistic.csv").read_text()
    assert (out / "trace_view.json").read_text().startswith("{\n    ")    # pretty: indented
    assert json.loads((run / "profiler_metadata.json").read_text()) == {"model": "mlp", "sizes": {"batch": 2}}
    assert not (run / "FRAMEWORK").exists() and not (run / "MINDSPORE").exists()
    assert (run / "NPUPROF").is_dir()
    assert prof.analyse() == []                  # analysed once


def test_data_simplification_false_keeps_everything(tmp_path):
    with Profiler(output_path=str(tmp_path), activities=["CPU"], data_simplification=False) as prof:
        _work()
    [run] = _runs(tmp_path)
    (run / "FRAMEWORK").mkdir(exist_ok=True)
    prof.analyse()
    assert (run / "FRAMEWORK").is_dir() and (run / "ASCEND_PROFILER_OUTPUT" / "analyse.done").exists()


def test_simplify_run_keeps_raw_cann_data(tmp_path):
    run = tmp_path / "w_1_20250101000000000_ascend_ms"
    ms = run / "MINDSPORE" / "w_1_ascend_ms"
    prof_dir = ms / "PROF_000001_20250101000000000_ABCDEFG"
    for d in (run / "FRAMEWORK", run / "NPUPROF", ms / "FRAMEWORK", prof_dir / "mindstudio_profiler_output",
              prof_dir / "mindstudio_profiler_log", prof_dir / "host" / "sqlite", prof_dir / "host" / "data",
              prof_dir / "device_0" / "sqlite", prof_dir / "device_0" / "data"):
        d.mkdir(parents=True)
    (prof_dir / "device_0" / "data" / "all_file.complete").write_text("")
    (prof_dir / "device_0" / "data" / "task.data.0.slice_0").write_text("raw")
    removed = simplify_run(run)
    assert sorted(removed) == sorted(["FRAMEWORK", "MINDSPORE/w_1_ascend_ms/FRAMEWORK",
                                      f"MINDSPORE/w_1_ascend_ms/{prof_dir.name}/mindstudio_profiler_output",
                                      f"MINDSPORE/w_1_ascend_ms/{prof_dir.name}/mindstudio_profiler_log",
                                      f"MINDSPORE/w_1_ascend_ms/{prof_dir.name}/host/sqlite",
                                      f"MINDSPORE/w_1_ascend_ms/{prof_dir.name}/device_0/sqlite",
                                      f"MINDSPORE/w_1_ascend_ms/{prof_dir.name}/device_0/data/all_file.complete"])
    assert (prof_dir / "device_0" / "data" / "task.data.0.slice_0").exists() and (run / "NPUPROF").is_dir()


def test_stop_with_an_unstepped_schedule_warns_and_returns(tmp_path, caplog):
    prof = Profiler(output_path=str(tmp_path), activities=["CPU"], schedule=npuprof.schedule(wait=0, active=2, repeat=1))
    with caplog.at_level(logging.WARNING, logger="npuprof"):
        prof.stop()
    assert "please use step()" in caplog.text
    assert npuprof.running_profiler() is prof.profiler          # still collecting, as in MindSpore
    for _ in range(2):
        _work()
        prof.step()
    prof.stop()
    assert npuprof.running_profiler() is None
    assert len(prof.profiler.saved_runs) == 1


def test_analyse_with_a_schedule_points_to_on_trace_ready(tmp_path, caplog):
    prof = Profiler(output_path=str(tmp_path), activities=["CPU"], schedule=npuprof.schedule(wait=0, active=1))
    _work()
    prof.step()
    with caplog.at_level(logging.WARNING, logger="npuprof"):
        assert prof.analyse() == []
    assert "on_trace_ready" in caplog.text
    assert npuprof.running_profiler() is None
    assert all(not (r / "ASCEND_PROFILER_OUTPUT").exists() for r in _runs(tmp_path))


def test_on_trace_ready_analyses_each_window(tmp_path):
    prof = Profiler(output_path=str(tmp_path), activities=["CPU"], schedule=npuprof.schedule(wait=0, active=1),
                    on_trace_ready=npuprof.tensorboard_trace_handler(str(tmp_path / "tb")))
    for _ in range(2):
        _work()
        prof.step()
    prof.stop()
    runs = _runs(tmp_path / "tb")
    assert len(runs) >= 2 and all((r / "ASCEND_PROFILER_OUTPUT" / "analyse.done").exists() for r in runs)


def test_step_without_a_schedule_has_no_effect(tmp_path, caplog):
    prof = Profiler(output_path=str(tmp_path), activities=["CPU"])
    with caplog.at_level(logging.ERROR, logger="npuprof"):
        prof.step()
    assert "step takes no effect" in caplog.text and prof.step_num == 0
    prof.stop()


@pytest.mark.parametrize("kwargs, param", [
    (dict(offline_path="./x"), "offline_path"),
    (dict(pretty="yes"), "pretty"),
    (dict(step_list=[2, 4]), "step_list"),
    (dict(step_list="2"), "step_list"),
    (dict(step_list=[True]), "step_list"),
    (dict(step_list=[]), "step_list"),
    (dict(mode="fast"), "mode"),
])
def test_analyse_bad_arguments_raise_config_errors(tmp_path, kwargs, param):
    prof = Profiler(output_path=str(tmp_path), activities=["CPU"])
    _work()
    with pytest.raises(ProfilerConfigError) as e:
        prof.analyse(**kwargs)
    assert e.value.param == param
    assert npuprof.running_profiler() is prof.profiler      # refused before anything happened
    prof.stop()


@pytest.mark.parametrize("kwargs, param", [
    (dict(path=123), "path"),
    (dict(path="/no/such/dir"), "path"),
    (dict(path=".", pretty=1), "pretty"),
    (dict(path=".", step_list=[1, 3]), "step_list"),
    (dict(path=".", data_simplification="no"), "data_simplification"),
])
def test_offline_analyse_bad_arguments_raise_config_errors(kwargs, param):
    with pytest.raises(ProfilerConfigError) as e:
        Profiler.offline_analyse(**kwargs)
    assert e.value.param == param


def test_offline_analyse_of_a_folder_without_runs_is_an_error(tmp_path):
    with pytest.raises(ProfilerDataError):
        Profiler.offline_analyse(str(tmp_path))


def test_step_list_names_the_runs_steps_when_missing(tmp_path):
    with Profiler(output_path=str(tmp_path), activities=["CPU"]) as prof:
        _work()
    with pytest.raises(ProfilerConfigError) as e:
        prof.analyse(step_list=[3, 4])
    assert e.value.param == "step_list" and "0" in str(e.value)   # no step marks: the whole run is step 0


def test_offline_analyse_step_list_and_async_analyse(tmp_path):
    sched = npuprof.schedule(wait=0, active=4, repeat=1)
    prof = Profiler(output_path=str(tmp_path / "a"), activities=["CPU"], schedule=sched)
    for _ in range(4):
        _work()
        prof.step()
    prof.stop()
    [run] = _runs(tmp_path / "a")
    [result] = Profiler.offline_analyse(str(run), step_list=[2, 1])   # any order, as MindSpore
    assert [int(s) for s in result.tables["step_trace_time"].column("Step")] == [1, 2]

    prof = Profiler(output_path=str(tmp_path / "b"), activities=["CPU"])
    _work()
    assert prof.analyse(mode="async") == []
    drop_in._wait_async_children()
    [run] = _runs(tmp_path / "b")
    assert (run / "ASCEND_PROFILER_OUTPUT" / "analyse.done").exists()


def test_del_stops_a_running_profiler(tmp_path):
    prof = Profiler(output_path=str(tmp_path), activities=["CPU"])
    _work()
    prof.__del__()
    assert npuprof.running_profiler() is None and len(prof.profiler.saved_runs) == 1
