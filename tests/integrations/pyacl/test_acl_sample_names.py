"""pyACL's names as its samples spell them, and one Profiler over several devices (acl TEST DOUBLE).

The collection sample of seed 001 builds its configuration from
``ACL_PROF_ACL_API | ACL_PROF_TASK_TIME | ACL_PROF_AICPU_TRACE | ACL_PROF_AICORE_METRICS | ACL_PROF_L2CACHE |
ACL_PROF_HCCL`` (defining only the first four itself) on ``device_list = [0]``; its subscription sample reads op
names with ``acl.prof.get_op_name(data, data_len, i, 275)``.
"""
from __future__ import annotations

import json
import os

import pytest

from acl_support import FAKE_MSPROF_DIR, fresh_process_state, release_double, write_model
from npuprof import Profiler, ProfilerConfigError
from npuprof.events import EventKind
from npuprof.integrations.pyacl import constants as C
from npuprof.integrations.pyacl.subscribe import OpSubscriber

# the values the sample defines itself
SAMPLE_DEFINES = {"ACL_PROF_ACL_API": 0x0001, "ACL_PROF_TASK_TIME": 0x0002, "ACL_PROF_AICORE_METRICS": 0x0004,
                  "ACL_PROF_AICPU_TRACE": 0x0008}
SAMPLE_FLAGS = ("ACL_PROF_ACL_API", "ACL_PROF_TASK_TIME", "ACL_PROF_AICPU_TRACE", "ACL_PROF_AICORE_METRICS",
                "ACL_PROF_L2CACHE", "ACL_PROF_HCCL")
SAMPLE_OP_NAME_LEN = 275
OPS = [("conv1", "Conv2D", 100), ("relu1", "Relu", 25)]


@pytest.fixture
def acl(monkeypatch):
    monkeypatch.setenv("PATH", f"{FAKE_MSPROF_DIR}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("PROFILING_MODE", raising=False)
    monkeypatch.delenv("DEVICE_ID", raising=False)
    mod = fresh_process_state()
    yield mod
    release_double()


def test_the_samples_flag_names_exist_with_the_headers_values():
    for name, value in SAMPLE_DEFINES.items():
        assert getattr(C, name) == value
    mask = 0
    for name in SAMPLE_FLAGS:
        mask |= getattr(C, name)
    assert C.ACL_PROF_HCCL == C.ACL_PROF_HCCL_TRACE == 0x0020
    assert C.flag_names(mask) == ["ACL_PROF_ACL_API", "ACL_PROF_TASK_TIME", "ACL_PROF_AICORE_METRICS",
                                  "ACL_PROF_AICPU", "ACL_PROF_L2CACHE", "ACL_PROF_HCCL_TRACE"]


def test_the_samples_configuration_starts_on_the_double(acl, tmp_path):
    acl.init()
    acl.rt.set_device(0)
    assert acl.prof.init(str(tmp_path)) == 0
    mask = 0
    for name in SAMPLE_FLAGS:
        mask |= getattr(C, name)
    config = acl.prof.create_config([0], 0, 0, mask)
    assert config != 0
    assert acl.prof.start(config) == 0
    assert acl.prof.stop(config) == 0
    assert acl.prof.destroy_config(config) == 0
    assert acl.prof.finalize() == 0


def test_op_names_longer_than_the_header_length_read_as_the_sample_does(acl, tmp_path, monkeypatch):
    """Without get_op_name_len (older pyACL) npuprof asks with the sample's 275, so a 270-byte name is read."""
    acl.init()
    acl.rt.set_device(0)
    long_name = "n" * 270
    assert C.ACL_PROF_MAX_OP_NAME_LEN < len(long_name) + 1 <= C.ACL_PROF_SAMPLE_OP_NAME_LEN == SAMPLE_OP_NAME_LEN
    monkeypatch.delattr(acl.prof, "get_op_name_len")
    monkeypatch.delattr(acl.prof, "get_op_type_len")
    model = write_model(tmp_path / "m.json", [(long_name, "Conv2D", 50), ("relu1", "Relu", 5)])
    mid, _ = acl.mdl.load_from_file(str(model))
    ctx, _ = acl.rt.create_context(0)
    with OpSubscriber([mid], context=ctx) as sub:
        assert acl.mdl.execute(mid, 0, 0) == 0
    assert sub.errors == []
    assert [e.op_name for e in sub.events] == [long_name, "relu1"]
    assert [e.op_type for e in sub.events] == ["Conv2D", "Relu"]


def test_one_profiler_over_two_devices(acl, tmp_path):
    import npuprof

    acl.init()
    acl.rt.set_device(0)
    prof = Profiler(output_path=tmp_path / "prof", activities=["NPU"], device_id=[0, 1], start_profile=False)
    assert prof.config.device_ids == (0, 1) and prof.config.device_id == 0
    model_id, _ = acl.mdl.load_from_file(str(write_model(tmp_path / "m.json", OPS)))
    prof.start()
    for _ in range(2):
        acl.mdl.execute(model_id, 0, 0)
    prof.stop()
    acl.finalize()
    starts = [c for c in acl._double_calls() if c[0] == "acl.prof.start"]
    creates = [c for c in acl._double_calls() if c[0] == "acl.prof.create_config"]
    assert len(starts) == 1 and len(creates) == 1           # one configuration for both devices
    [run] = prof.saved_runs
    index = json.loads((run / "CANN" / "prof_dirs.json").read_text())
    assert index["devices"] == [0, 1]
    [prof_dir] = [(run / "CANN" / d).resolve() for d in index["prof_dirs"]]
    assert {"device_0", "device_1"} <= {p.name for p in prof_dir.iterdir()}
    events = npuprof.analyse(run)[0].events
    kernels = events.select(events.string_array("source") == "cann").of_kind(EventKind.KERNEL)
    assert sorted(kernels.column_strings("name")) == ["conv1", "conv1", "relu1", "relu1"]


@pytest.mark.parametrize("device_id", [[], [0, 0], [0, -1], ["0"], [True]])
def test_bad_device_lists_are_refused(tmp_path, device_id):
    with pytest.raises(ProfilerConfigError) as e:
        Profiler(output_path=tmp_path, device_id=device_id, start_profile=False)
    assert e.value.param == "device_id"
