"""The cluster bench's 64-rank job generator (benchmarks/bench_cluster.py) and its README rows: copies of
the real ranks get new rank ids everywhere the tools read one, shifted clocks, and both tools accept them
with the same tables as the originals'."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

import bench_cluster
import report
from cluster_real import JOB, STEP_US
from realdata import realdata


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> tuple[Path, Path, dict]:
    src = realdata(JOB)
    dest = tmp_path_factory.mktemp("gen") / "job"
    return src, dest, bench_cluster.make_job(src, dest, copies=2, seed=1)


def _start_times(run: Path) -> list[str]:
    with open(run / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="", encoding="utf-8-sig") as fh:
        return [row["Start Time(us)"].strip() for row in csv.DictReader(fh)]


def test_copies_are_new_ranks_with_shifted_clocks(job):
    src, dest, gen = job
    assert gen["ranks"] == 4 and sorted(p.name for p in dest.iterdir()) == [f"rank{n}_ascend_pt" for n in range(4)]
    for n in range(4):
        run, r = dest / f"rank{n}_ascend_pt", n % 2
        assert json.loads((run / f"profiler_info_{n}.json").read_text())["rank_id"] == n
        matrix = json.loads((run / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json").read_text())
        links = {link for kinds in matrix.values() for ops in kinds.values() for op in ops.values() for link in op}
        assert {int(link.split("-")[0]) for link in links} == {n}
        assert {int(link.split("-")[1]) for link in links} == set(range(8))     # n's block of 8
        trace = (run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text()
        assert set(re.findall(r'"src rank": (\d+)', trace)) == {str(n)}
        assert set(map(int, re.findall(r'"dst rank": (\d+)', trace))) - {bench_cluster.INVALID_RANK} == set(range(8))
        shift = gen["shift_us"][n]
        theirs, ours = _start_times(src / f"rank{r}_ascend_pt"), _start_times(run)
        assert len(theirs) == len(ours) and theirs
        for t, o in zip(theirs, ours):   # whole µs added, the ns digits kept as written
            assert o.split(".")[1] == t.split(".")[1] and int(o.split(".")[0]) - int(t.split(".")[0]) == shift
    assert len(set(gen["shift_us"].values())) > 1


def test_npuprof_gives_each_copy_its_originals_step_times(job, tmp_path):
    from npuprof.cli import main

    src, dest, _ = job
    assert main(["cluster", str(dest), "-o", str(tmp_path / "out"), "--quiet"]) == 0
    with open(tmp_path / "out" / "cluster_step_trace_time.csv", newline="", encoding="utf-8-sig") as fh:
        rows = {int(r["Index"]): r for r in csv.DictReader(fh) if r["Type"] == "rank"}
    assert sorted(rows) == [0, 1, 2, 3]
    for n in (2, 3):
        for col, value in rows[n].items():
            if col not in ("Step", "Type", "Index"):
                assert abs(float(value) - float(rows[n - 2][col])) <= STEP_US, (n, col)


@pytest.mark.slow
def test_msprof_analyze_accepts_the_copies_with_equal_tables(job, tmp_path):
    if not bench_cluster.MSPROF.exists():
        pytest.skip("no .venv-interop (make interop)")
    _, dest, _ = job
    tools = bench_cluster.Tools(dest, tmp_path / "tools", msprof=True)
    tools.npuprof()
    tools.msprof_analyze()
    equal = bench_cluster.compare(tools.outputs())
    assert {k: v for k, v in equal.items() if not k.endswith("_note")} == dict.fromkeys(
        ("cluster_step_trace_time", "cluster_communication", "cluster_communication_matrix"), "equal")


def _side(seconds: float) -> dict:
    s = {"median": seconds, "min": seconds, "max": seconds}
    return {"seconds": s, "tree_pss_bytes": {"max": 2**27}, "processes": 2}


def test_rows_say_equal_and_met_only_when_checked():
    base = {"ranks": 2, "bytes": 2**20, "npuprof": _side(1.0)}
    missing = report.cluster_rows({"msprof_missing": "msprof-analyze not found", "real": base})
    assert missing[0]["met"] is None and missing[0]["baseline"] == "msprof-analyze not found"
    assert "equal tables" not in missing[0]["benchmark"]
    ratio = {"median": 4.0, "min": 4.0, "max": 4.0}
    same = dict(base, msprof=_side(4.0), speedup=ratio, equal={"cluster_step_trace_time": "equal"})
    assert report.cluster_rows({"real": same})[0]["met"] is True
    differ = dict(same, equal={"cluster_step_trace_time": "differ: AssertionError"})
    (row,) = report.cluster_rows({"real": differ})
    assert row["met"] is False and "equal tables: NO" in row["benchmark"]


def test_bound_says_what_npuprof_read():
    side = dict(_side(2.0), cpu_seconds={"median": 1.5})
    real = {"ranks": 2, "bytes": 2**20, "precomputed_bytes": 4096, "npuprof": side,
            "msprof": dict(_side(4.0), cpu_seconds={"median": 3.0}), "speedup": {"median": 2.0}}
    (parsed,) = [b for b in report.bounds({"cluster": {"real": real}}) if b.startswith("cluster")]
    assert "parsed every rank's events" in parsed
    (fast,) = [b for b in report.bounds({"cluster": {"real": dict(real, npuprof_tool_table_ranks=2)}})
               if b.startswith("cluster")]
    assert "own tables of 2 of 2 ranks" in fast and "every rank's events" not in fast
