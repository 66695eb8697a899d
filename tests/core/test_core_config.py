"""Every public Profiler parameter rejects bad values with a clear error."""
import pytest

from npuprof import (AicoreMetrics, ExportType, Profiler, ProfilerActivity, ProfilerConfigError, ProfilerLevel,
                     tensorboard_trace_handler)
from npuprof.config import build_config

BAD = [
    ("output_path", 123), ("output_path", ""), ("output_path", "a\x00b"), ("output_path", "x" * 5000),
    ("activities", ["TPU"]), ("activities", []), ("activities", 5),
    ("profiler_level", "Level9"), ("profiler_level", 1),
    ("aic_metrics", "Fast"),
    ("schedule", "every step"), ("on_trace_ready", 42),
    ("profile_memory", "yes"), ("record_shapes", 1), ("with_stack", None),
    ("host_sys", ["gpu"]), ("host_sys", 7), ("host_sys_usage_freq", 0), ("host_sys_usage_freq", 5000),
    ("host_sys_usage_freq", "50"), ("mstx", "on"),
    ("data_simplification", "true"), ("export_type", ["json"]), ("export_type", []),
    ("start_profile", 0), ("worker_name", "bad name!"), ("worker_name", 3), ("rank", -1), ("rank", "0"),
    ("flush_interval", 0), ("storage_limit", "lots"), ("storage_limit", 10),
    ("mstx_domain_include", "comm"), ("device_id", 5000), ("world_size", 0),
]


@pytest.mark.parametrize("param,value", BAD, ids=[f"{p}={v!r}"[:40] for p, v in BAD])
def test_bad_value_raises_naming_parameter(tmp_path, param, value):
    kwargs = {"output_path": str(tmp_path), "start_profile": False, param: value}
    with pytest.raises(ProfilerConfigError) as e:
        Profiler(**kwargs)
    assert e.value.param == param
    assert param in str(e.value) and "expected" in str(e.value)


def test_unknown_keyword_is_refused(tmp_path):
    with pytest.raises(ProfilerConfigError, match="unknown keyword"):
        Profiler(output_path=tmp_path, timeline_limit=500)


def test_no_silent_resets(tmp_path):
    # mindspore resets these silently; npuprof refuses
    with pytest.raises(ProfilerConfigError, match="aic_metrics"):
        build_config(output_path=tmp_path, profiler_level="Level0", aic_metrics="PipeUtilization")
    with pytest.raises(ProfilerConfigError, match="LevelNone"):
        build_config(output_path=tmp_path, profiler_level="LevelNone")
    with pytest.raises(ProfilerConfigError, match="mstx_domain_exclude"):
        build_config(output_path=tmp_path, mstx_domain_include=["a"], mstx_domain_exclude=["b"])


def test_enum_members_and_strings_are_interchangeable(tmp_path):
    a = build_config(output_path=tmp_path, activities=[ProfilerActivity.CPU, "NPU"], profiler_level="Level1",
                     aic_metrics=AicoreMetrics.MemoryUB, export_type=["text", ExportType.Db])
    assert a.activities == (ProfilerActivity.CPU, ProfilerActivity.NPU)
    assert a.profiler_level is ProfilerLevel.Level1 and a.aic_metrics is AicoreMetrics.MemoryUB
    assert a.export_type == (ExportType.Text, ExportType.Db)


def test_level1_defaults_metrics_to_pipe_utilization(tmp_path):
    assert build_config(output_path=tmp_path, profiler_level="Level1").aic_metrics is AicoreMetrics.PipeUtilization


def test_experimental_config_grouping(tmp_path):
    cfg = build_config(output_path=tmp_path, experimental_config={"profiler_level": "Level2", "mstx": True,
                                                                  "export_type": ["db"]})
    assert cfg.profiler_level is ProfilerLevel.Level2 and cfg.mstx and cfg.export_type == (ExportType.Db,)
    with pytest.raises(ProfilerConfigError, match="experimental_config"):
        build_config(output_path=tmp_path, experimental_config={"nonsense": 1})


@pytest.mark.parametrize("env,value", [("RANK_ID", "x"), ("RANK", "-3"), ("RANK_SIZE", "two"), ("DEVICE_ID", "a")])
def test_bad_rank_environment_variables(tmp_path, monkeypatch, env, value):
    monkeypatch.setenv(env, value)
    with pytest.raises(ProfilerConfigError) as e:
        build_config(output_path=tmp_path)
    assert e.value.param == env


def test_rank_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK_ID", "3")
    monkeypatch.setenv("RANK_SIZE", "8")
    monkeypatch.setenv("DEVICE_ID", "3")
    cfg = build_config(output_path=tmp_path)
    assert (cfg.rank, cfg.world_size, cfg.device_id) == (3, 8, 3)


@pytest.mark.parametrize("kwargs,param", [
    (dict(dir_name="a\x01"), "dir_name"), (dict(worker_name="a b"), "worker_name"),
    (dict(analyse_flag="yes"), "analyse_flag"), (dict(async_mode=1), "async_mode"),
])
def test_handler_arguments_validated(kwargs, param):
    with pytest.raises(ProfilerConfigError) as e:
        tensorboard_trace_handler(**kwargs)
    assert e.value.param == param


def test_errors_raised_before_anything_is_written(tmp_path):
    out = tmp_path / "never"
    with pytest.raises(ProfilerConfigError):
        Profiler(output_path=out, host_sys_usage_freq=-1)
    assert not out.exists()


def test_profile_rank_ids_forms(tmp_path):
    assert build_config(output_path=tmp_path, profile_rank_ids="0,2,4-6").profile_rank_ids == (0, 2, 4, 5, 6)
    assert build_config(output_path=tmp_path, profile_rank_ids=[3, 1]).profile_rank_ids == (1, 3)
    assert build_config(output_path=tmp_path, profile_rank_ids=5).profile_rank_ids == (5,)
    assert build_config(output_path=tmp_path, profile_rank_ids="all").profile_rank_ids is None
    # "4-2" used to be accepted as no rank at all, silently turning profiling off everywhere
    for bad in ("a", "1-", "4-2", "-1", [-1], True, ["x"], "1,,2"):
        with pytest.raises(ProfilerConfigError) as e:
            build_config(output_path=tmp_path, profile_rank_ids=bad)
        assert e.value.param == "profile_rank_ids"
    with pytest.raises(ProfilerConfigError, match="range 4-2 is reversed"):
        build_config(output_path=tmp_path, profile_rank_ids="4-2")


def test_every_rank_list_is_parsed_by_one_parser(tmp_path, capsys):
    """Profiler(profile_rank_ids), cluster --ranks and the timeline --steps filter agree on "4-2"."""
    from npuprof.cli import main
    from npuprof.export.filters import parse_steps

    with pytest.raises(ProfilerConfigError, match="steps='4-2'"):
        parse_steps("steps", "4-2")
    (tmp_path / "job").mkdir()
    assert main(["cluster", str(tmp_path / "job"), "--ranks", "4-2", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "ranks='4-2'" in err and "reversed" in err


def test_worker_name_carries_rank_in_multi_rank_jobs(tmp_path):
    assert build_config(output_path=tmp_path, rank=1, world_size=2).worker_name.endswith("-rank1")
    assert "-rank" not in build_config(output_path=tmp_path, rank=0, world_size=1).worker_name
