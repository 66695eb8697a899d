"""The pyACL profiling contract, rule by rule, against the acl TEST DOUBLE (tests/acl)."""
from __future__ import annotations

import json
import threading

import pytest

from acl_support import release_double, fresh_process_state, write_model
from npuprof.errors import ProfilerConfigError, ProfilerError
from npuprof.integrations.pyacl import constants as C
from npuprof.integrations.pyacl.checked import CheckedProf
from npuprof.integrations.pyacl.contract import CONTRACT, ProcessContract
from npuprof.integrations.pyacl.errors import RULES, AclProfilingError
from npuprof.integrations.pyacl.flags import aicore_metrics_id, data_type_mask
from npuprof.integrations.pyacl.profiler import AclProfiler
from npuprof.integrations.pyacl.subscribe import OpSubscriber

API_MASK = C.ACL_PROF_ACL_API | C.ACL_PROF_TASK_TIME


@pytest.fixture
def acl(monkeypatch):
    monkeypatch.delenv("PROFILING_MODE", raising=False)
    monkeypatch.delenv("PROFILER_SAMPLECONFIG", raising=False)
    mod = fresh_process_state()
    yield mod
    release_double()


@pytest.fixture
def model(tmp_path):
    return write_model(tmp_path / "model.json", [("conv1", "Conv2D", 100), ("relu1", "Relu", 20)])


def prof_calls(acl, name=None):
    calls = [c for c in acl._double_calls() if c[0].startswith("acl.prof.")]
    return [c for c in calls if name is None or c[0] == name]


def assert_rule(err: AclProfilingError, key: str, from_library: bool = False):
    rule = RULES[key]
    assert err.rule is rule
    assert err.code == rule.code
    assert rule.text in str(err)
    assert err.from_library is from_library
    assert isinstance(err, ProfilerError)


# -- constants and flag masks ----------------------------------------------------------------------
def test_constants_match_the_reference():
    assert (C.ACL_PROF_ACL_API, C.ACL_PROF_TASK_TIME, C.ACL_PROF_AICORE_METRICS, C.ACL_PROF_AICPU) == (1, 2, 4, 8)
    assert (C.ACL_PROF_MSPROFTX, C.ACL_PROF_TASK_TIME_L0, C.ACL_PROF_GE_API_L1) == (0x80, 0x800, 0x01000000)
    assert C.ACL_PROF_API_STATS == 0x400000000
    assert C.AICORE_METRICS_BY_NAME["MemoryAccess"] == 8 and C.ACL_AICORE_NONE == 0xFF
    assert C.ACL_PROF_STORAGE_LIMIT == 1 and C.ACL_PROF_HOST_SYS_USAGE_FREQ == 10 and C.ACL_PROF_PATH == 16
    assert C.error_name(148047) == "ACL_ERROR_PROF_API_CONFLICT"
    assert C.error_name(500005) == "ACL_ERROR_PROFILING_FAILURE"
    assert "subscription" in C.error_meaning(148047)
    assert C.error_name(123) == "UNKNOWN_123"


def test_levels_map_to_documented_masks():
    assert data_type_mask("Level0") == C.ACL_PROF_TASK_TIME_L0 | C.ACL_PROF_ACL_API
    assert data_type_mask("Level1") == (C.ACL_PROF_TASK_TIME | C.ACL_PROF_ACL_API | C.ACL_PROF_HCCL_TRACE
                                        | C.ACL_PROF_AICORE_METRICS)
    assert data_type_mask("Level2") == data_type_mask("Level1") | C.ACL_PROF_RUNTIME_API | C.ACL_PROF_AICPU
    assert data_type_mask("LevelNone", mstx=True) == C.ACL_PROF_MSPROFTX
    assert data_type_mask("Level1", aic_metrics="None") & C.ACL_PROF_AICORE_METRICS == 0
    assert data_type_mask("Level0", l2_cache=True, extra=0x20000000) & 0x20000010 == 0x20000010
    assert aicore_metrics_id(None, "Level1") == C.ACL_AICORE_PIPE_UTILIZATION
    assert aicore_metrics_id(None, "Level0") == C.ACL_AICORE_NONE
    assert aicore_metrics_id("ArithmeticUtilization", "Level2") == 0
    with pytest.raises(ProfilerConfigError, match="aic_metrics"):
        aicore_metrics_id("PipeUtilization", "Level0")
    with pytest.raises(ProfilerConfigError, match="profiler_level"):
        data_type_mask("LevelNone")


