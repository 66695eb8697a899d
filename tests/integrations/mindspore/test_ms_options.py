"""mindspore.profiler keyword parity without importing MindSpore (strings and npuprof's enums).

The same checks with MindSpore's own enum classes and _ExperimentalConfig run in
tests/integrations/mindspore/test_ms_e2e.py (a MindSpore child process).
"""
from __future__ import annotations

import pytest

import npuprof
from npuprof import ProfilerConfigError
from npuprof.enums import AicoreMetrics, ProfilerActivity, ProfilerLevel
from npuprof.integrations.mindspore.options import (RETIRED, experimental_to_dict, from_mindspore_kwargs,
                                                    make_profiler, mindspore_options)


@pytest.mark.parametrize("key", sorted(RETIRED))
def test_retired_mindspore_keywords_raise_with_the_replacement(key):
    with pytest.raises(ProfilerConfigError) as e:
        from_mindspore_kwargs(**{key: True})
    assert e.value.param == key
    assert RETIRED[key].split()[0] in str(e.value)


def test_enum_members_become_values_and_experimental_fills_unset_keys():
    kw = from_mindspore_kwargs(activities=[ProfilerActivity.CPU], aic_metrics=AicoreMetrics.AiCoreNone,
                               experimental_config={"profiler_level": ProfilerLevel.Level1, "mstx": True,
                                                    "export_type": ["db"]})
    assert kw == {"activities": ["CPU"], "aic_metrics": "None", "profiler_level": "Level1", "mstx": True,
                  "export_type": ["db"]}


def test_experimental_config_unknown_key_raises():
    with pytest.raises(ProfilerConfigError) as e:
        experimental_to_dict({"profiler_levle": "Level1"})
    assert e.value.param == "experimental_config" and e.value.value == "profiler_levle"
    with pytest.raises(ProfilerConfigError):
        experimental_to_dict(object())


def test_silent_mindspore_resets_raise_instead():
    with pytest.raises(ProfilerConfigError) as e:
        from_mindspore_kwargs(activities=["NPU"], record_shapes=True)
    assert e.value.param == "record_shapes"
    with pytest.raises(ProfilerConfigError) as e:
        from_mindspore_kwargs(data_process=True, schedule=npuprof.schedule(wait=0, active=1))
    assert e.value.param == "data_process"
    with pytest.raises(ProfilerConfigError) as e:
        from_mindspore_kwargs(sync_enable="yes")
    assert e.value.param == "sync_enable"


def test_npu_only_switches_need_an_ascend_mindspore():
    # MindSpore is not imported in this process: the device is unknown, so the switch is refused
    with pytest.raises(ProfilerConfigError) as e:
        from_mindspore_kwargs(hbm_ddr=True)
    assert e.value.param == "hbm_ddr" and "Ascend" in str(e.value)
    # defaults are accepted and dropped
    assert "mindspore_options" not in from_mindspore_kwargs(pcie=False, sync_enable=True, data_process=False)


def test_make_profiler_validates_like_the_core_and_does_not_start(tmp_path):
    with pytest.raises(ProfilerConfigError) as e:
        make_profiler(output_path=str(tmp_path), profiler_level="Level3")
    assert e.value.param == "profiler_level"
    prof = make_profiler(output_path=str(tmp_path), activities=["CPU"], start_profile=False,
                         parallel_strategy=False)
    assert prof.current_session is None and prof.config.activities == (ProfilerActivity.CPU,)
    assert mindspore_options(prof.config) == {}
