"""npuprof cluster on 64 generated ranks: the process pool and a local Dask
cluster give identical tables; slow ranks, clock skews and the communication
matrix are recovered from the data; Parquet is queryable by DuckDB."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from cluster_support import ensure_cluster_plugin, make_job

RANKS = 64


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    ensure_cluster_plugin()
    return make_job(tmp_path_factory.mktemp("job64"), ranks=RANKS, steps=5, slow_ranks=(13, 42))


@pytest.fixture(scope="module")
def results(job):
    from npuprof.cluster import cluster_analyse

    proc = cluster_analyse(job.root, output=job.root / "out_process", backend="process", workers=2,
                           timeline_ranks="0,8,13", use_gzip=True)
    dask = cluster_analyse(job.root, output=job.root / "out_dask", backend="dask", workers=2,
                           timeline_ranks="0,8,13", use_gzip=True)
    return proc, dask


def _read(path: Path) -> list:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


@pytest.mark.slow
def test_process_pool_and_local_dask_give_identical_tables(results):
    import pyarrow.parquet as pq

    proc, dask = results
    assert proc.backend.startswith("process pool") and dask.backend.startswith("local dask cluster")
    names = sorted(proc.tables)
    assert names == sorted(dask.tables)
    for name in names:
        a = (proc.output_dir / f"{name}.csv").read_bytes()
        b = (dask.output_dir / f"{name}.csv").read_bytes()
        assert a == b, name
        assert pq.read_table(proc.output_dir / f"{name}.parquet").equals(
            pq.read_table(dask.output_dir / f"{name}.parquet")), name
    for name in ("slow_ranks.json", "clock_alignment.json", "cluster_communication_matrix.json"):
        assert (proc.output_dir / name).read_bytes() == (dask.output_dir / name).read_bytes(), name
    steps = _read(proc.output_dir / "cluster_step_trace_time.csv")
    assert steps[0][:5] == ["Step", "Type", "Index", "Computing", "Communication(Not Overlapped)"]
    assert len(steps) - 1 == RANKS * 5


@pytest.mark.slow
def test_breakdown_matches_the_generated_ground_truth(job, results):
    proc, _ = results
    rows = proc.tables["cluster_step_trace_time"].records()
    for rec in rows:
        # Computing = the rank's kernels of that step, exactly as generated
        assert rec["Computing"] == pytest.approx(job.compute_ns[(rec["Index"], rec["Step"])] / 1e3, abs=0.002)
        total = rec["Computing"] + rec["Communication(Not Overlapped)"] + rec["Free"]
        assert total == pytest.approx(rec["Stage"], abs=0.01)
        assert rec["Communication"] >= 400.0        # every rank spends at least the transfer in AllReduce
    by_step: dict = {}
    for rec in rows:
        by_step.setdefault(rec["Step"], set()).add(rec["Stage"])
    assert all(len(v) == 1 for v in by_step.values())  # synchronous: one step time for all ranks


@pytest.mark.slow
def test_slow_ranks_found_by_the_stated_rule(job, results):
    proc, _ = results
    slow = json.loads((proc.output_dir / "slow_ranks.json").read_text())
    assert slow["applicable"] and slow["slow_ranks"] == [13, 42]
    assert "MAD" in slow["rule"]
    per = {r["rank"]: r for r in slow["ranks"]}
    assert per[13]["outlier_steps"] == job.steps and per[13]["median_excess_pct"] > 20
    assert per[0]["outlier_steps"] == []
    summary = {r["Rank"]: r for r in proc.tables["cluster_rank_summary"].records()}
    assert summary[42]["Slow"] is True and summary[41]["Slow"] is False


@pytest.mark.slow
def test_clock_skews_are_recovered_within_the_stated_bound(job, results):
    proc, _ = results
    al = proc.alignment["ranks"]
    assert proc.alignment["mode"] == "auto"       # 8 hostnames -> alignment on collectives
    for r in range(RANKS):
        true_correction = -(job.skew_ns[r] - job.skew_ns[0])
        got = al[r]
        assert got["method"] in ("reference", "collectives")
        assert abs(got["offset_ns"] - true_correction) <= got["error_bound_ns"]
        assert abs(got["offset_ns"] - true_correction) <= 1_000      # collectives end together here
    assert any(job.skew_ns[r] != 0 for r in range(RANKS))


@pytest.mark.slow
def test_merged_timeline_is_aligned(job, results):
    import gzip

    proc, _ = results
    data = json.loads(gzip.decompress(proc.merged_timeline.read_bytes()))
    assert data["npuprofMergedRanks"] == [0, 8, 13]
    names = {e["args"]["name"] for e in data["traceEvents"] if e.get("ph") == "M" and e["name"] == "process_name"}
    assert {"Rank 0 (pid 1000)", "Rank 8 (pid 1008)", "Rank 13 (pid 1013)", "Rank 8 NPU 0"} <= names
    ends: dict = {}
    for e in data["traceEvents"]:
        if e.get("name") == "hcom_allReduce_3":
            ends[e["pid"] // 1000 - 1] = e["ts"] + e["dur"]
    assert sorted(ends) == [0, 8, 13]
    # after alignment the same collective ends at the same instant on every rank (skews were ms)
    assert max(ends.values()) - min(ends.values()) < 1.0  # µs


@pytest.mark.slow
def test_communication_matrix_and_duckdb_query(job, results):
    import duckdb

    proc, _ = results
    matrix = json.loads((proc.output_dir / "cluster_communication_matrix.json").read_text())
    (steps,) = matrix.values()                         # one group: every rank
    assert len(steps) == 5
    for ops in steps.values():
        links = ops["AllReduce@world"]
        assert links["7-8"]["Transport Type"] == "RDMA" and links["0-1"]["Transport Type"] == "HCCS"
        assert links["0-1"]["Transit Size(MB)"] == pytest.approx((32 << 20) / 1e6)   # MB of 10^6 bytes, as the tools
        assert links["5-5"]["Transport Type"] == "LOCAL"
    con = duckdb.connect()
    out = proc.output_dir
    rows = con.execute(
        f"""SELECT "Index" AS rank, avg("Computing") AS comp FROM '{out}/cluster_step_trace_time.parquet'
            GROUP BY 1 ORDER BY comp DESC LIMIT 2""").fetchall()
    assert [r[0] for r in rows] == [13, 42] or [r[0] for r in rows] == [42, 13]
    n_rdma = con.execute(f"""SELECT count(DISTINCT ("Src Rank", "Dst Rank"))
                             FROM '{out}/cluster_communication_matrix.parquet' WHERE "Transport Type" = 'RDMA'""")
    assert n_rdma.fetchone()[0] == RANKS // 8         # one ring link crosses each host boundary
    slow = con.execute(f"""SELECT list("Rank") FROM '{out}/cluster_rank_summary.parquet' WHERE "Slow" """).fetchone()
    assert sorted(slow[0]) == [13, 42]


@pytest.mark.slow
def test_per_rank_msprof_communication_files_written(job, results):
    from npuprof.export.writer import analyse_and_export

    run = next(job.root.glob("node1-rank9_*"))
    assert not (run / "ASCEND_PROFILER_OUTPUT" / "communication.json").exists()   # cluster analysis only reads
    analyse_and_export(run)                                                       # npuprof analyse writes them
    comm = json.loads((run / "ASCEND_PROFILER_OUTPUT" / "communication.json").read_text())
    op = comm["step2"]["collective"]["hcom_allReduce_2@world"]
    info = op["Communication Time Info"]
    assert info["Elapse Time(ms)"] >= info["Transit Time(ms)"] > 0
    assert set(op["Communication Bandwidth Info"]) == {"HCCS", "LOCAL"}
    matrix = json.loads((run / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json").read_text())
    assert set(matrix["step2"]["collective"]["AllReduce@world"]) == {"9-10", "9-9"}


@pytest.mark.slow
def test_existing_dask_cluster_by_scheduler_address(tmp_path, capsys):
    """An already running Dask cluster, given by its address, gives the same tables."""
    from distributed import LocalCluster

    from npuprof.cli import main

    ensure_cluster_plugin()
    job = make_job(tmp_path / "job", ranks=12, steps=3, slow_ranks=(4,))
    assert main(["cluster", str(job.root), "-o", str(tmp_path / "proc"), "--quiet"]) == 0
    assert "12 ranks analysed on process pool" in capsys.readouterr().out
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert main(["cluster", str(job.root), "-o", str(tmp_path / "remote"), "--scheduler",
                     cluster.scheduler_address, "--json", "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["backend"] == f"dask scheduler {cluster.scheduler_address}" and summary["slow_ranks"] == [4]
    for name in ("cluster_step_trace_time.csv", "cluster_rank_summary.csv", "cluster_communication_matrix.csv"):
        assert (tmp_path / "proc" / name).read_bytes() == (tmp_path / "remote" / name).read_bytes()
