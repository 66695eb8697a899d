"""``npuprof cluster`` against msprof-analyze ``cluster`` on a real 2-rank torch_npu job (Ascend910B,
text export, ../shared/realdata): the same cluster_step_trace_time, cluster_communication and
cluster_communication_matrix, table by table, column by column.

msprof-analyze runs for real in .venv-interop on a copy (it writes into its input); npuprof reads the
sample in place and writes under the test's tmp. Each comparison prints the largest difference per column.
npuprof is checked twice: by default (its fast path: both ranks summarised from the tool's own
step_trace_time.csv / op_statistic.csv / communication*.json) and with ``--recompute`` (every rank's
events parsed).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cluster_real import JOB, check_communication_files_equal, check_step_trace_time_equal
from cluster_support import interop_python
from realdata import realdata, tree_digest

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> tuple[Path, Path]:
    from npuprof.cli import main

    src = realdata(JOB)
    root = tmp_path_factory.mktemp("cluster_real")
    work = root / "msprof_analyze"
    shutil.copytree(src, work)
    tools = interop_python().parent
    proc = subprocess.run([str(tools / "msprof-analyze"), "cluster", "-d", str(work), "-m", "all"],
                          capture_output=True, text=True, timeout=900, cwd=root,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    before = tree_digest(src)
    assert main(["cluster", str(src), "-o", str(root / "npuprof"), "--quiet"]) == 0
    assert main(["cluster", str(src), "-o", str(root / "npuprof_recompute"), "--quiet", "--recompute"]) == 0
    assert tree_digest(src) == before
    return work / "cluster_analysis_output", root / "npuprof"


@pytest.fixture(scope="module")
def recomputed(outputs) -> tuple[Path, Path]:
    """msprof-analyze's output and npuprof's with --recompute."""
    return outputs[0], outputs[1].parent / "npuprof_recompute"


def test_default_run_used_the_tool_tables_and_recompute_parsed_events(outputs, recomputed):
    fast, full = (json.loads((p / "cluster_summary.json").read_text()) for p in (outputs[1], recomputed[1]))
    assert fast["tool_tables"] == [0, 1] and fast["events_parsed"] == {}
    assert full["tool_tables"] == [] and sorted(full["events_parsed"]) == ["0", "1"]


def test_recomputed_step_trace_time_equal(recomputed):
    check_step_trace_time_equal(recomputed)


@pytest.mark.parametrize("name", ["cluster_communication.json", "cluster_communication_matrix.json"])
def test_recomputed_communication_files_equal(recomputed, name):
    check_communication_files_equal(recomputed, name)


def test_cluster_step_trace_time_equal(outputs):
    check_step_trace_time_equal(outputs)


@pytest.mark.parametrize("name", ["cluster_communication.json", "cluster_communication_matrix.json"])
def test_cluster_communication_files_equal(outputs, name):
    check_communication_files_equal(outputs, name)
