"""What the docs say, checked against the code (#34.8): ranks may share one output folder
(docs/cluster.md, README); the step breakdown's picture (docs/cluster.md): Stage is the device
window, a host stall at a step's start is that step's Preparing; docs/pyacl.md's commands for
trying pyACL profiling without an NPU run as written."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from npuprof.analysis.step_breakdown import assign_steps, step_trace
from npuprof.cli import main
from npuprof.events import EventKind, EventTable

ROOT = Path(__file__).resolve().parents[2]
K = EventKind
US = 1000

RANK_JOB = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from npuprof import Profiler, record_function
    rank, prof_dir, ready, go = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
    with Profiler(output_path=prof_dir, rank=rank, world_size=2) as prof:
        ready.write_text("")
        while not go.exists():          # both ranks' profilers run at once
            time.sleep(0.01)
        for _ in range(3):
            with record_function("train"):
                sum(range(20000))
            prof.step()
    prof.analyse()
""")


def test_the_ranks_of_a_job_share_one_output_folder(tmp_path, capsys):
    prof = tmp_path / "prof"
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", RANK_JOB, str(rank), str(prof), str(tmp_path / f"ready{rank}"),
                               str(go)], stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    try:
        for rank, proc in enumerate(procs):   # each profiler started (or its process ended, refused)
            while not (tmp_path / f"ready{rank}").exists() and proc.poll() is None:
                time.sleep(0.01)
        go.write_text("")
        for proc in procs:
            assert proc.wait(timeout=600) == 0, proc.stderr.read()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert main(["cluster", str(prof), "-o", str(tmp_path / "c"), "--backend", "serial", "--quiet"]) in (0, 3)
    assert len([p for p in prof.iterdir() if p.is_dir() and p.name.endswith("_ascend_ms")]) == 2
    ranks = (tmp_path / "c" / "cluster_step_trace_time.csv").read_text().splitlines()[1:]
    assert sorted({row.split(",")[2] for row in ranks}) == ["0", "1"]
    doc = (ROOT / "docs" / "cluster.md").read_text()
    assert "The ranks may share one `output_path`" in doc and "give each rank its own sub-directory" not in doc


def _one_step_as_pictured() -> EventTable:
    """docs/cluster.md's picture: step 1 loads, launches k1 k2 ar k3, logs; step 2 starts with a host stall."""
    rows = [  # ts, dur (µs), kind, name, device
        (0, 100, K.STEP, "ProfilerStep#1", -1), (100, 100, K.STEP, "ProfilerStep#2", -1),
        (0, 8, K.RANGE, "load", -1), (8, 30, K.OP, "launch", -1), (80, 10, K.RANGE, "log", -1),
        (10, 10, K.KERNEL, "k1", 0), (20, 10, K.KERNEL, "k2", 0), (30, 20, K.COMM, "hcom_allReduce_1", 0),
        (50, 10, K.KERNEL, "k3", 0),
        (100, 45, K.RANGE, "load batch (host stall)", -1), (145, 15, K.KERNEL, "k1", 0),
    ]
    rows.sort(key=lambda r: r[0])
    ts, dur, kind, name, device = zip(*rows)
    return assign_steps(EventTable.from_records(
        ts=[t * US for t in ts], dur=[d * US for d in dur], kind=list(kind), name=list(name),
        type=["AllReduce" if k == K.COMM else "" for k in kind], device=list(device), stream=0, pid=1, tid=1))


def test_stage_is_the_device_window_and_a_stall_is_the_next_steps_preparing():
    rows = {int(r["Step"]): r for r in step_trace(_one_step_as_pictured()).records()}
    one, two = rows[1], rows[2]
    assert one["Stage"] == pytest.approx(50.0)           # k1 start (10) .. k3 end (60), not the step's 100 µs
    assert one["Preparing"] == pytest.approx(10.0)
    assert one["Computing"] + one["Communication(Not Overlapped)"] + one["Free"] == pytest.approx(one["Stage"])
    assert two["Preparing"] == pytest.approx(45.0)       # the stall at step 2's start: step 2's Preparing
    assert two["Stage"] == pytest.approx(15.0)
    # [log] (60..100): after step 1's last device task, before step 2 - in no column (as 160..200 of step 2)
    assert one["Stage"] + one["Preparing"] + two["Preparing"] + two["Stage"] == \
        pytest.approx(200.0 - (100 - 60) - (200 - 160))
    doc = (ROOT / "docs" / "cluster.md").read_text()
    assert "|<----- Preparing N+1 --->|" in doc and "Stage` (step time)" not in doc


def _doc_block(doc: Path, heading: str) -> str:
    text = doc.read_text()
    section = text[text.index(heading):]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def test_pyacl_doc_commands_run_without_an_npu(tmp_path):
    block = _doc_block(ROOT / "docs" / "pyacl.md", "## Trying it without an NPU")
    block = block.replace("/tmp/acl_demo", str(tmp_path / "acl_demo")).replace("/tmp/acl_sub", str(tmp_path / "sub"))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("NPUPROF_NO_MSPROF", None)       # the stand-in's msprof exports the collected data
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PROF_" in done.stdout and "op_statistic" in done.stdout          # npuprof show of the import
    assert "20 op records; reader thread alive: False" in done.stdout       # the subscription example
