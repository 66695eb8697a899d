"""Multi-rank collection: rank/world/device from the launcher's variables,
one run directory per rank, profile_rank_ids, rank discovery; and a real
2-rank MindSpore job (two processes, RANK_ID=0/1, gradients all-reduced over a
loopback socket) analysed by ``npuprof cluster``."""
from __future__ import annotations

import csv
import json

import pytest

from npuprof import Profiler, ProfilerConfigError, ProfilerDataError, record_function
from npuprof.cluster import discover_ranks, parse_rank_list, rank_profiler, should_profile
from npuprof.cluster.collect import SkippedRankProfiler
from npuprof.config import env_rank

from cluster_support import ensure_cluster_plugin, make_job, run_ms_ranks

RANK_VARS = ("RANK_ID", "RANK", "LOCAL_RANK", "RANK_SIZE", "WORLD_SIZE", "DEVICE_ID")


@pytest.fixture
def clean_env(monkeypatch):
    for v in RANK_VARS:
        monkeypatch.delenv(v, raising=False)
    return monkeypatch


@pytest.mark.parametrize("env, expected", [
    ({}, (0, 1, 0)),
    ({"RANK_ID": "3", "RANK_SIZE": "8", "DEVICE_ID": "5"}, (3, 8, 5)),          # Ascend launchers
    ({"RANK": "6", "WORLD_SIZE": "16", "LOCAL_RANK": "2"}, (6, 16, 2)),         # torchrun style
    ({"RANK_ID": "1", "RANK": "9", "RANK_SIZE": "2", "WORLD_SIZE": "32"}, (1, 2, 0)),  # RANK_ID/RANK_SIZE win
    ({"LOCAL_RANK": "4"}, (4, 5, 4)),                                           # world at least rank + 1
])
def test_env_rank_reads_the_launcher_variables(clean_env, env, expected):
    for k, v in env.items():
        clean_env.setenv(k, v)
    assert env_rank() == expected


@pytest.mark.parametrize("var, value", [("RANK_ID", "one"), ("RANK_SIZE", "-2"), ("DEVICE_ID", "1.5")])
def test_bad_rank_variables_are_config_errors(clean_env, var, value):
    clean_env.setenv(var, value)
    with pytest.raises(ProfilerConfigError) as e:
        env_rank()
    assert var in str(e.value) and value in str(e.value)


