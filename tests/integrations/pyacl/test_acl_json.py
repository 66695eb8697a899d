"""acl.json profiler section: validation, writing, precedence, built from an npuprof config."""
from __future__ import annotations

import json

import pytest

from npuprof.config import build_config
from npuprof.errors import ProfilerConfigError, ProfilerDataError
from npuprof.integrations.pyacl.acl_json import (precedence, read_profiler_section, section_from_config,
                                                 validate_profiler_section, write_acl_json)


def test_valid_cann_and_svp_sections():
    cann = {"switch": "on", "output": "/data/prof", "storage_limit": "500MB", "task_time": "l1", "aicpu": "on",
            "aic_metrics": "Custom:0x1,0x2,3", "l2": "off", "ge_api": "l0", "ascendcl": "on", "runtime_api": "off",
            "msproftx": "on", "sys_hardware_mem_freq": "50", "llc_profiling": "read", "host_sys": "cpu,mem",
            "host_sys_usage": "cpu", "host_sys_usage_freq": 20}
    assert validate_profiler_section(cann) == cann
    svp = {"output": "/root/AscendProjects/MyAppTest/profiling", "aacpu": "on", "aac_metrics": "ArithmeticUtilization",
           "interval": "0", "acl_api": "on", "switch": "on"}
    assert validate_profiler_section(svp) == svp


@pytest.mark.parametrize("section,param", [
    ({"switch": "yes"}, "profiler.switch"),
    ({"output": "/tmp/a;rm -rf"}, "profiler.output"),
    ({"storage_limit": "100MB"}, "profiler.storage_limit"),
    ({"aic_metrics": "Fast"}, "profiler.aic_metrics"),
    ({"aic_metrics": "Custom:" + ",".join(["1"] * 9)}, "profiler.aic_metrics"),
    ({"task_time": "off", "aic_metrics": "PipeUtilization"}, "profiler.aic_metrics"),
    ({"llc_profiling": "read"}, "profiler.llc_profiling"),
    ({"sys_interconnection_freq": 51}, "profiler.sys_interconnection_freq"),
    ({"host_sys": "cpu,gpu"}, "profiler.host_sys"),
    ({"instr_profiling_freq": 1000, "aicpu": "on"}, "profiler.instr_profiling_freq"),
    ({"swtich": "on"}, "profiler.swtich"),
    ({"aac_metrics": "PipeUtilization"}, "profiler.aac_metrics"),
    ({"aacpu": "on", "task_time": "on"}, "acl.json profiler"),
])
def test_invalid_sections_name_the_key(section, param):
    with pytest.raises(ProfilerConfigError) as exc:
        validate_profiler_section(section)
    assert param in exc.value.param
    assert "expected" in str(exc.value)


def test_write_keeps_other_sections(tmp_path):
    path = tmp_path / "acl.json"
    path.write_text(json.dumps({"dump": {"dump_path": "/x"}, "profiler": {"switch": "off"}}))
    write_acl_json(path, {"switch": "on", "output": str(tmp_path)})
    data = json.loads(path.read_text())
    assert data["dump"] == {"dump_path": "/x"}
    assert data["profiler"] == {"switch": "on", "output": str(tmp_path)}
    assert read_profiler_section(path)["switch"] == "on"
    with pytest.raises(ProfilerConfigError):
        write_acl_json(path, {"switch": "maybe"})
    assert json.loads(path.read_text())["profiler"]["switch"] == "on"  # untouched on error
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ProfilerDataError, match="not valid JSON"):
        read_profiler_section(tmp_path / "broken.json")


def test_section_from_npuprof_config(tmp_path):
    s0 = section_from_config(build_config(output_path=tmp_path, profiler_level="Level0"), "/o")
    assert s0["task_time"] == "l0" and "aic_metrics" not in s0 and s0["switch"] == "on"
    s1 = section_from_config(build_config(output_path=tmp_path, profiler_level="Level1", mstx=True,
                                          host_sys=["cpu", "disk"], l2_cache=True), "/o")
    assert s1["aic_metrics"] == "PipeUtilization" and s1["msproftx"] == "on" and s1["l2"] == "on"
    assert s1["host_sys"] == "cpu,disk" and s1["host_sys_usage"] == "cpu"
    s2 = section_from_config(build_config(output_path=tmp_path, profiler_level="Level2",
                                          aic_metrics="MemoryUB"), "/o")
    assert (s2["aicpu"], s2["runtime_api"], s2["aic_metrics"]) == ("on", "on", "MemoryUB")
    sn = section_from_config(build_config(output_path=tmp_path, profiler_level="LevelNone", mstx=True), "/o")
    assert sn["msproftx"] == "on" and sn["task_time"] == "off"
    svp = section_from_config(build_config(output_path=tmp_path, profiler_level="Level1"), "/o", flavour="svp",
                              interval=2)
    assert svp == {"switch": "on", "output": "/o", "aacpu": "off", "acl_api": "on", "interval": "2",
                   "aac_metrics": "ArithmeticUtilization"}


def test_precedence_is_reported(tmp_path):
    on = tmp_path / "on.json"
    on.write_text(json.dumps({"profiler": {"switch": "on", "output": "/data/p"}}))
    off = tmp_path / "off.json"
    off.write_text(json.dumps({"profiler": {"switch": "off"}}))
    p = precedence(on, env={})
    assert p.winner == "acl.json" and not p.api_usable and p.output_dir == "/data/p"
    assert "100042" in p.report() and '"switch": "off"' in p.report()
    p = precedence(on, env={"PROFILER_SAMPLECONFIG": "{}"})
    assert p.winner == "msprof" and any("ignored" in m for m in p.messages)
    p = precedence(off, env={"PROFILING_MODE": "true"})
    assert p.winner == "environment" and not p.api_usable
    assert precedence(off, env={}).api_usable
    p = precedence({"profiler": {"switch": "on"}}, env={"ASCEND_WORK_PATH": "/w"})
    assert p.output_dir == "/w/profiling_data"
    p = precedence(on, env={"ASCEND_WORK_PATH": "/w"})
    assert any("beats ASCEND_WORK_PATH" in m for m in p.messages)
