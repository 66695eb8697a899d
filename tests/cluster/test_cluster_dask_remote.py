"""npuprof cluster on a Dask cluster started as a user starts one on two machines: a ``dask scheduler``
process and two ``dask worker`` processes (the Dask CLIs, separate processes, loopback only). The workers
read the rank directories by path; what comes back over the network is each rank's packed summary
(``npuprof.cluster.packing``), not its events; the tables equal the process pool's; the progress bar
advances once per rank either way."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster_support import ensure_cluster_plugin, make_job

RANKS = 12


def _start(args: list, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            env=dict(os.environ, PYTHONWARNINGS="ignore"))


@pytest.fixture
def dask_cluster(tmp_path):
    """(scheduler address, client) of a scheduler and two single-threaded workers, each its own process."""
    from distributed import Client

    sched_file = tmp_path / "scheduler.json"
    procs = [_start(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                     "--scheduler-file", str(sched_file)], tmp_path / "scheduler.log")]
    deadline = time.monotonic() + 120
    while not sched_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        assert sched_file.exists(), (tmp_path / "scheduler.log").read_text(errors="replace")[-2000:]
        for i in range(2):
            procs.append(_start(["worker", "--scheduler-file", str(sched_file), "--nthreads", "1", "--nworkers", "1",
                                 "--no-dashboard", "--name", f"w{i}", "--host", "127.0.0.1"],
                                tmp_path / f"worker{i}.log"))
        address = json.loads(sched_file.read_text())["address"]
        client = Client(address, timeout=120)
        client.wait_for_workers(2, timeout=120)
        yield address, client
        client.close()
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.mark.slow
def test_separate_scheduler_and_worker_processes(tmp_path, dask_cluster):
    from npuprof.cluster import cluster_analyse

    ensure_cluster_plugin()
    address, client = dask_cluster
    job = make_job(tmp_path / "job", ranks=RANKS, steps=3, slow_ranks=(4,))
    bars: dict = {"dask": [], "process": []}

    client.get_task_stream()          # the scheduler records the tasks from here on
    remote = cluster_analyse(job.root, output=tmp_path / "remote", scheduler=address, backend="dask",
                             progress_bar=lambda msg, done, total: bars["dask"].append((done, total)))
    stream = [t for t in client.get_task_stream() if "summarise_packed" in str(t["key"])]
    local = cluster_analyse(job.root, output=tmp_path / "local", backend="process", workers=2,
                            progress_bar=lambda msg, done, total: bars["process"].append((done, total)))

    assert remote.backend == f"dask scheduler {address}" and remote.slow["slow_ranks"] == [4]
    for name in ("cluster_step_trace_time.csv", "cluster_rank_summary.csv", "cluster_communication.csv",
                 "cluster_communication_matrix.csv", "cluster_op_statistic.csv", "clock_alignment.json"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "remote" / name).read_bytes(), name
    # every rank ran on one of the two worker processes, both took ranks; what each sent back (the
    # scheduler's record of each result) is the packed summary the driver received, bytes, not objects;
    # the rank's files stayed where they lie (the workers were given their paths)
    assert len(stream) == RANKS
    workers = {t["worker"] for t in stream}
    assert len(workers) == 2 and all(w.startswith("tcp://127.0.0.1:") for w in workers), workers
    assert {t["typename"] for t in stream} == {"bytes"}
    summary = json.loads((tmp_path / "remote" / "cluster_summary.json").read_text())
    assert summary["driver"]["summary_bytes"] == sum(t["nbytes"] for t in stream) > 0
    # one bar step per rank, on both backends
    for backend, calls in bars.items():
        assert calls[0] == (0, RANKS) and sorted(d for d, _ in calls[1:]) == list(range(1, RANKS + 1)), backend