def test_profiler_writes_the_rank_into_its_run_directory(clean_env, tmp_path):
    clean_env.setenv("RANK_ID", "3")
    clean_env.setenv("RANK_SIZE", "8")
    clean_env.setenv("DEVICE_ID", "5")
    with Profiler(output_path=tmp_path) as prof:
        with record_function("work"):
            sum(range(1000))
        prof.step()
    (run,) = prof.saved_runs
    info = json.loads((run / "profiler_info_3.json").read_text())
    assert info["rank_id"] == 3 and info["npuprof"]["world_size"] == 8 and info["npuprof"]["device_id"] == 5
    (res,) = prof.analyse()
    head = (run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text()[:400]
    assert '"rank": 3' in head and '"world_size": 8' in head
    assert discover_ranks(tmp_path) == {3: [run]}


def test_rank_profiler_profiles_only_the_chosen_ranks(clean_env, tmp_path):
    clean_env.setenv("RANK_ID", "3")
    skipped = rank_profiler(profile_rank_ids=[0, 1], output_path=tmp_path / "p")
    assert isinstance(skipped, SkippedRankProfiler)
    with skipped as prof:
        prof.step()
    assert prof.saved_runs == [] and not (tmp_path / "p").exists()
    with rank_profiler(profile_rank_ids="0-3", output_path=tmp_path / "q") as prof:
        prof.step()
    assert isinstance(prof, Profiler) and prof.config.rank == 3 and len(prof.saved_runs) == 1
    assert should_profile("0,2-4", rank=3) and not should_profile([0], rank=3) and should_profile(None, rank=7)


@pytest.mark.parametrize("value", ["0,x", [0, -1], "5-2", 1.5, [True]])
def test_bad_rank_lists_name_the_parameter(clean_env, tmp_path, value):
    with pytest.raises(ProfilerConfigError) as e:
        rank_profiler(profile_rank_ids=value, output_path=tmp_path)
    assert "profile_rank_ids" in str(e.value)


def test_skipped_ranks_still_validate_their_arguments(clean_env, tmp_path):
    clean_env.setenv("RANK_ID", "5")
    with pytest.raises(ProfilerConfigError) as e:
        rank_profiler(profile_rank_ids=[0], output_path=tmp_path, profiler_level="Level9")
    assert "profiler_level" in str(e.value)


def test_discovery_handles_nested_layouts_and_rank_filters(tmp_path):
    make_job(tmp_path / "flat", ranks=4, steps=2, slow_ranks=())
    nested = tmp_path / "nested"
    for r in range(3):
        make_job(nested / f"rank{r}", ranks=1, steps=1, slow_ranks=())
    assert sorted(discover_ranks(tmp_path / "flat")) == [0, 1, 2, 3]
    assert sorted(discover_ranks(tmp_path / "flat", ranks=[1, 3])) == [1, 3]
    assert sorted(discover_ranks(nested)) == [0]       # each nested job is its own rank 0
    with pytest.raises(ProfilerConfigError) as e:
        discover_ranks(tmp_path / "flat", ranks=[7])
    assert "0-3" in str(e.value)
    with pytest.raises(ProfilerDataError):
        discover_ranks(tmp_path / "flat" / "nothing")
    assert parse_rank_list("ranks", "all") is None and parse_rank_list("ranks", "1-3,0") == [0, 1, 2, 3]


# -- a real 2-rank job ------------------------------------------------------------------------------------------
GRAD_BYTES = (64 * 128 + 128 + 128 * 10 + 10) * 4


@pytest.fixture(scope="module")
def real_job(tmp_path_factory):
    out = tmp_path_factory.mktemp("ms2")
    facts = run_ms_ranks(out, steps=6, world=2)
    ensure_cluster_plugin()
    return out, facts


@pytest.mark.slow
def test_real_two_rank_run_has_one_directory_per_rank(real_job):
    out, facts = real_job
    assert [f["rank"] for f in facts] == [0, 1] and all(f["world"] == 2 for f in facts)
    found = discover_ranks(out)
    assert sorted(found) == [0, 1]
    for r, dirs in found.items():
        info = json.loads((dirs[0] / f"profiler_info_{r}.json").read_text())
        assert info["npuprof"]["world_size"] == 2 and info["npuprof"]["device_id"] == r
        assert str(dirs[0]) in facts[r]["saved_runs"]


@pytest.mark.slow
def test_real_two_rank_cluster_analysis(real_job, capsys):
    from npuprof.cli import main

    out, _ = real_job
    code = main(["cluster", str(out), "--timeline", "0,1", "--traces", "--align", "comm", "--quiet"])
    assert code == 0, capsys.readouterr().err
    res_dir = out / "npuprof_cluster"
    with open(res_dir / "cluster_step_trace_time.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted({(int(r["Step"]), int(r["Index"])) for r in rows}) == [(s, r) for s in (2, 3, 4, 5) for r in (0, 1)]
    for r in rows:
        assert float(r["Computing"]) > 0          # real MindSpore CPU ops
        assert float(r["Communication"]) > 0      # the socket all-reduce
        parts = float(r["Computing"]) + float(r["Communication(Not Overlapped)"]) + float(r["Free"])
        assert parts == pytest.approx(float(r["Stage"]), abs=0.01)
    ops = {r["OP Type"]: r for r in csv.DictReader(open(res_dir / "cluster_op_statistic.csv", newline=""))}
    assert int(ops["MatMul"]["Ranks"]) == 2 and float(ops["MatMul"]["Total Time(us)"]) > 0
    steps = json.loads((res_dir / "cluster_communication_matrix.json").read_text())["(0, 1)"]   # msprof-analyze's
    assert sorted(steps) == [f"step{n}" for n in (2, 3, 4, 5)]
    for ops in steps.values():
        matrix = ops["AllReduce@world"]
        assert set(matrix) == {"0-1", "1-0", "0-0", "1-1"} and ops["Total Op Info@world"].keys() == matrix.keys()
        assert matrix["0-1"]["Transport Type"] == "TCP" and matrix["1-1"]["Transport Type"] == "LOCAL"
        assert matrix["0-1"]["Transit Size(MB)"] == pytest.approx(GRAD_BYTES / 1e6, rel=1e-4)   # the tools' MB
    comm = json.loads((res_dir / "cluster_communication.json").read_text())["(0, 1)"]
    assert {rank for ops in comm.values() for op in ops.values() for rank in op} == {"0", "1"}
    slow = json.loads((res_dir / "slow_ranks.json").read_text())
    assert not slow["applicable"] and "3 ranks" in slow["note"]
    al = json.loads((res_dir / "clock_alignment.json").read_text())["ranks"]["1"]
    # one host: the true offset is 0, so the collective-based estimate must lie within its own bound of 0
    assert al["method"] == "collectives" and al["matched_ops"] == 4 and abs(al["offset_ns"]) <= al["error_bound_ns"]
    merged = json.loads((res_dir / "merged_timeline.json").read_text())
    procs = {e["args"]["name"] for e in merged["traceEvents"] if e.get("name") == "process_name"}
    assert any(p.startswith("Rank 0") for p in procs) and any(p.startswith("Rank 1") for p in procs)
    mm = {e["pid"] // 1000 - 1 for e in merged["traceEvents"] if e.get("args", {}).get("Op Type") == "MatMul"}
    assert mm == {0, 1}
    for r in (0, 1):
        head = (res_dir / "traces" / f"rank{r}.pt.trace.json").read_text()[:300]
        assert f'"rank": {r}' in head and '"world_size": 2' in head


def test_all_windows_of_each_rank_are_read(clean_env, tmp_path):
    """A schedule with repeat=2 gives each rank two run directories; cluster reads both."""
    from npuprof import schedule
    from npuprof.cluster import cluster_analyse

    ensure_cluster_plugin()
    for rank in (0, 1, 2):
        with Profiler(output_path=tmp_path, rank=rank, world_size=3,
                      schedule=schedule(wait=1, warmup=0, active=2, repeat=2)) as prof:
            for _ in range(6):
                with record_function("step_body"):
                    sum(range(20_000 * (rank + 1)))
                prof.step()
        assert len(prof.saved_runs) == 2
    found = discover_ranks(tmp_path)
    assert {r: len(d) for r, d in found.items()} == {0: 2, 1: 2, 2: 2}
    res = cluster_analyse(tmp_path, backend="serial", formats=("csv",))
    steps = {(r["Step"], r["Index"]) for r in res.tables["cluster_step_trace_time"].records()}
    assert steps == {(s, r) for s in (1, 2, 4, 5) for r in (0, 1, 2)}
    assert [s.rank for s in res.summaries] == [0, 1, 2] and all(len(s.run_dirs) == 2 for s in res.summaries)