# -- the documented sequences ----------------------------------------------------------------------
def test_recommended_sequence_two_models_on_different_device_sets(acl, tmp_path, model):
    model2 = write_model(tmp_path / "model2.json", [("fc", "MatMul", 50)])
    assert acl.init() == 0
    acl.rt.set_device(0)
    prof = AclProfiler(tmp_path / "out", profiler_level="Level1").init()
    h1 = prof.start(devices=[0, 1])
    m1, ret = acl.mdl.load_from_file(str(model))
    assert ret == 0 and acl.mdl.execute(m1, 0, 0) == 0
    prof.stop(h1)
    h2 = prof.start(devices=[1, 2])
    m2, ret = acl.mdl.load_from_file(str(model2))
    assert ret == 0 and acl.mdl.execute(m2, 0, 0) == 0
    prof.stop(h2)
    prof.finalize()
    assert acl.mdl.unload(m1) == 0 and acl.mdl.unload(m2) == 0
    assert acl.finalize() == 0
    names = [c[0] for c in acl._double_calls()]
    assert all(code == 0 for _, code in prof_calls(acl) if _ != "acl.prof.create_config")
    order = [n for n in names if n in ("acl.init", "acl.prof.init", "acl.prof.start", "acl.mdl.load_from_file",
                                       "acl.mdl.execute", "acl.prof.stop", "acl.prof.finalize", "acl.finalize")]
    assert order == ["acl.init", "acl.prof.init", "acl.prof.start", "acl.mdl.load_from_file", "acl.mdl.execute",
                     "acl.prof.stop", "acl.prof.start", "acl.mdl.load_from_file", "acl.mdl.execute",
                     "acl.prof.stop", "acl.prof.finalize", "acl.finalize"]
    assert len(prof.prof_dirs) == 2
    assert sorted(p.name for p in prof.prof_dirs[0].iterdir() if p.name.startswith("device")) == \
        ["device_0", "device_1"]
    assert sorted(p.name for p in prof.prof_dirs[1].iterdir() if p.name.startswith("device")) == \
        ["device_1", "device_2"]
    tasks = (prof.prof_dirs[0] / "device_0" / "data" / "double.task.slice_0").read_text().splitlines()
    assert [json.loads(t)["op_name"] for t in tasks] == ["conv1", "relu1"]


def test_documented_incorrect_sequence_is_refused_before_the_library(acl, tmp_path):
    acl.init()
    prof = AclProfiler(tmp_path / "out").init()
    prof.start(devices=[0, 1])
    with pytest.raises(AclProfilingError) as exc:
        prof.start(devices=[1, 2])
    assert_rule(exc.value, "NO_DUPLICATE_DEVICE")
    assert exc.value.code == C.ACL_ERROR_PROF_ALREADY_RUN
    assert "[1]" in str(exc.value)
    assert len(prof_calls(acl, "acl.prof.start")) == 1  # the second start never reached acl
    prof.finalize(force=True)


def test_library_refuses_the_incorrect_sequence_too(acl, tmp_path):
    """With npuprof's bookkeeping unaware (a second, empty contract), the double's 100042 maps to the same rule."""
    acl.init()
    p = CheckedProf(acl, contract=ProcessContract(acl_initialised=True))
    p.init(str(tmp_path / "out"))
    p.start(p.create_config([0, 1], 0xFF, 0, API_MASK))
    other = CheckedProf(acl, contract=ProcessContract(acl_initialised=True, prof_initialised=True))
    with pytest.raises(AclProfilingError) as exc:
        other.start(other.create_config([1, 2], 0xFF, 0, API_MASK))
    assert_rule(exc.value, "NO_DUPLICATE_DEVICE", from_library=True)
    assert prof_calls(acl, "acl.prof.start")[-1] == ("acl.prof.start", C.ACL_ERROR_PROF_ALREADY_RUN)


