"""The real 2-rank torch_npu job (Ascend910B, text export, ../shared/realdata) that ``npuprof cluster`` is
compared on against msprof-analyze ``cluster``, and the comparison of the two outputs: the interop test
(tests/interop/test_interop_cluster_real.py), the fast path's test (tests/cluster/test_cluster_tooltables.py)
and the cluster benchmark (benchmarks/bench_cluster.py) share them.

Example::

    check_step_trace_time_equal((msprof_analyze_out, npuprof_out))   # AssertionError naming the column
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from realdata import Bounds, compare_json

JOB = "msinsight/test/data/pytorch/text/level1"
# The tool's times are float64 epoch µs (0.25 µs apart) and sums of sub-ns durations; npuprof's are exact ns
# from the text's whole ns: step trace columns within 0.25 µs per step boundary they are made of (Stage and
# Preparing subtract two), the communication numbers as the per-rank conformance test bounds them.
STEP_US = 0.6
COMM = Bounds(ms=1e-5, ratio=1e-4 + 1e-9, start_us=0.5, bandwidth_rel=1e-3)


def _csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(csv.DictReader(fh))


def check_step_trace_time_equal(outputs: tuple[Path, Path]) -> None:
    """cluster_step_trace_time.csv of (msprof-analyze's output, npuprof's): the same rows, every column within
    STEP_US."""
    theirs, ours = (_csv(d / "cluster_step_trace_time.csv") for d in outputs)
    key = lambda r: (int(r["Step"]), r["Type"], int(r["Index"]))   # noqa: E731
    assert sorted(map(key, ours)) == sorted(map(key, theirs)) and theirs
    mine = {key(r): r for r in ours}
    worst: dict[str, float] = {}
    for t in theirs:
        o = mine[key(t)]
        for col in t:
            if col in ("Step", "Type", "Index"):
                continue
            worst[col] = max(worst.get(col, 0.0), abs(float(t[col]) - float(o[col])))
    print("largest difference per column (µs):", worst)
    assert all(d <= STEP_US for d in worst.values()), worst


def check_communication_files_equal(outputs: tuple[Path, Path], name: str) -> None:
    """cluster_communication(_matrix).json of (msprof-analyze's output, npuprof's): the same rank sets and
    operators, every number within COMM."""
    theirs, ours = (json.loads((d / name).read_text()) for d in outputs)
    assert theirs and set(ours) == set(theirs)          # the same rank sets ("(0, 1)")
    problems = compare_json(theirs, ours, COMM, name)
    assert not problems, "\n".join(problems[:20])
    # nothing npuprof adds on top at the operator level: the same operators in every step
    for ranks, steps in theirs.items():
        for step, ops in steps.items():
            assert set(ours[ranks][step]) == set(ops), (ranks, step)
