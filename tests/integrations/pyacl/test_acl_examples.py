"""The two documented pyACL call sequences (examples/pyacl_*.py) run against the acl TEST DOUBLE."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acl_support import DOUBLE_DIR, FAKE_MSPROF_DIR

ROOT = Path(__file__).resolve().parents[3]


def run_example(name: str, out: Path) -> str:
    env = dict(os.environ, PYTHONPATH=f"{DOUBLE_DIR}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               PATH=f"{FAKE_MSPROF_DIR}{os.pathsep}{os.environ['PATH']}")
    env.pop("PROFILING_MODE", None)
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / name), str(out)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.slow
def test_collect_to_file_example(tmp_path):
    out = run_example("pyacl_collect_to_file.py", tmp_path)
    assert "['0', 'Conv2D', 'AI_CORE', 5, 600.0" in out
    assert len(list((tmp_path / "prof").glob("npuprof_output/PROF_*/ASCEND_PROFILER_OUTPUT/op_statistic.csv"))) == 1
    assert not list((tmp_path / "prof").glob("PROF_*/ASCEND_PROFILER_OUTPUT"))   # CANN's files untouched


@pytest.mark.slow
def test_subscription_example(tmp_path):
    out = run_example("pyacl_subscribe_ops.py", tmp_path)
    assert "20 op records; reader thread alive: False" in out
    assert out.count("conv1 (Conv2D) 120 us") == 10
    assert "['0', 'Conv2D', 'N/A', 10, 1200.0" in out
