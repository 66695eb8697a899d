"""benchmarks/bench_many_cores.py end to end at the smallest sizes: every part measures or says why not."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from realdata import REALDATA

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_many_cores.py"


@pytest.mark.slow
def test_many_cores_bench_runs_each_part_at_its_smallest(tmp_path):
    if not (REALDATA / "msinsight").is_dir():
        pytest.skip("the real Level1 job is not under ../shared/realdata")
    done = subprocess.run([sys.executable, str(BENCH), str(tmp_path), "1", "1", "20000"],
                          capture_output=True, text=True, timeout=600, cwd=BENCH.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "many_cores.json").read_text())
    try:
        import torch
        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if not has_cuda:
        assert "skipped" in result["live_kineto"]
    cluster = result["cluster"]
    assert cluster["ranks"] == 2, cluster
    for variant in ("process_1", "process_4", "process_8", "process_15", "dask_15", "default"):
        assert cluster[variant]["seconds"]["n"] == 1 and cluster[variant]["seconds"]["median"] > 0, variant
        assert cluster[variant]["cpu_seconds"]["median"] > 0, variant
    one = result["one_run"]
    assert one["events"] == 20000
    cores = one["cores"]
    assert one["two_cores"]["seconds"]["median"] > 0 and one[f"all_{cores}_cores"]["seconds"]["median"] > 0


def test_a_part_that_fails_is_in_the_figures_and_the_exit_status(tmp_path, monkeypatch):
    import bench_many_cores

    def broken(*a):
        raise RuntimeError("no job here")

    monkeypatch.setattr(bench_many_cores, "live_kineto", lambda *a: {"skipped": "not asked"})
    monkeypatch.setattr(bench_many_cores, "cluster", broken)
    monkeypatch.setattr(bench_many_cores, "one_run", lambda *a: {"skipped": "not asked"})
    monkeypatch.setattr(sys, "argv", ["bench_many_cores.py", str(tmp_path)])
    assert bench_many_cores.main() == 1
    result = json.loads((tmp_path / "many_cores.json").read_text())
    assert result["cluster"] == {"error": "RuntimeError: no job here"}
    assert result["one_run"] == {"skipped": "not asked"}   # the parts after it still ran
    monkeypatch.setattr(bench_many_cores, "cluster", lambda *a: {"skipped": "not asked"})
    assert bench_many_cores.main() == 0