# -- init rules ----------------------------------------------------------------------------------------
def test_init_before_acl_init(acl, tmp_path):
    with pytest.raises(AclProfilingError) as exc:
        AclProfiler(tmp_path / "out").init()
    assert_rule(exc.value, "INIT_AFTER_ACL_INIT")
    assert prof_calls(acl, "acl.prof.init") == []


def test_init_before_acl_init_when_npuprof_could_not_watch(acl, tmp_path):
    CONTRACT.acl_initialised = None  # acl state unknown: the library decides
    with pytest.raises(AclProfilingError) as exc:
        AclProfiler(tmp_path / "out").init()
    assert_rule(exc.value, "INIT_AFTER_ACL_INIT", from_library=True)
    assert prof_calls(acl, "acl.prof.init") == [("acl.prof.init", C.ACL_ERROR_UNINITIALIZE)]


def test_init_after_model_loading(acl, tmp_path, model):
    acl.init()
    acl.mdl.load_from_file(str(model))
    with pytest.raises(AclProfilingError) as exc:
        AclProfiler(tmp_path / "out").init()
    assert_rule(exc.value, "INIT_BEFORE_MODEL_LOAD")
    assert "1 model(s)" in str(exc.value)
    assert prof_calls(acl, "acl.prof.init") == []  # the double would have accepted it


def test_one_init_finalize_pair_per_process(acl, tmp_path):
    acl.init()
    prof = AclProfiler(tmp_path / "a").init()
    with pytest.raises(AclProfilingError) as exc:
        AclProfiler(tmp_path / "b").init()
    assert_rule(exc.value, "ONE_INIT_PAIR")
    prof.finalize()
    with pytest.raises(AclProfilingError) as exc:
        AclProfiler(tmp_path / "c").init()
    assert_rule(exc.value, "ONE_INIT_PAIR")
    assert "already used" in str(exc.value)
    assert len(prof_calls(acl, "acl.prof.init")) == 1


def test_invalid_init_path(acl):
    acl.init()
    p = CheckedProf(acl)
    with pytest.raises(AclProfilingError) as exc:
        p.init("")
    assert_rule(exc.value, "VALID_PATH")
    assert exc.value.code == C.ACL_ERROR_INVALID_FILE
    with pytest.raises(AclProfilingError) as exc:
        p.init("x" * 5000)
    assert_rule(exc.value, "VALID_ARGUMENT")
    assert prof_calls(acl, "acl.prof.init") == []


@pytest.mark.parametrize("call", ["start", "stop", "finalize", "set_config"])
def test_calls_before_prof_init(acl, call):
    acl.init()
    p = CheckedProf(acl)
    cfg = p.create_config([0], 0xFF, 0, API_MASK)
    with pytest.raises(AclProfilingError) as exc:
        if call == "set_config":
            p.set_config(C.ACL_PROF_SYS_HARDWARE_MEM_FREQ, "50")
        elif call == "finalize":
            p.finalize()
        else:
            getattr(p, call)(cfg)
    assert_rule(exc.value, "START_NEEDS_INIT")
    assert exc.value.code == C.ACL_ERROR_PROF_NOT_RUN
    assert prof_calls(acl, f"acl.prof.{call}") == []


def test_acl_json_switch_on_forbids_the_api(acl, tmp_path):
    cfg = tmp_path / "acl.json"
    cfg.write_text(json.dumps({"profiler": {"switch": "on", "output": str(tmp_path / "cmd")}}))
    assert acl.init(str(cfg)) == 0
    with pytest.raises(AclProfilingError) as exc:
        AclProfiler(tmp_path / "out").init()
    assert_rule(exc.value, "CMD_MODE_ACTIVE")
    assert str(cfg) in str(exc.value)
    assert prof_calls(acl, "acl.prof.init") == []
    p = CheckedProf(acl)
    for call in ("finalize",):
        with pytest.raises(AclProfilingError) as exc:
            p.finalize()
        assert_rule(exc.value, "CMD_MODE_ACTIVE")


