"""Real PyTorch Kineto traces (HTA's test data, NVIDIA GPUs; ../shared/realdata/hta) read by every verb:
events counted against the JSON, ProfilerStep#N as steps, ranks from distributedInfo, collective kernels
as communication, a folder of rank files as one job; the files are never written."""
from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from npuprof.analysis.pipeline import load_events
from npuprof.cli import main
from npuprof.events import EventKind
from npuprof.readers.kineto import COLLECTIVE_KERNEL_RE, read_kineto, trace_distributed
from realdata import realdata, tree_digest

HTA = "hta/tests/data"
FILES = ["cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "trace_filter/sampled_rank-0.json.gz",
         "trace_filter/sampled_rank-1.json.gz", "trace_diff/control/control.json.gz", "trace_diff/test/test.json.gz"]


def _doc(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


@pytest.mark.parametrize("rel", FILES)
def test_every_complete_event_is_read_as_its_kind(rel):
    path = realdata(f"{HTA}/{rel}")
    doc = _doc(path)
    cats = Counter(e.get("cat") for e in doc["traceEvents"] if e.get("ph") == "X")
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    collective = sum(1 for e in kernels if COLLECTIVE_KERNEL_RE.search(e["name"]))
    read = read_kineto(path, warn=lambda msg: None)
    kinds = Counter(EventKind(k).name for k in read.events["kind"].tolist())
    steps = {e["name"] for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")}
    assert kinds["KERNEL"] == len(kernels) - collective + cats["gpu_memcpy"] + cats["gpu_memset"]
    assert kinds["COMM"] == collective
    assert kinds["OP"] == cats["cpu_op"]
    assert kinds["API"] == cats["cuda_runtime"] + cats["cuda_driver"]
    assert kinds["STEP"] == len(steps) > 0
    assert kinds["STEP"] + kinds["RANGE"] == cats["user_annotation"] + cats["gpu_user_annotation"]
    assert read.rank == doc["distributedInfo"]["rank"] == trace_distributed(path)[0]


def test_times_are_absolute_with_the_files_base():
    path = realdata(f"{HTA}/{FILES[0]}")
    doc = _doc(path)
    first = min(e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace")
    read = read_kineto(path, warn=lambda msg: None)
    assert int(read.events["ts"].min()) == doc["baseTimeNanoseconds"] + round(first * 1000)


def test_every_verb_reads_a_trace_and_writes_nothing_into_its_folder(tmp_path):
    folder = realdata(f"{HTA}/trace_filter")
    before = tree_digest(folder)
    trace = folder / "sampled_rank-0.json.gz"
    events, info, warnings = load_events(trace)
    assert len(events) and not warnings
    for argv in (["show", "-dir", str(trace)], ["analyse", str(trace), "-o", str(tmp_path / "a"), "--quiet"],
                 ["export", "summary", "-dir", str(trace), "-o", str(tmp_path / "s")],
                 ["cluster", str(folder), "-o", str(tmp_path / "c"), "--quiet", "--backend", "serial"]):
        assert main(argv) == 0, argv
    steps = (tmp_path / "c" / "cluster_step_trace_time.csv").read_text().splitlines()[1:]
    assert {(r.split(",")[0], r.split(",")[2]) for r in steps} == {(s, r) for s in ("551", "552") for r in ("0", "1")}
    assert tree_digest(folder) == before
