"""Profiler(python_memory=True): Python allocations by the line that made them (tracemalloc), the peak and
what was alive then; a planted leak is found as the top live allocation at the peak; the memory timeline
export (torch.profiler's export_memory_timeline) and its checks."""
from __future__ import annotations

import csv
import gzip
import json
import tracemalloc

import pytest

from npuprof import Profiler, ProfilerConfigError
from npuprof.analysis.memory import memory_record, memory_summary

LEAK_LINE = "kept.append(bytearray(LEAK_BYTES))"
LEAK_BYTES = 256 * 1024
STEPS = 12


def _train(prof, kept: list) -> None:
    for _ in range(STEPS):
        kept.append(bytearray(LEAK_BYTES))                 # the planted leak: one more block alive each step
        scratch = [bytearray(64 * 1024) for _ in range(8)]    # temporaries, freed at the end of each step
        del scratch
        prof.step()


def _leak_location() -> str:
    lines = open(__file__, encoding="utf-8").read().splitlines()
    return f"{__file__}:{next(i for i, t in enumerate(lines, 1) if LEAK_LINE in t and 'LEAK_LINE' not in t)}"


@pytest.fixture(scope="module")
def leak_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pymem")
    kept: list = []
    assert not tracemalloc.is_tracing()
    with Profiler(output_path=out, python_memory=True) as prof:
        _train(prof, kept)
    assert not tracemalloc.is_tracing(), "npuprof stops the tracing it started"
    (res,) = prof.analyse()
    return prof, res, out


def test_the_planted_leak_is_the_top_live_allocation_at_the_peak(leak_run):
    _, res, _ = leak_run
    s = memory_summary(res.events)
    top = s.live[0]
    assert top.name == _leak_location()
    assert top.size_bytes >= STEPS * LEAK_BYTES                  # every step's block is still alive
    assert s.live_by_operator[0][0] == top.name
    # the peak is the highest sampled total, and the leak is most of it
    series = [r for r in s.series if r.name == "Python Total Allocated(MB)"]
    assert series and s.peak_mb == pytest.approx(series[0].peak)
    assert top.size_bytes / 2**20 <= s.peak_mb


def test_python_series_is_a_memory_record_component(leak_run):
    _, res, _ = leak_run
    rows = memory_record(res.events).records()
    python = [r for r in rows if r["Component"] == "Python"]
    assert len(python) == STEPS + 2                              # start, each step, stop
    assert all(r["Device Type"] == "CPU" for r in python)
    values = [r["Total Allocated(MB)"] for r in python]
    assert values[-1] - values[0] >= STEPS * LEAK_BYTES / 2**20 * 0.99   # the leak grows the total
    out = res.run_dir / "ASCEND_PROFILER_OUTPUT"
    with open(out / "memory_record.csv", newline="") as fh:
        assert len([r for r in csv.DictReader(fh) if r["Component"] == "Python"]) == len(python)
    assert (out / "operator_memory.csv").is_file()


def test_export_memory_timeline_html_and_json(leak_run, tmp_path):
    prof, res, _ = leak_run
    page = prof.export_memory_timeline(tmp_path / "memory.html")
    text = page.read_text()
    assert "<script" not in text and "Peak allocated" in text and "polygon" in text.lower()
    data = json.loads(prof.export_memory_timeline(tmp_path / "memory.json").read_text())
    assert data["peak"]["live"][0]["name"] == _leak_location()
    assert max(data["series_mb"]["Python Total Allocated(MB)"]["values"]) == pytest.approx(data["peak"]["allocated_mb"])
    stacked = [sum(v[i] for v in data["live_bytes"].values()) for i in range(len(data["times_us"]))]
    assert max(stacked) >= STEPS * LEAK_BYTES
    gz = prof.export_memory_timeline(tmp_path / "memory.json.gz")
    assert json.loads(gzip.decompress(gz.read_bytes())) == data
    cpu_only = json.loads(prof.export_memory_timeline(tmp_path / "cpu.json", device="cpu").read_text())
    assert cpu_only["peak"] == data["peak"]                     # all of it is host memory
    npu = json.loads(prof.export_memory_timeline(tmp_path / "npu.json", device="npu:0").read_text())
    assert npu["peak"]["allocated_mb"] is None and npu["live_bytes"] == {}


@pytest.mark.parametrize("kwargs, param", [({"path": "mem.png"}, "path"), ({"path": "m.html", "device": "gpu"}, "device"),
                                           ({"path": "m.html", "device": "cpu:1"}, "device")])
def test_export_memory_timeline_refuses_bad_input_first(leak_run, tmp_path, kwargs, param):
    prof = leak_run[0]
    kwargs = dict(kwargs, path=tmp_path / kwargs["path"])
    with pytest.raises(ProfilerConfigError) as e:
        prof.export_memory_timeline(**kwargs)
    assert e.value.param == param
    assert list(tmp_path.iterdir()) == []


def test_python_memory_is_validated_and_leaves_a_users_tracing_alone(tmp_path):
    with pytest.raises(ProfilerConfigError) as e:
        Profiler(output_path=tmp_path, python_memory="yes")
    assert e.value.param == "python_memory"
    tracemalloc.start()
    try:
        with Profiler(output_path=tmp_path, python_memory=True) as prof:
            prof.step()
        assert tracemalloc.is_tracing(), "tracing the program started stays on"
    finally:
        tracemalloc.stop()


def test_without_python_memory_nothing_is_traced(tmp_path):
    with Profiler(output_path=tmp_path) as prof:
        assert not tracemalloc.is_tracing()
        prof.step()
    (res,) = prof.analyse()
    assert memory_summary(res.events).peak_mb is None
    assert not (res.run_dir / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv").exists()


def test_memory_command_writes_the_timeline_outside_the_run_only(leak_run, tmp_path, capsys):
    from npuprof.cli import main

    _, res, _ = leak_run
    run = str(res.run_dir)
    before = sorted(p.name for p in res.run_dir.rglob("*"))
    assert main(["memory", "-dir", run, "-o", str(tmp_path / "m.html"), "--top", "3"]) == 0
    assert "Peak allocated" in (tmp_path / "m.html").read_text()
    assert "peak allocated" in capsys.readouterr().out
    for bad in ([run + "/inside.html"], [str(tmp_path / "m.txt")]):
        assert main(["memory", "-dir", run, "-o", *bad]) == 2
    assert main(["memory", "-dir", run, "--device", "gpu"]) == 2
    assert sorted(p.name for p in res.run_dir.rglob("*")) == before
    data_path = tmp_path / "m.json.gz"
    assert main(["memory", "-dir", run, "-o", str(data_path), "--device", "cpu"]) == 0
    assert json.loads(gzip.decompress(data_path.read_bytes()))["peak"]["live"][0]["name"] == _leak_location()
