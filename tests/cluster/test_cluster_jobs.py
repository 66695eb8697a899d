"""Jobs, not folders: runs under one directory are grouped by the data's own job identity, and two jobs
are never merged into one set of ranks (issue: the real Level0/1/2 folders became two ranks; the demo's
host, MindSpore and TensorFlow runs became one "rank 0" with 24 steps)."""
from __future__ import annotations

import pytest

from npuprof import Profiler, ProfilerConfigError, schedule
from npuprof.cli import main
from npuprof.cluster.jobs import choose_job, group_jobs
from npuprof.cluster.ranks import run_dirs_under
from realdata import realdata, tree_digest
from cluster_support import make_job

TORCH_NPU = "msinsight/test/data/pytorch"


def test_the_real_text_and_db_jobs_are_two_jobs(capsys, tmp_path):
    root = realdata(TORCH_NPU)
    before = tree_digest(root)
    jobs = {j.name: j.ranks for j in group_jobs(root, run_dirs_under(root))}
    assert jobs["text/level1"] == (0, 1) and jobs["db/level1"] == (0, 1)
    assert main(["cluster", str(root), "-o", str(tmp_path / "all"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "invalid job=None" in err and "'text/level1' (ranks 0,1: 2 runs)" in err and "--job" in err
    assert main(["cluster", str(root), "--job", "text/level1", "-o", str(tmp_path / "one"), "--quiet"]) == 0
    assert "of job 'text/level1'" in capsys.readouterr().out
    assert main(["report", str(root), "--job", "nosuch", "-o", str(tmp_path / "r.html"), "--quiet"]) == 2
    assert "invalid job='nosuch'" in capsys.readouterr().err
    assert tree_digest(root) == before


def _window(out, framework: str, steps: int = 2):
    with Profiler(out, schedule=schedule(wait=0, active=steps, repeat=1), framework=framework) as prof:
        for _ in range(steps):
            sum(range(1000))
            prof.step()
    return prof.saved_runs


def test_unrelated_runs_of_one_process_are_separate_jobs_and_one_profilers_windows_one(tmp_path):
    host = _window(tmp_path / "demo" / "host", "ms")
    other = _window(tmp_path / "demo" / "tf", "tf")
    with Profiler(tmp_path / "demo" / "two", schedule=schedule(wait=0, active=1, repeat=2)) as prof:
        for _ in range(3):
            prof.step()
    windows = prof.saved_runs
    assert len(windows) == 2
    jobs = group_jobs(tmp_path / "demo", run_dirs_under(tmp_path / "demo"))
    assert sorted(len(j.runs) for j in jobs) == [1, 1, 2]
    assert {frozenset(j.runs) for j in jobs} == {frozenset(host), frozenset(other), frozenset(windows)}
    with pytest.raises(ProfilerConfigError, match="3 jobs"):
        choose_job(tmp_path / "demo", run_dirs_under(tmp_path / "demo"))
    assert set(choose_job(tmp_path / "demo", run_dirs_under(tmp_path / "demo"), "two").runs) == set(windows)


def test_the_ranks_of_one_job_stay_one_job(tmp_path):
    make_job(tmp_path / "job", ranks=8, steps=2, slow_ranks=(), per_host=4, host_skew_ns=[0, 3_000_000])
    (job,) = group_jobs(tmp_path / "job", run_dirs_under(tmp_path / "job"))
    assert job.ranks == tuple(range(8))


def test_a_cluster_output_inside_the_job_is_not_a_job(tmp_path):
    """The per-rank traces npuprof cluster --traces writes are results, not ranks to analyse again."""
    make_job(tmp_path / "job", ranks=4, steps=2, slow_ranks=(), per_host=4)
    assert main(["cluster", str(tmp_path / "job"), "--traces", "--quiet", "--backend", "serial"]) == 0
    assert any((tmp_path / "job" / "npuprof_cluster" / "traces").glob("*.pt.trace.json"))
    (job,) = group_jobs(tmp_path / "job", run_dirs_under(tmp_path / "job"))
    assert job.ranks == (0, 1, 2, 3) and len(job.runs) == 4
    assert main(["cluster", str(tmp_path / "job"), "--quiet", "--backend", "serial"]) == 0


def test_runs_no_job_takes_are_reported_from_the_one_scan(tmp_path):
    """A run whose profiler_info cannot be read is named, with why, by the same reading of each run's facts
    that groups the jobs; the job is analysed without it and the result says it is partial."""
    from npuprof.cluster import cluster_analyse
    from npuprof.cluster.jobs import scan_jobs

    root = tmp_path / "job"
    make_job(root, ranks=4, steps=2, slow_ranks=(), per_host=4)
    broken = root / "node9-rank9_1_20240101000000000_ascend_ms"
    broken.mkdir()
    (broken / "profiler_info_9.json").write_text("{not json")
    scan = scan_jobs(root, run_dirs_under(root))
    assert [j.ranks for j in scan.jobs] == [(0, 1, 2, 3)]
    assert [(p, why.split(" (")[0]) for p, why in scan.unplaced] == [(broken, "its profiler_info cannot be read")]
    res = cluster_analyse(root, output=tmp_path / "out", backend="serial")
    assert [s.rank for s in res.summaries] == [0, 1, 2, 3]
    assert any(i.subject == str(broken) and i.problem.startswith("not analysed: its profiler_info cannot be read")
               for i in res.quality.issues), res.quality.issues
    assert res.quality.exit_code == 3
