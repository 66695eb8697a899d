"""msprof-analyze's ``cluster -m`` recipes on npuprof's Ascend profiler database, run for real in .venv-interop.

The job: two real MindSpore ranks on CPU (host operators, user ranges, a gloo AllReduce per step), copied
with ``npuprof export db`` (``*_ascend_ms`` copies holding ``ascend_mindspore_profiler_{rank}.db`` and
``communication_analyzer.db``). Every recipe runs on its own copy (msprof-analyze writes into its input),
and its output is checked against npuprof's own tables of the same run (communication.json, the events).
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cluster_support import interop_python, run_ms_ranks

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tools() -> Path:
    return interop_python().parent


@pytest.fixture(scope="module")
def db_job(tmp_path_factory) -> Path:
    from npuprof.cli import main

    root = tmp_path_factory.mktemp("dbjob")
    run_ms_ranks(root / "job", steps=6, world=2)
    assert main(["export", "db", "-dir", str(root / "job"), "-o", str(root / "copy")]) == 0
    return root / "copy"


def _recipe(tools: Path, job: Path, recipe: str, tmp_path: Path) -> tuple[Path, str]:
    work = tmp_path / recipe
    shutil.copytree(job, work)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run([str(tools / "msprof-analyze"), "cluster", "-d", str(work), "-m", recipe],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert "2 ranks, data type: db, profiling type: mindspore" in log
    return work / "cluster_analysis_output" / "cluster_analysis.db", log


def _rows(db: Path, table: str) -> list[dict]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(f"SELECT * FROM {table}")]
    finally:
        con.close()


def _rank_runs(job: Path) -> dict[int, Path]:
    return {int(p.parent.name.removeprefix("rank")): p for p in job.glob("rank*/*_ascend_ms")}


def _communication(job: Path) -> dict[int, dict]:
    """npuprof's own per-rank communication.json: {rank: {(step, op name): time info}}."""
    out = {}
    for rank, run in _rank_runs(job).items():
        doc = json.loads((run / "ASCEND_PROFILER_OUTPUT" / "communication.json").read_text())
        out[rank] = {(step, key.rpartition("@")[0]): op["Communication Time Info"]
                     for step, kinds in doc.items() for ops in kinds.values() for key, op in ops.items()
                     if key != "Total Op Info"}
    return out


def test_the_copies_hold_the_ascend_databases(db_job):
    for rank, run in _rank_runs(db_job).items():
        out = run / "ASCEND_PROFILER_OUTPUT"
        con = sqlite3.connect(out / f"ascend_mindspore_profiler_{rank}.db")
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"STRING_IDS", "META_DATA", "STEP_TIME", "PYTORCH_API", "COMMUNICATION_OP",
                "RANK_DEVICE_MAP"} <= tables
        assert "COMPUTE_TASK_INFO" not in tables          # CPU: no device kernels, none invented
        assert con.execute("SELECT rankId FROM RANK_DEVICE_MAP").fetchall() == [(rank,)]
        assert (out / "communication_analyzer.db").is_file()


def test_hccl_sum_counts_npuprof_communication_operators(tools, db_job, tmp_path):
    db, _ = _recipe(tools, db_job, "hccl_sum", tmp_path)
    ours = _communication(db_job)
    per_rank = {r["Rank"]: r for r in _rows(db, "HcclPerRankStats")}
    assert sorted(per_rank) == sorted(ours)
    for rank, ops in ours.items():
        assert per_rank[rank]["OpType"] == "AllReduce"
        assert per_rank[rank]["Count"] == len(ops)
        total_ns = sum(t["Elapse Time(ms)"] for t in ops.values()) * 1e6
        assert per_rank[rank]["SumNs"] == pytest.approx(total_ns, abs=len(ops))   # ms rounded to 6 places


def test_communication_time_sum_equals_npuprof_communication_json(tools, db_job, tmp_path):
    db, _ = _recipe(tools, db_job, "communication_time_sum", tmp_path)
    ours = _communication(db_job)
    rows = _rows(db, "ClusterCommunicationTime")
    theirs = {(r["rank_id"], r["step"], r["hccl_op_name"]): r for r in rows}
    expected = {(rank, step, name) for rank, ops in ours.items() for step, name in ops}
    assert expected <= set(theirs)
    for (rank, step, name) in expected:
        mine, their = ours[rank][(step, name)], theirs[(rank, step, name)]
        assert their["elapsed_time"] == pytest.approx(mine["Elapse Time(ms)"], abs=1e-6)
        assert their["transit_time"] == pytest.approx(mine["Transit Time(ms)"], abs=1e-6)
        assert their["wait_time"] == pytest.approx(mine["Wait Time(ms)"], abs=1e-6)
    groups = _rows(db, "CommunicationGroupMapping")
    assert [(g["type"], g["rank_set"]) for g in groups] == [("collective", "(0,1)")]


