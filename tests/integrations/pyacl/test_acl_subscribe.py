"""Subscription mode against the acl TEST DOUBLE: N ops -> N events, clean shutdown."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from acl_support import release_double, fresh_process_state, write_model
from npuprof.errors import ProfilerConfigError, ProfilerDataError, ProfilerStateError
from npuprof.events import EventKind
from npuprof.integrations.pyacl.contract import CONTRACT
from npuprof.integrations.pyacl.records import build_record, decode_records, signature
from npuprof.integrations.pyacl.subscribe import OpSubscriber

OPS = [("conv1", "Conv2D", 120), ("bn1", "BatchNorm", 40), ("relu1", "Relu", 15), ("fc", "MatMul", 77)]


@pytest.fixture
def acl():
    mod = fresh_process_state()
    mod.init()
    mod.rt.set_device(0)
    yield mod
    release_double()


def reader_threads():
    return [t for t in threading.enumerate() if t.name == "npuprof-acl-subscriber"]


@pytest.mark.parametrize("fields,size", [("acl", 72), ("layout", 72), ("layout", 80), ("acl", 80)])
def test_n_ops_give_n_events(acl, tmp_path, fields, size):
    acl._double_state().desc_size = size
    model = write_model(tmp_path / "m.json", OPS)
    mid, ret = acl.mdl.load_from_file(str(model))
    ctx, _ = acl.rt.create_context(0)
    seen = []
    runs = 25
    with OpSubscriber([mid], callback=seen.append, fields=fields, context=ctx, batch=7) as sub:
        for _ in range(runs):
            assert acl.mdl.execute(mid, 0, 0) == 0
    assert not sub.reader_alive and reader_threads() == []
    assert sub.errors == []
    assert len(sub.events) == len(OPS) * runs == sub.records_read
    assert [e.op_name for e in sub.events[:4]] == [o[0] for o in OPS]
    assert [e.op_type for e in sub.events[:4]] == [o[1] for o in OPS]
    assert [e.duration_us for e in sub.events[:4]] == [o[2] for o in OPS]
    assert all(e.end_us - e.start_us == e.duration_us and e.model_id == mid for e in sub.events)
    assert seen == sub.events
    table = sub.table()
    assert len(table) == len(OPS) * runs
    assert set(table["kind"].tolist()) == {int(EventKind.KERNEL)}
    assert table.column_strings("name")[:4] == [o[0] for o in OPS]
    assert (table["dur"][:4] == np.array([o[2] * 1000 for o in OPS])).all()
    assert (table["device"] == 0).all()
    assert set(table.column_strings("source")) == {"pyacl"}
    assert CONTRACT.subscribed == set()


def test_two_models_through_one_subscriber(acl, tmp_path):
    m1, _ = acl.mdl.load_from_file(str(write_model(tmp_path / "a.json", OPS[:2])))
    m2, _ = acl.mdl.load_from_file(str(write_model(tmp_path / "b.json", OPS[2:])))
    with OpSubscriber([m1, m2]) as sub:
        acl.mdl.execute(m1, 0, 0)
        acl.mdl.execute(m2, 0, 0)
    assert sorted((e.model_id, e.op_name) for e in sub.events) == \
        [(m1, "bn1"), (m1, "conv1"), (m2, "fc"), (m2, "relu1")]
    assert reader_threads() == []


def test_model_error_still_unsubscribes_and_stops_the_reader(acl, tmp_path):
    model = write_model(tmp_path / "bad.json", OPS, fail_after=2)
    mid, _ = acl.mdl.load_from_file(str(model))
    with pytest.raises(RuntimeError, match="507011"):
        with OpSubscriber([mid]) as sub:
            ret = acl.mdl.execute(mid, 0, 0)
            if ret != 0:
                raise RuntimeError(f"model execute failed: {ret}")
    assert [e.op_name for e in sub.events] == ["conv1", "bn1"]
    assert not sub.reader_alive and reader_threads() == []
    calls = [c for c in acl._double_calls() if "subscribe" in c[0]]
    assert calls[-2:] == [("acl.prof.model_unsubscribe", 0), ("acl.prof.destroy_subscribe_config", 0)]
    assert CONTRACT.subscribed == set()


def test_subscribe_failure_cleans_up(acl, tmp_path):
    mid, _ = acl.mdl.load_from_file(str(write_model(tmp_path / "m.json", OPS)))
    sub = OpSubscriber([mid, 999])  # 999: not a loaded model, the library refuses it
    fds_before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(Exception) as exc:
        sub.start()
    assert "100011" in str(exc.value)
    assert reader_threads() == []
    assert CONTRACT.subscribed == set()
    assert len(os.listdir("/proc/self/fd")) <= fds_before
    with OpSubscriber([mid]) as again:  # nothing left behind: a new subscriber works
        acl.mdl.execute(mid, 0, 0)
    assert len(again.events) == len(OPS)


def test_only_one_active_subscriber(acl, tmp_path):
    mid, _ = acl.mdl.load_from_file(str(write_model(tmp_path / "m.json", OPS)))
    with OpSubscriber([mid]):
        with pytest.raises(ProfilerStateError, match="one OpSubscriber"):
            OpSubscriber([mid]).start()


def test_callback_errors_do_not_stop_draining(acl, tmp_path):
    mid, _ = acl.mdl.load_from_file(str(write_model(tmp_path / "m.json", OPS)))

    def boom(ev):
        raise ValueError("user bug")

    with OpSubscriber([mid], callback=boom) as sub:
        for _ in range(3):
            acl.mdl.execute(mid, 0, 0)
    assert len(sub.events) == 12
    assert any("user bug" in e for e in sub.errors)


def test_events_go_to_a_recording_profiler(acl, tmp_path):
    import npuprof

    mid, _ = acl.mdl.load_from_file(str(write_model(tmp_path / "m.json", OPS)))
    prof = npuprof.Profiler(output_path=tmp_path / "prof", activities=["CPU"])
    with OpSubscriber([mid], profiler=prof):
        for _ in range(5):
            acl.mdl.execute(mid, 0, 0)
    prof.stop()
    res = npuprof.analyse(prof.saved_runs[0])[0]
    kernels = res.events.of_kind(EventKind.KERNEL)
    assert len(kernels) == 20
    rows = {r[1]: r for r in res.tables["op_statistic"].rows()}
    assert rows["Conv2D"][3] == 5  # Count


def test_arguments_are_checked():
    with pytest.raises(ProfilerConfigError, match="model_ids"):
        OpSubscriber([])
    with pytest.raises(ProfilerConfigError, match="fields"):
        OpSubscriber([1], fields="xml")
    with pytest.raises(ProfilerConfigError, match="aic_metrics"):
        OpSubscriber([1], aic_metrics="Fast")


def test_record_layout_and_crc():
    recs = b"".join(build_record(7, 1, i, 100 * i, 100 * i + 10 + i, 5) for i in range(6))
    d = decode_records(recs, 72)
    assert d["modelId"].tolist() == [7] * 6
    assert (d["end"] - d["start"]).tolist() == [10, 11, 12, 13, 14, 15]
    assert signature(b"123456789") ^ 0xFFFFFFFF == 0xE3069283  # CRC-32C check value
    bad = bytearray(recs)
    bad[72 + 30] ^= 0xFF
    with pytest.raises(ProfilerDataError, match="CRC"):
        decode_records(bytes(bad), 72)
    with pytest.raises(ProfilerDataError, match="multiple"):
        decode_records(recs[:-1], 72)
    d80 = decode_records(build_record(1, 1, 1, 0, 5, size=80, device=3), 80)
    assert d80["devId"].tolist() == [3]


def test_the_double_is_released_after_each_test():
    """Later tests in the same pytest process must not find an ``acl`` module (the backend would engage)."""
    import sys

    assert "acl" not in sys.modules