def test_acl_json_switch_on_reported_by_precedence_without_tracking(acl, tmp_path):
    cfg = tmp_path / "acl.json"
    cfg.write_text(json.dumps({"profiler": {"switch": "on"}}))
    CONTRACT.acl_initialised = None
    from npuprof.integrations.pyacl.tracking import untrack_acl

    untrack_acl(acl)
    acl.init(str(cfg))
    with pytest.raises(AclProfilingError) as exc:  # checked from the acl_json argument
        AclProfiler(tmp_path / "out", acl_json=cfg).init()
    assert_rule(exc.value, "CMD_MODE_ACTIVE")
    assert "switch" in str(exc.value)
    with pytest.raises(AclProfilingError) as exc:  # not told: the library's 100042
        AclProfiler(tmp_path / "out").init()
    assert_rule(exc.value, "CMD_MODE_ACTIVE", from_library=True)


def test_profiling_env_forbids_the_api(acl, tmp_path, monkeypatch):
    monkeypatch.setenv("PROFILING_MODE", "true")
    monkeypatch.setenv("PROFILING_OPTIONS", json.dumps({"output": str(tmp_path / "env")}))
    acl.init()
    with pytest.raises(AclProfilingError) as exc:
        AclProfiler(tmp_path / "out").init()
    assert_rule(exc.value, "CMD_MODE_ACTIVE")
    assert "PROFILING_MODE" in str(exc.value)


# -- start / stop rules ------------------------------------------------------------------------------------
def test_duplicate_config_start(acl, tmp_path):
    acl.init()
    p = CheckedProf(acl)
    p.init(str(tmp_path / "out"))
    cfg = p.create_config([0], 0xFF, 0, API_MASK)
    p.start(cfg)
    with pytest.raises(AclProfilingError) as exc:
        p.start(cfg)
    assert_rule(exc.value, "NO_DUPLICATE_CONFIG")
    assert len(prof_calls(acl, "acl.prof.start")) == 1


def test_stop_needs_the_start_config(acl, tmp_path):
    acl.init()
    p = CheckedProf(acl)
    p.init(str(tmp_path / "out"))
    started = p.create_config([0], 0xFF, 0, API_MASK)
    other = p.create_config([0], 0xFF, 0, API_MASK | C.ACL_PROF_AICPU)
    p.start(started)
    with pytest.raises(AclProfilingError) as exc:
        p.stop(other)
    assert_rule(exc.value, "STOP_SAME_CONFIG")
    assert exc.value.code == C.ACL_ERROR_INVALID_PROFILING_CONFIG
    assert "another configuration" in str(exc.value)
    assert prof_calls(acl, "acl.prof.stop") == []
    p.stop(started)
    with pytest.raises(AclProfilingError) as exc:
        p.stop(started)  # stopped already
    assert_rule(exc.value, "STOP_SAME_CONFIG")


def test_stop_mask_mismatch_from_the_library(acl, tmp_path):
    acl.init()
    p = CheckedProf(acl)
    p.init(str(tmp_path / "out"))
    p.start(p.create_config([0], 0xFF, 0, API_MASK))
    unaware = CheckedProf(acl, contract=ProcessContract(acl_initialised=True, prof_initialised=True))
    other = unaware.create_config([0], 0xFF, 0, API_MASK | C.ACL_PROF_AICPU)
    unaware.contract.started[other] = None  # pretend: only the library knows
    unaware.contract.check_stop = lambda *a: None
    with pytest.raises(AclProfilingError) as exc:
        unaware.stop(other)
    assert_rule(exc.value, "STOP_SAME_CONFIG", from_library=True)
    assert exc.value.code == 100010


def test_finalize_with_a_started_config(acl, tmp_path):
    acl.init()
    prof = AclProfiler(tmp_path / "out").init()
    h = prof.start(devices=[0])
    with pytest.raises(AclProfilingError) as exc:
        prof.finalize()
    assert_rule(exc.value, "START_STOP_PAIRED")
    assert prof_calls(acl, "acl.prof.finalize") == []
    with pytest.raises(AclProfilingError):
        prof.prof.destroy_config(h.config)
    prof.finalize(force=True)  # documented: finalize stops every task; npuprof stops them first
    assert [c[0] for c in prof_calls(acl)][-3:] == ["acl.prof.stop", "acl.prof.destroy_config", "acl.prof.finalize"]


