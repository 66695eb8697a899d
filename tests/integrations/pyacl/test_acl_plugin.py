"""The pyACL backend behind npuprof.Profiler, and the msproftx mapping (acl TEST DOUBLE)."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading

import pytest

from acl_support import release_double, FAKE_MSPROF_DIR, fresh_process_state, write_model
from npuprof import Profiler, mstx, record_function, schedule
from npuprof.events import EventKind
from npuprof.integrations.pyacl.checked import shared_prof
from npuprof.integrations.pyacl.msproftx import MsprofTxSink
from npuprof.integrations.pyacl.profiler import AclProfiler

OPS = [("conv1", "Conv2D", 100), ("relu1", "Relu", 25)]


@pytest.fixture
def acl(monkeypatch):
    monkeypatch.setenv("PATH", f"{FAKE_MSPROF_DIR}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("NPUPROF_NO_MSPROF", raising=False)
    monkeypatch.delenv("PROFILING_MODE", raising=False)
    monkeypatch.delenv("DEVICE_ID", raising=False)
    mod = fresh_process_state()
    yield mod
    release_double()


def prof_names(acl):
    return [c[0] for c in acl._double_calls() if c[0].startswith("acl.prof.") or c[0] in ("acl.init", "acl.finalize")]


def _started_on_a_model(acl, tmp_path):
    """acl initialised on device 0, a model loaded, and a started Level1 Profiler with mstx."""
    acl.init()
    acl.rt.set_device(0)
    prof = Profiler(output_path=tmp_path / "prof", profiler_level="Level1", mstx=True, start_profile=False)
    model_id, _ = acl.mdl.load_from_file(str(write_model(tmp_path / "m.json", OPS)))
    prof.start()
    return prof, model_id


def test_profiler_drives_acl_prof_in_documented_order(acl, tmp_path):
    import npuprof

    prof, model_id = _started_on_a_model(acl, tmp_path)
    for _ in range(3):
        with record_function("infer"):
            acl.mdl.execute(model_id, 0, 0)
        mstx.mark("batch done")
        prof.step()
    prof.stop()
    assert acl.finalize() == 0
    assert prof_names(acl) == ["acl.init", "acl.prof.init", "acl.prof.create_config", "acl.prof.start",
                               "acl.prof.stop", "acl.prof.destroy_config", "acl.prof.finalize", "acl.finalize"]
    run = prof.saved_runs[0]
    index = json.loads((run / "CANN" / "prof_dirs.json").read_text())
    assert len(index["prof_dirs"]) == 1 and index["devices"] == [0]
    prof_dir = (run / "CANN" / index["prof_dirs"][0]).resolve()
    tx = [json.loads(x) for x in (prof_dir / "host" / "data" / "double.tx.slice_0").read_text().splitlines()]
    assert [(t["event_type"], t["message"]) for t in tx] == [("push_pop", "infer"), ("marker", "batch done")] * 3
    res = npuprof.analyse(run)[0]
    cann = res.events.select(res.events.string_array("source") == "cann")
    kernels = cann.of_kind(EventKind.KERNEL)
    assert sorted(kernels.column_strings("name")) == ["conv1"] * 3 + ["relu1"] * 3
    assert sorted(set(kernels["dur"].tolist())) == [25_000, 100_000]
    assert len(cann.of_kind(EventKind.RANGE)) == 3 and len(cann.of_kind(EventKind.MARK)) == 3
    # the PROF_ dir belongs to the npuprof run: not analysed again as a run of its own
    assert [r.run_dir for r in npuprof.analyse(tmp_path / "prof")] == [run]


def test_each_window_starts_and_stops_one_init_per_process(acl, tmp_path):
    acl.init()
    acl.rt.set_device(0)
    prof = Profiler(output_path=tmp_path / "prof", schedule=schedule(wait=0, warmup=0, active=1, repeat=2),
                    start_profile=False)
    model_id, _ = acl.mdl.load_from_file(str(write_model(tmp_path / "m.json", OPS)))
    prof.start()
    for _ in range(3):
        acl.mdl.execute(model_id, 0, 0)
        prof.step()
    prof.stop()
    # a second Profiler in the same process reuses the one acl.prof.init
    prof2 = Profiler(output_path=tmp_path / "prof2", start_profile=True)
    acl.mdl.execute(model_id, 0, 0)
    prof2.stop()
    acl.finalize()
    names = prof_names(acl)
    assert names.count("acl.prof.init") == 1 and names.count("acl.prof.finalize") == 1
    assert names.count("acl.prof.start") == 3 == names.count("acl.prof.stop")
    assert len(prof.saved_runs) == 2
    dirs = [json.loads((r / "CANN" / "prof_dirs.json").read_text())["prof_dirs"][0] for r in prof.saved_runs]
    assert dirs[0] != dirs[1]


def test_acl_json_switch_on_takes_precedence(acl, tmp_path, caplog):
    cfg = tmp_path / "acl.json"
    cfg.write_text(json.dumps({"profiler": {"switch": "on", "output": str(tmp_path / "cmd")}}))
    acl.init(str(cfg))
    caplog.set_level(logging.INFO, logger="npuprof")
    prof = Profiler(output_path=tmp_path / "prof")
    prof.stop()
    assert not [n for n in prof_names(acl) if n.startswith("acl.prof")]
    assert "pyacl" not in prof._active_plugins
    assert "switch" in caplog.text and "100042" in caplog.text


def test_profiler_after_model_loading_warns_and_training_goes_on(acl, tmp_path, caplog):
    acl.init()
    acl.mdl.load_from_file(str(write_model(tmp_path / "m.json", OPS)))
    caplog.set_level(logging.WARNING, logger="npuprof")
    prof = Profiler(output_path=tmp_path / "prof")
    prof.stop()
    assert "before any model is loaded" in caplog.text
    assert not [n for n in prof_names(acl) if n.startswith("acl.prof")]


def test_not_a_pyacl_app_means_backend_unavailable(tmp_path):
    code = ("import sys, npuprof, logging\n"
            "logging.basicConfig(level=logging.INFO)\n"
            "import npuprof.integrations.pyacl.plugin as p\n"
            "from npuprof.integrations.pyacl import AclProfiler, OpSubscriber, constants\n"
            f"prof = npuprof.Profiler(output_path={str(tmp_path / 'p')!r}); prof.stop()\n"
            "assert 'acl' not in sys.modules, 'acl imported'\n"
            "print('OK')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr
    assert "has not imported pyACL" in proc.stderr


def test_sink_maps_ranges_and_never_raises(acl, tmp_path, caplog):
    acl.init()
    with AclProfiler(tmp_path / "out", profiler_level="LevelNone", mstx=True) as prof:
        h = prof.start(devices=[0])  # LevelNone: msproftx only, empty device list
        assert h.devices == ()
        sink = MsprofTxSink(shared_prof())
        assert sink.range_start("inactive") is None  # not activated: nothing happens
        sink.activate()
        tok = sink.range_start("outer")
        inner = sink.range_start("inner")
        sink.range_end(inner)
        sink.range_end(tok)
        cross = sink.range_start("cross", same_thread=False)
        t = threading.Thread(target=sink.range_end, args=(cross,))
        t.start()
        t.join()
        sink.mark("m")
        caplog.set_level(logging.WARNING, logger="npuprof")
        tok = sink.range_start("wrong thread")
        t = threading.Thread(target=sink.range_end, args=(tok,))
        t.start()
        t.join()
        assert sink.failed and "same thread" in caplog.text and not sink.active
        assert sink.range_start("after failure") is None
        prof.stop(h)
    tx = [json.loads(x) for x in (prof.prof_dirs[0] / "host" / "data" / "double.tx.slice_0").read_text().splitlines()]
    assert [(t["event_type"], t["message"]) for t in tx] == [("push_pop", "inner"), ("push_pop", "outer"),
                                                            ("start_end", "cross"), ("marker", "m")]
    assert tx[2]["tid"] != tx[2]["end_tid"]


def test_mstx_range_ended_on_another_thread_is_a_start_stop_range(acl, tmp_path):
    prof, model_id = _started_on_a_model(acl, tmp_path)
    rid = mstx.range_start("prefetch")
    acl.mdl.execute(model_id, 0, 0)
    ender = threading.Thread(target=mstx.range_end, args=(rid,))
    ender.start()
    ender.join()
    prof.stop()
    assert acl.finalize() == 0
    run = prof.saved_runs[0]
    index = json.loads((run / "CANN" / "prof_dirs.json").read_text())
    prof_dir = (run / "CANN" / index["prof_dirs"][0]).resolve()
    tx = [json.loads(x) for x in (prof_dir / "host" / "data" / "double.tx.slice_0").read_text().splitlines()]
    # push/pop would break the same-thread rule: the range went through range_start / range_stop
    assert [(t["event_type"], t["message"]) for t in tx] == [("start_end", "prefetch")]