def test_communication_group_map_finds_the_world_group(tools, db_job, tmp_path):
    db, _ = _recipe(tools, db_job, "communication_group_map", tmp_path)
    from npuprof.readers.ascend_db import group_id

    groups = _rows(db, "CommunicationGroupMapping")
    assert [(g["type"], g["rank_set"], g["group_name"]) for g in groups] == [("collective", "(0,1)",
                                                                               group_id("world"))]


def test_communication_matrix_sum_links_equal_npuprof_matrix(tools, db_job, tmp_path):
    db, _ = _recipe(tools, db_job, "communication_matrix_sum", tmp_path)
    rows = _rows(db, "ClusterCommunicationMatrix")
    links = {(int(r["src_rank"]), int(r["dst_rank"])) for r in rows}
    assert {(0, 1), (1, 0)} <= links
    ours = {}
    for rank, run in _rank_runs(db_job).items():
        doc = json.loads((run / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json").read_text())
        for ops in (k for kinds in doc.values() for k in kinds.values()):
            for link, v in (kv for op in ops.values() for kv in op.items()):
                if link == f"{rank}-{1 - rank}":
                    ours.setdefault(link, set()).add(round(v["Transit Size(MB)"], 6))
    remote = [r for r in rows if r["src_rank"] != r["dst_rank"] and "total" not in r["hccl_op_name"].lower()]
    assert remote and all(r["transport_type"] == "TCP" for r in remote)
    assert {round(r["transit_size"], 6) for r in remote} <= set().union(*ours.values())


def test_slow_rank_runs_on_the_communication_operators(tools, db_job, tmp_path):
    _, log = _recipe(tools, db_job, "slow_rank", tmp_path)
    # both ranks' operators were read (a missing table would log an sql error), and two equal ranks are not slow
    assert "read failed" not in log and "No slow rank found" in log


def test_cann_api_sum_lists_each_host_collective_call(tools, db_job, tmp_path):
    """On CPU the CANN_API rows are the host-run collectives' HCCL-level calls: one per communication
    operator, with its duration (AscendCL/runtime calls need a device)."""
    db, _ = _recipe(tools, db_job, "cann_api_sum", tmp_path)
    ours = _communication(db_job)
    rows = _rows(db, "CannApiSumRank")
    for rank, ops in ours.items():
        theirs = {r["name"]: r for r in rows if r["rank"] == rank}
        assert sorted(theirs) == sorted(name for _, name in ops)
        for (_, name), info in ops.items():
            assert theirs[name]["totalCount"] == 1
            assert theirs[name]["totalTimeNs"] == pytest.approx(info["Elapse Time(ms)"] * 1e6, abs=1)
    summed = {r["name"]: r["totalCount"] for r in _rows(db, "CannApiSum")}
    assert summed == {name: len(ours) for _, name in next(iter(ours.values()))}


def test_a_tensorflow_run_as_a_database(tools, tmp_path):
    """A real TF 2.21 run with profile_memory, exported as the database: msprof-analyze reads it as a 1-rank db
    job, its steps are npuprof's steps, its operators the host operators, and OP_MEMORY holds every allocation of
    operator_memory.csv (size in bytes, the same allocation times)."""
    import csv
    import sys

    from npuprof.cli import main
    from test_interop_tools import TF_MEMORY_WORKLOAD

    script = tmp_path / "train_tf_memory.py"
    script.write_text(TF_MEMORY_WORKLOAD)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "prof"), "128"], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert main(["export", "db", "-dir", str(tmp_path / "prof"), "-o", str(tmp_path / "copy")]) == 0
    (copy,) = (tmp_path / "copy").glob("*_ascend_ms")
    out = copy / "ASCEND_PROFILER_OUTPUT"           # npuprof's tables of the run, beside the database
    (db,) = out.glob("ascend_mindspore_profiler_*.db")
    with open(out / "step_trace_time.csv", newline="") as fh:
        steps = [int(r["Step"]) for r in csv.DictReader(fh)]
    assert [r["id"] for r in _rows(db, "STEP_TIME")] == steps and steps[:4] == [0, 1, 2, 3]
    with open(out / "operator_memory.csv", newline="") as fh:
        allocations = list(csv.DictReader(fh))
    memory = _rows(db, "OP_MEMORY")
    assert len(memory) == len(allocations) > 20
    assert sorted(int(r["size"]) for r in memory) == sorted(round(float(a["Size(KB)"]) * 1024) for a in allocations)
    with open(out / "op_statistic.csv", newline="") as fh:
        host_ops = sum(int(r["Count"]) for r in csv.DictReader(fh))
    assert len(_rows(db, "PYTORCH_API")) >= host_ops > 0
    work = tmp_path / "recipe"
    shutil.copytree(tmp_path / "copy", work)
    proc = subprocess.run([str(tools / "msprof-analyze"), "cluster", "-d", str(work), "-m", "slow_rank"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "1 ranks, data type: db, profiling type: mindspore" in log, log[-3000:]