def test_stop_with_something_else_than_a_handle(acl, tmp_path):
    acl.init()
    prof = AclProfiler(tmp_path / "out").init()
    prof.start(devices=[0])
    with pytest.raises(AclProfilingError) as exc:
        prof.stop(12345)
    assert_rule(exc.value, "STOP_SAME_CONFIG")
    prof.finalize(force=True)


def test_context_manager_cleans_up_after_an_error(acl, tmp_path):
    acl.init()
    with pytest.raises(ZeroDivisionError):
        with AclProfiler(tmp_path / "out") as prof:
            prof.start(devices=[0])
            1 / 0
    assert prof.finalized and CONTRACT.started == {} and not CONTRACT.prof_initialised
    assert [c[0] for c in prof_calls(acl)][-1] == "acl.prof.finalize"


def test_acl_finalize_finalizes_prof_first(acl, tmp_path):
    acl.init()
    prof = AclProfiler(tmp_path / "out").init()
    prof.start(devices=[0])
    assert acl.finalize() == 0
    names = [c[0] for c in acl._double_calls()]
    assert names[-4:] == ["acl.prof.stop", "acl.prof.destroy_config", "acl.prof.finalize", "acl.finalize"]


def test_set_config_values(acl, tmp_path):
    acl.init()
    prof = AclProfiler(tmp_path / "out", settings={C.ACL_PROF_STORAGE_LIMIT: "500MB"}).init()
    assert prof_calls(acl, "acl.prof.set_config") == [("acl.prof.set_config", 0)]
    for bad in [(C.ACL_PROF_STORAGE_LIMIT, "100MB"), (C.ACL_PROF_LLC_MODE, "both"), (99, "1"),
                (C.ACL_PROF_SYS_IO_FREQ, "0"), (C.ACL_PROF_OPTYPE, "x" * 300)]:
        with pytest.raises(AclProfilingError) as exc:
            prof.set_config(*bad)
        assert_rule(exc.value, "VALID_ARGUMENT")
    with pytest.raises(ProfilerConfigError, match="settings"):
        AclProfiler(tmp_path / "x", settings={C.ACL_PROF_HOST_SYS: "gpu"})
    prof.finalize()


def test_create_config_arguments(acl):
    p = CheckedProf(acl)
    for args in ([[0, 0], 0xFF, 0, 1], [[-1], 0xFF, 0, 1], [[0], 42, 0, 1], [[0], 0xFF, 0, -1]):
        with pytest.raises(AclProfilingError) as exc:
            p.create_config(*args)
        assert_rule(exc.value, "VALID_ARGUMENT")
    assert prof_calls(acl, "acl.prof.create_config") == []


# -- subscription vs collection ---------------------------------------------------------------------------
def test_no_subscription_between_init_and_finalize(acl, tmp_path, model):
    acl.init()
    prof = AclProfiler(tmp_path / "out").init()
    acl.rt.set_device(0)
    CONTRACT.models_ever_loaded = 0
    mid, _ = acl.mdl.load_from_file(str(model))
    with pytest.raises(AclProfilingError) as exc:
        OpSubscriber([mid]).start()
    assert_rule(exc.value, "NO_SUBSCRIBE_IN_API_MODE")
    assert exc.value.code == C.ACL_ERROR_PROF_API_CONFLICT
    assert prof_calls(acl, "acl.prof.model_subscribe") == []
    with pytest.raises(AclProfilingError) as exc:
        prof.prof.model_unsubscribe(mid)
    assert_rule(exc.value, "NO_SUBSCRIBE_IN_API_MODE")
    prof.finalize()


def test_no_init_while_subscribed(acl, tmp_path, model):
    acl.init()
    mid, _ = acl.mdl.load_from_file(str(model))
    CONTRACT.models_ever_loaded = 0  # isolate this rule from the model-loading one
    with OpSubscriber([mid]):
        with pytest.raises(AclProfilingError) as exc:
            AclProfiler(tmp_path / "out").init()
        assert_rule(exc.value, "NO_INIT_WHILE_SUBSCRIBED")
    assert prof_calls(acl, "acl.prof.init") == []


