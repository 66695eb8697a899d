"""profiling_options: validation, documented defaults, mapping to npuprof and back."""
from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuprof import ProfilerConfigError
from npuprof.config import build_config
from npuprof.integrations.cann.profiling_options import (ADAPTER_DEFAULT_OPTIONS, KEYS, MAX_OPTIONS_BYTES,
                                                     parse_profiling_options, render_profiling_options)

# The strings exactly as Ascend's documentation prints them.
DOCS_ESTIMATOR = ('{"output":"/tmp/profiling","training_trace":"on","task_trace":"on","fp_point":"",'
                  '"bp_point":"","aic_metrics":"PipeUtilization"}')
DOCS_TF2 = '{"output":"/home/profiling", \
			"training_trace":"on", \
			"task_trace":"on", \
			"fp_point":"", \
			"bp_point":""}'
GE_ENV_DEFAULT = ('{"output":"./","training_trace":"on","task_trace":"on","hccl":"on","aicpu":"on",'
                  '"aic_metrics":"PipeUtilization","msproftx":"off"}')


@pytest.fixture(autouse=True)
def _no_ascend_work_path(monkeypatch):
    monkeypatch.delenv("ASCEND_WORK_PATH", raising=False)


def parse_quiet(text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return parse_profiling_options(text)


# -- invalid inputs: (options, key the error must name) -----------------------
LONG_FP = '{"output":"/tmp/x","fp_point":"' + "a" * 2100 + '"}'
INVALID = [
    ('{"task_tim":"on"}', "task_tim"),
    ('{"Output":"/tmp/x"}', "Output"),
    ('{"switch":"on"}', "switch"),
    ('{"ascendcl":"on"}', "ascendcl"),
    ('{"scale":"on"}', "scale"),
    ('{"training_trace":"off"}', "training_trace"),
    ('{"training_trace":true}', "training_trace"),
    ('{"task_time":"l4"}', "task_time"),
    ('{"task_time":"ON"}', "task_time"),
    ('{"task_time":1}', "task_time"),
    ('{"task_trace":"yes"}', "task_trace"),
    ('{"ge_api":"l2"}', "ge_api"),
    ('{"hccl":"true"}', "hccl"),
    ('{"aicpu":1}', "aicpu"),
    ('{"aic_metrics":"PipelineUtilization"}', "aic_metrics"),
    ('{"aic_metrics":"Custom:"}', "aic_metrics"),
    ('{"aic_metrics":"Custom:0x1,0x2,0x3,0x4,0x5,0x6,0x7,0x8,0x9"}', "aic_metrics"),
    ('{"aic_metrics":"Custom:0x6F"}', "aic_metrics"),
    ('{"aic_metrics":"Custom:0x0"}', "aic_metrics"),
    ('{"aic_metrics":"Custom:zz"}', "aic_metrics"),
    ('{"aic_metrics":null}', "aic_metrics"),
    ('{"task_time":"l0","aic_metrics":"PipeUtilization"}', "aic_metrics"),
    ('{"l2":"enable"}', "l2"),
    ('{"msproftx":false}', "msproftx"),
    ('{"runtime_api":"On"}', "runtime_api"),
    ('{"task_memory":"1"}', "task_memory"),
    ('{"task_tsfw":null}', "task_tsfw"),
    ('{"task_block":"l1"}', "task_block"),
    ('{"instr_profiling":"all"}', "instr_profiling"),
    ('{"instr_profiling_freq":299}', "instr_profiling_freq"),
    ('{"instr_profiling_freq":30001}', "instr_profiling_freq"),
    ('{"instr_profiling_freq":1000,"training_trace":"on"}', "instr_profiling_freq"),
    ('{"instr_profiling_freq":1000,"aic_metrics":"Memory"}', "instr_profiling_freq"),
    ('{"sys_hardware_mem_freq":0}', "sys_hardware_mem_freq"),
    ('{"sys_hardware_mem_freq":101}', "sys_hardware_mem_freq"),
    ('{"sys_hardware_mem_freq":"50"}', "sys_hardware_mem_freq"),
    ('{"sys_hardware_mem_freq":50.5}', "sys_hardware_mem_freq"),
    ('{"sys_hardware_mem_freq":true}', "sys_hardware_mem_freq"),
    ('{"llc_profiling":"readwrite"}', "llc_profiling"),
    ('{"sys_io_sampling_freq":101}', "sys_io_sampling_freq"),
    ('{"sys_interconnection_freq":51}', "sys_interconnection_freq"),
    ('{"sys_cpu_freq":-1}', "sys_cpu_freq"),
    ('{"dvpp_freq":"100"}', "dvpp_freq"),
    ('{"sys_lp_freq":0}', "sys_lp_freq"),
    ('{"sys_mem_serviceflow":""}', "sys_mem_serviceflow"),
    ('{"host_sys":"cpu,gpu"}', "host_sys"),
    ('{"host_sys":"cpu,cpu"}', "host_sys"),
    ('{"host_sys":""}', "host_sys"),
    ('{"host_sys":["cpu"]}', "host_sys"),
    ('{"host_sys_usage":"disk"}', "host_sys_usage"),
    ('{"host_sys_usage_freq":51}', "host_sys_usage_freq"),
    ('{"host_sys_usage_freq":"10"}', "host_sys_usage_freq"),
    ('{"optype":"MatMul,,Add"}', "optype"),
    ('{"optype":"' + "A," * 200 + 'B"}', "optype"),
    ('{"storage_limit":"100MB"}', "storage_limit"),
    ('{"storage_limit":"200"}', "storage_limit"),
    ('{"storage_limit":"1GB"}', "storage_limit"),
    ('{"storage_limit":500}', "storage_limit"),
    ('{"storage_limit":"4294967296MB"}', "storage_limit"),
    ('{"output":"/tmp/a\\nb"}', "output"),
    ('{"output":5}', "output"),
    ('{"training_trace":"on"}', "output"),          # no output and no ASCEND_WORK_PATH: GE refuses
    ('{"fp_point":1}', "fp_point"),
    ('{"output":"/tmp/x","output":"/tmp/y"}', "output"),
    ('{"output":"/tmp/x",}', "profiling_options"),
    ("output=/tmp/x", "profiling_options"),
    ('["output"]', "profiling_options"),
    ('"on"', "profiling_options"),
    (LONG_FP, "profiling_options"),
    (b"\xff\xfe{}", "profiling_options"),
    (12345, "profiling_options"),
]


def test_table_is_large_enough():
    assert len(INVALID) >= 40
    assert len({text for text, _ in INVALID}) == len(INVALID)


@pytest.mark.parametrize("text,key", INVALID, ids=[f"{i:02d}-{k}" for i, (_, k) in enumerate(INVALID)])
def test_invalid_options_raise_naming_the_key(text, key):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(ProfilerConfigError) as info:
            parse_profiling_options(text)
    err = info.value
    assert err.param == key
    assert key in str(err)
    assert err.allowed  # says what is allowed


def test_error_message_names_value_and_allowed():
    with pytest.raises(ProfilerConfigError) as info:
        parse_profiling_options('{"output":"/tmp/x","sys_cpu_freq":"10"}')
    msg = str(info.value)
    assert "sys_cpu_freq" in msg and "'10'" in msg and "[1, 50]" in msg


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(ProfilerConfigError, match="did you mean 'task_time'"):
        parse_profiling_options('{"output":"/tmp/x","task_tim":"on"}')


def test_acl_json_key_is_explained():
    with pytest.raises(ProfilerConfigError, match="acl.json"):
        parse_profiling_options('{"output":"/tmp/x","switch":"on"}')


# -- valid inputs ---------------------------------------------------------------

def test_docs_strings_are_accepted_as_they_are():
    with pytest.warns(FutureWarning, match="task_trace"):
        est = parse_profiling_options(DOCS_ESTIMATOR)
    assert est.options["output"] == "/tmp/profiling"
    kw = est.to_config_kwargs()
    assert kw["output_path"] == "/tmp/profiling"
    assert kw["profiler_level"] == "Level1"
    assert kw["aic_metrics"] == "PipeUtilization"
    tf2 = parse_quiet(DOCS_TF2)
    assert tf2.to_config_kwargs()["output_path"] == "/home/profiling"
    assert tf2.training_trace
    # bytes, as read from custom_op.parameter_map["profiling_options"].s
    assert parse_quiet(DOCS_ESTIMATOR.encode()).options == est.options


def test_empty_options_give_the_adapter_defaults():
    for empty in (None, "", "   ", b""):
        opts = parse_profiling_options(empty)
        assert opts.defaulted
        assert opts.text == ADAPTER_DEFAULT_OPTIONS
        assert json.loads(opts.text) == {"output": "./", "training_trace": "on", "task_time": "on", "hccl": "on",
                                         "aicpu": "on", "aic_metrics": "PipeUtilization", "msproftx": "off"}
        kw = opts.to_config_kwargs()
        assert kw["output_path"] == "./"
        assert kw["profiler_level"] == "Level1" and kw["aic_metrics"] == "PipeUtilization"
        assert "mstx" not in kw


def test_ge_environment_default_is_valid():
    opts = parse_quiet(GE_ENV_DEFAULT)
    assert opts.task_time == "on"


def test_per_key_documented_defaults():
    opts = parse_profiling_options('{"output":"/tmp/x"}')
    assert opts.task_time == "on"          # task_time defaults to on
    assert opts.aic_metrics is None        # key absent -> no PMU collection
    assert not opts.training_trace
    kw = opts.to_config_kwargs()
    assert kw["profiler_level"] == "Level1" and kw["aic_metrics"] == "None"
    # present but "" -> PipeUtilization
    assert parse_profiling_options('{"output":"/tmp/x","aic_metrics":""}').aic_metrics == "PipeUtilization"


def test_output_falls_back_to_ascend_work_path(monkeypatch, tmp_path):
    monkeypatch.setenv("ASCEND_WORK_PATH", str(tmp_path))
    kw = parse_profiling_options('{"training_trace":"on"}').to_config_kwargs()
    assert kw["output_path"] == str(tmp_path / "profiling_data")


VALID_VALUES = {
    "task_time": ["on", "off", "l0", "l1", "l2", "l3", ""],
    "ge_api": ["off", "l0", "l1"],
    "aic_metrics": ["ArithmeticUtilization", "PipeUtilization", "Memory", "MemoryL0", "MemoryUB",
                    "ResourceConflictRatio", "L2Cache", "MemoryAccess", "Custom:0x1,0x6E,10", ""],
    "task_block": ["all", "on", "off"],
    "llc_profiling": ["read", "write"],
    "host_sys": ["cpu", "cpu,mem,disk,network,osrt", "numa"],
    "host_sys_usage": ["cpu", "mem", "cpu,mem"],
    "storage_limit": ["200MB", "4294967295MB"],
    "sys_hardware_mem_freq": [1, 100], "sys_io_sampling_freq": [1, 100], "sys_interconnection_freq": [1, 50],
    "sys_cpu_freq": [1, 50], "dvpp_freq": [1, 100], "sys_lp_freq": [1, 100], "host_sys_usage_freq": [1, 50],
    "optype": ["MatMul", "MatMul,Conv2D,Add"], "sys_mem_serviceflow": ["on"],
    "fp_point": ["", "resnet/conv1"], "bp_point": ["gradients/AddN"],
}
for _k in ("hccl", "aicpu", "l2", "msproftx", "runtime_api", "task_memory", "task_tsfw", "instr_profiling"):
    VALID_VALUES[_k] = ["on", "off"]
VALID = [(k, v) for k, vals in VALID_VALUES.items() for v in vals]


@pytest.mark.parametrize("key,value", VALID, ids=[f"{k}={v}" for k, v in VALID])
def test_every_allowed_value_is_accepted(key, value):
    text = json.dumps({"output": "/tmp/x", key: value})
    opts = parse_quiet(text)
    assert opts.options[key] == value


def test_every_allow_listed_key_is_covered():
    assert set(KEYS) - {"output", "training_trace", "task_trace", "instr_profiling_freq"} <= set(VALID_VALUES)


def test_instr_profiling_freq_alone_is_valid():
    opts = parse_profiling_options('{"output":"/tmp/x","instr_profiling_freq":300,"task_time":"off"}')
    assert opts.options["instr_profiling_freq"] == 300


def test_size_limit_is_2047_bytes():
    head = '{"output":"/tmp/x","fp_point":"'
    filler = "a" * (MAX_OPTIONS_BYTES - len(head) - 2)
    ok = head + filler + '"}'
    assert len(ok.encode()) == MAX_OPTIONS_BYTES
    with pytest.warns(UserWarning, match="only with"):
        assert parse_profiling_options(ok).options["fp_point"] == filler
    with pytest.raises(ProfilerConfigError) as info:
        parse_profiling_options(head + filler + 'a"}')
    assert info.value.param == "profiling_options"
    # multi-byte characters count in bytes, not characters
    with pytest.raises(ProfilerConfigError):
        parse_profiling_options(head + "\u00e9" * 1010 + '"}')


def test_deprecated_keys_warn():
    with pytest.warns(FutureWarning, match="hccl is deprecated"):
        parse_profiling_options('{"output":"/tmp/x","hccl":"on"}')
    with pytest.warns(UserWarning, match="task_time='l2' wins"):
        opts = parse_profiling_options('{"output":"/tmp/x","task_trace":"off","task_time":"l2"}')
    assert opts.task_time == "l2"


# -- mapping to npuprof ------------------------------------------------------

@pytest.mark.parametrize("options,expected", [
    ({"task_time": "l0"}, {"profiler_level": "Level0"}),
    ({"task_time": "off"}, {"profiler_level": "Level0"}),
    ({"task_time": "off", "msproftx": "on"}, {"profiler_level": "LevelNone", "mstx": True}),
    ({"task_time": "l1"}, {"profiler_level": "Level1", "aic_metrics": "None"}),
    ({"task_time": "l2", "aic_metrics": "Memory"}, {"profiler_level": "Level2", "aic_metrics": "Memory"}),
    ({"task_trace": "l2"}, {"profiler_level": "Level2"}),
    ({"runtime_api": "on"}, {"profiler_level": "Level2"}),
    ({"ge_api": "l1"}, {"profiler_level": "Level2"}),
    ({"aic_metrics": "Custom:0x1,0x2"}, {"aic_metrics": "PipeUtilization"}),
    ({"l2": "on"}, {"l2_cache": True}),
    ({"host_sys": "cpu,mem,osrt", "host_sys_usage": "cpu"}, {"host_sys": ["cpu", "mem"]}),
    ({"host_sys_usage": "mem", "host_sys_usage_freq": 20}, {"host_sys": ["mem"], "host_sys_usage_freq": 20}),
    ({"storage_limit": "250MB"}, {"storage_limit": "250MB"}),
])
def test_mapping_to_build_config_kwargs(options, expected, tmp_path):
    opts = parse_quiet(json.dumps({"output": str(tmp_path), **options}))
    kw = opts.to_config_kwargs()
    for key, value in expected.items():
        assert kw[key] == value, key
    cfg = opts.to_config()  # the kwargs are accepted by the core validator
    assert str(cfg.profiler_level) == kw["profiler_level"]
    assert dict(cfg.extra)["profiling_options"] == opts.text
    if "storage_limit" in options:
        assert cfg.storage_limit == 250 << 20


def test_render_docs_config():
    cfg = parse_quiet(DOCS_ESTIMATOR).to_config()
    rendered = json.loads(render_profiling_options(cfg))
    assert rendered["output"] == "/tmp/profiling"
    assert rendered["training_trace"] == "on"
    assert rendered["task_time"] == "l1"
    assert rendered["aic_metrics"] == "PipeUtilization"
    assert rendered["fp_point"] == "" and rendered["bp_point"] == ""


def test_render_keeps_device_only_keys_of_the_source(tmp_path):
    src = {"output": str(tmp_path), "task_time": "on", "sys_hardware_mem_freq": 50, "llc_profiling": "write",
           "aic_metrics": "Custom:0x1,0x2", "host_sys": "cpu,osrt"}
    cfg = parse_quiet(json.dumps(src)).to_config()
    out = json.loads(render_profiling_options(cfg))
    for key in ("sys_hardware_mem_freq", "llc_profiling", "aic_metrics", "host_sys"):
        assert out[key] == src[key]


def test_render_refuses_what_profiling_options_cannot_express(tmp_path):
    with pytest.raises(ProfilerConfigError) as info:
        render_profiling_options(build_config(output_path=tmp_path, host_sys=["cpu"], host_sys_usage_freq=100))
    assert info.value.param == "host_sys_usage_freq"
    assert json.loads(render_profiling_options(build_config(output_path=tmp_path, storage_limit="1GB"))
                      )["storage_limit"] == "1024MB"
    with pytest.raises(ProfilerConfigError) as info:
        render_profiling_options(build_config(output_path=tmp_path, storage_limit="100MB"))
    assert info.value.param == "storage_limit"


LEVELS = st.sampled_from(["Level0", "Level1", "Level2"])
METRICS = st.sampled_from([None, "None", "PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0",
                           "MemoryUB", "ResourceConflictRatio", "L2Cache", "MemoryAccess"])


@settings(max_examples=60, deadline=None)
@given(level=LEVELS, metrics=METRICS, l2=st.booleans(), mstx=st.booleans(),
       host=st.lists(st.sampled_from(["cpu", "mem", "disk", "network"]), unique=True),
       freq=st.integers(1, 50), limit_mb=st.one_of(st.none(), st.integers(200, 100000)))
def test_render_then_parse_round_trips(tmp_path_factory, level, metrics, l2, mstx, host, freq, limit_mb):
    out = tmp_path_factory.getbasetemp() / "rt"
    if level == "Level0" and metrics not in (None, "None"):
        metrics = None
    cfg = build_config(output_path=out, profiler_level=level, aic_metrics=metrics, l2_cache=l2, mstx=mstx,
                       host_sys=host, host_sys_usage_freq=freq,
                       storage_limit=None if limit_mb is None else f"{limit_mb}MB")
    text = render_profiling_options(cfg)
    assert len(text.encode()) <= MAX_OPTIONS_BYTES
    back = parse_profiling_options(text).to_config()
    for field in ("output_path", "profiler_level", "aic_metrics", "l2_cache", "mstx", "host_sys",
                  "storage_limit"):
        assert getattr(back, field) == getattr(cfg, field), field
    if host:
        assert back.host_sys_usage_freq == cfg.host_sys_usage_freq
