"""Kineto device activity classified, never guessed (issue 30, item 4): GPU memory copies are memory
activity, not Computing (checked against HTA's own classification, run for real from .venv-interop);
device events of kinds npuprof does not know (an MTIA-like trace) are device time and flagged; host
operators never become Computing; a host-only trace leaves the device columns empty and exits 3."""
from __future__ import annotations

import gzip
import json
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from npuprof.analysis.intervals import union
from npuprof.analysis.pipeline import analyse_run
from npuprof.cli import main
from npuprof.events import MEMORY_ACTIVITY_TYPES, EventKind
from realdata import realdata

HTA = "hta/tests/data"
HOST_PID, DEVICE_PID, UNLABELLED_PID = 4242, 0, 1

HTA_BREAKDOWN = r'''
import json, sys, logging, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
out = {}
for d in sys.argv[1:]:
    tb = TraceAnalysis(trace_dir=d).get_temporal_breakdown(visualize=False)
    out[d] = {int(r): float(c) for r, c in zip(tb["rank"], tb["compute_time(us)"])}
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def hta_compute() -> dict:
    """HTA's compute time (µs, union of its COMPUTATION kernels: not nccl, Memcpy, Memset ...) per folder
    and rank; HTA leaves out the last profiler step."""
    from cluster_support import interop_python

    folders = [realdata(f"{HTA}/trace_filter"), realdata(f"{HTA}/trace_diff/test")]
    proc = subprocess.run([str(interop_python()), "-c", HTA_BREAKDOWN, *map(str, folders)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    return {Path(d).name: {int(r): c for r, c in ranks.items()} for d, ranks in found.items()}


def _computing_but_last(path: Path) -> float:
    computing = analyse_run(path).tables["step_trace_time"].column("Computing")
    return float(sum(computing[:-1]))


@pytest.mark.parametrize("rank", [0, 1])
def test_gpu_memcpy_is_not_computing_as_hta_classifies_it(hta_compute, rank):
    path = realdata(f"{HTA}/trace_filter/sampled_rank-{rank}.json.gz")
    doc = json.loads(gzip.decompress(path.read_bytes()))
    cats = Counter(e.get("cat") for e in doc["traceEvents"] if e.get("ph") == "X")
    assert cats["gpu_memcpy"] and cats["gpu_memset"]
    result = analyse_run(path)
    ev = result.events
    memory = np.isin(ev.column_strings("type"), MEMORY_ACTIVITY_TYPES) & (ev["kind"] == np.uint8(EventKind.KERNEL))
    assert int(memory.sum()) == cats["gpu_memcpy"] + cats["gpu_memset"]
    assert result.quality.complete
    # every step but the last (HTA drops it): the same union of compute kernels, to the µs
    assert _computing_but_last(path) == pytest.approx(hta_compute["trace_filter"][rank], abs=1.0)


def test_a_trace_full_of_copies_computes_no_more_than_hta(hta_compute):
    """trace_diff/test: 4,856 Memcpy and 900 Memset on one GPU. npuprof's steps (but the last) lie inside
    the span HTA measures, so their Computing cannot exceed HTA's compute time; counting the copies as
    compute did (by 18 %)."""
    path = realdata(f"{HTA}/trace_diff/test/test.json.gz")
    (rank, hta), = hta_compute["test"].items()
    ours = _computing_but_last(path)
    assert 0.95 * hta <= ours <= hta


def _x(cat: str, name: str, pid: int, ts: float, dur: float, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": 1, "ts": ts, "dur": dur, "args": args}


def _labels(pid: int, label: str) -> dict:
    return {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": label}}


# (cat, name, pid, ts, dur, args) of the device events of an MTIA-like trace: MTIA's own category (two
# kernels and a DMA copy, HTA's "MTIA memory"), a category npuprof does not know on the labelled device,
# and one on a device only its events' stream names
DEVICE_EVENTS = [
    ("mtia_ccp_events", "fused_mm_relu", DEVICE_PID, 2000.0, 500.0, {"stream": 3}),
    ("mtia_ccp_events", "layer_norm", DEVICE_PID, 3000.0, 400.0, {"stream": 3}),
    ("mtia_ccp_events", "dma_h2d", DEVICE_PID, 3500.0, 1000.0, {"stream": 4}),
    ("mtia_fw_task", "fw_softmax", DEVICE_PID, 5000.0, 300.0, {}),
    ("accel_task", "engine_gemm", UNLABELLED_PID, 6000.0, 250.0, {"stream": 0}),
]


def _trace(tmp_path: Path, with_device: bool) -> Path:
    events = [_labels(HOST_PID, "CPU"),
              _x("user_annotation", "ProfilerStep#7", HOST_PID, 1000.0, 10000.0),
              _x("cpu_op", "aten::mm", HOST_PID, 1100.0, 7900.0),
              _x("cpu_op", "aten::relu", HOST_PID, 9100.0, 800.0),
              _x("mtia_runtime", "mtiaLaunchKernel", HOST_PID, 1200.0, 10.0, correlation=1),
              _x("cpu_mystery", "host side thing", HOST_PID, 1300.0, 5000.0)]
    if with_device:
        events.append(_labels(DEVICE_PID, "MTIA 0"))
        events += [_x(cat, name, pid, ts, dur, **args) for cat, name, pid, ts, dur, args in DEVICE_EVENTS]
    path = tmp_path / ("mtia" if with_device else "host") / "rank-0.pt.trace.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1},
                                "traceEvents": events}))
    return path


def test_device_events_of_a_kind_not_planned_for_are_device_time_and_flagged(tmp_path):
    path = _trace(tmp_path, with_device=True)
    result = analyse_run(path)
    ev = result.events
    kinds = ev["kind"]
    device_rows = kinds == np.uint8(EventKind.KERNEL)
    assert int(device_rows.sum()) == len(DEVICE_EVENTS)
    assert set(ev["pid"][device_rows].tolist()) == {DEVICE_PID, UNLABELLED_PID}
    assert int((kinds == np.uint8(EventKind.OP)).sum()) == 2           # the cpu_ops stay host operators
    # Computing: the union of the device's compute events (the DMA copy is memory), none of the host ops
    compute = [(ts, ts + dur) for cat, name, _, ts, dur, _ in DEVICE_EVENTS if not name.startswith("dma")]
    starts, ends = union(np.array([s for s, _ in compute]), np.array([e for _, e in compute]))
    step = result.tables["step_trace_time"]
    assert list(step.column("Step")) == [7]
    assert float(step.column("Computing")[0]) == pytest.approx(float((ends - starts).sum()))
    problems = [i.problem for i in result.quality.issues]
    assert any(p.startswith(f"device kind unknown: 1 events on pid {DEVICE_PID} (cat mtia_fw_task)")
               for p in problems), problems
    assert any(p.startswith(f"device kind unknown: 1 events on pid {UNLABELLED_PID} (cat accel_task)")
               for p in problems), problems
    assert all("step_trace_time.Computing" in i.affects and not i.not_measured for i in result.quality.issues)
    assert main(["show", "-dir", str(path)]) == 3


def test_a_host_only_trace_has_no_computing_and_exits_3(tmp_path, capsys):
    path = _trace(tmp_path, with_device=False)
    result = analyse_run(path)
    assert not (result.events["kind"] == np.uint8(EventKind.KERNEL)).any()
    step = result.tables["step_trace_time"]
    assert list(step.column("Step")) == [7]
    assert list(step.column("Computing")) == [None] and list(step.column("Free")) == [None]
    assert float(step.column("Stage")[0]) == pytest.approx(10000.0)     # the ProfilerStep range is measured
    assert "step_trace_time.Computing" in result.quality.not_measured
    assert main(["show", "-dir", str(path)]) == 3
    out = capsys.readouterr()
    assert "device time not measured" in out.out + out.err
    out_dir = tmp_path / "out"
    assert main(["analyse", str(path), "-o", str(out_dir), "--quiet"]) == 3
    (csv_path,) = out_dir.rglob("step_trace_time.csv")
    header, row = csv_path.read_text().splitlines()[:2]
    cells = dict(zip(header.split(","), row.split(",")))
    assert cells["Computing"] == "" and cells["Stage"] == "10000.0"
    cluster_dir = tmp_path / "cluster"
    assert main(["cluster", str(path.parent), "-o", str(cluster_dir), "--quiet", "--backend", "serial"]) == 3
    header, row = (cluster_dir / "cluster_step_trace_time.csv").read_text().splitlines()[:2]
    cells = dict(zip(header.split(","), row.split(",")))
    assert cells["Computing"] == "" and cells["Free"] == "" and cells["Stage"] == "10000.0"
    page = tmp_path / "report.html"
    main(["report", str(path.parent), "-o", str(page)])      # draws what was measured, says N/A for the rest
    assert "N/A" in page.read_text()


def test_the_real_host_only_trace_is_flagged_not_measured():
    path = realdata(f"{HTA}/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    result = analyse_run(path)
    assert [c is None for c in result.tables["step_trace_time"].column("Computing")] == [True]
    assert main(["show", "-dir", str(path)]) == 3