def test_repeat_and_unknown_subscription(acl, model):
    import os

    acl.init()
    mid, _ = acl.mdl.load_from_file(str(model))
    p = CheckedProf(acl)
    r, w = os.pipe()
    cfg = p.create_subscribe_config(1, 0xFF, w)
    p.model_subscribe(mid, cfg)
    with pytest.raises(AclProfilingError) as exc:
        p.model_subscribe(mid, cfg)
    assert_rule(exc.value, "NO_REPEAT_SUBSCRIBE")
    assert exc.value.code == C.ACL_ERROR_PROF_REPEAT_SUBSCRIBE
    with pytest.raises(AclProfilingError) as exc:
        p.model_unsubscribe(mid + 100)
    assert_rule(exc.value, "UNSUBSCRIBE_SUBSCRIBED")
    assert exc.value.code == C.ACL_ERROR_INVALID_MODEL_ID
    assert len(prof_calls(acl, "acl.prof.model_subscribe")) == 1
    p.model_unsubscribe(mid)
    assert os.read(r, 100) == b""  # the library closed the write end
    os.close(r)
    p.destroy_subscribe_config(cfg)


# -- msproftx ----------------------------------------------------------------------------------------------
def test_msproftx_only_between_start_and_stop(acl, tmp_path):
    acl.init()
    prof = AclProfiler(tmp_path / "out", mstx=True).init()
    p = prof.prof
    with pytest.raises(AclProfilingError) as exc:
        p.create_stamp()
    assert_rule(exc.value, "MSPROFTX_IN_START")
    assert "no acl.prof.start" in str(exc.value)
    h = prof.start(devices=[0], mstx=False)
    with pytest.raises(AclProfilingError) as exc:
        p.create_stamp()
    assert "ACL_PROF_MSPROFTX" in str(exc.value)
    prof.stop(h)
    h = prof.start(devices=[0])
    stamp = p.create_stamp()
    p.set_stamp_trace_message(stamp, "step")
    p.mark(stamp)
    p.push(stamp)
    p.pop()
    rid = p.range_start(stamp)
    p.range_stop(rid)
    prof.stop(h)
    with pytest.raises(AclProfilingError) as exc:
        p.mark(stamp)
    assert_rule(exc.value, "MSPROFTX_IN_START")
    p.destroy_stamp(stamp)
    prof.finalize()
    tx = (prof.prof_dirs[-1] / "host" / "data" / "double.tx.slice_0").read_text().splitlines()
    assert [json.loads(t)["event_type"] for t in tx] == ["marker", "push_pop", "start_end"]


def test_push_pop_on_one_thread_only(acl, tmp_path):
    acl.init()
    prof = AclProfiler(tmp_path / "out", mstx=True).init()
    prof.start(devices=[0])
    p = prof.prof
    stamp = p.create_stamp()
    p.push(stamp)
    errors = []

    def other():
        try:
            p.pop()
        except AclProfilingError as e:
            errors.append(e)
        rid = p.range_start(stamp)  # cross-thread ranges are fine
        rids.append(rid)

    rids: list = []
    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(errors) == 1
    assert_rule(errors[0], "PUSH_POP_SAME_THREAD")
    p.range_stop(rids[0])  # stopped on another thread than it started
    p.pop()
    prof.finalize(force=True)


def test_stamps_and_ranges_are_paired(acl, tmp_path):
    acl.init()
    prof = AclProfiler(tmp_path / "out", mstx=True).init()
    prof.start(devices=[])
    p = prof.prof
    with pytest.raises(AclProfilingError) as exc:
        p.destroy_stamp(987654)
    assert_rule(exc.value, "STAMP_PAIRS")
    with pytest.raises(AclProfilingError) as exc:
        p.range_stop(42)
    assert_rule(exc.value, "STAMP_PAIRS")
    with pytest.raises(AclProfilingError) as exc:
        p.mark_ex("x" * 200, 0)
    assert_rule(exc.value, "VALID_ARGUMENT")
    prof.finalize(force=True)


def test_every_rule_has_a_test():
    """Each rule key appears in an assert_rule call of this module."""
    import inspect
    import sys

    src = inspect.getsource(sys.modules[__name__])
    untested = [k for k in RULES if k != "LIBRARY_RETURN" and f'"{k}"' not in src]
    assert untested == []
