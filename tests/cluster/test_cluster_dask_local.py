"""The local Dask cluster of ``backend="dask"`` (``npuprof.cluster.dask_local``), run as the CLI runs it (a
fresh single-threaded process): its workers are forked from the driver (the driver's own children: no fork
server, no nanny), run with the dashboard's profiler off, and end with it; a worker that dies hands its task
to another, and with every worker gone the tasks fail instead of waiting for ever."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path

    def who(_):
        import dask
        return os.getpid(), os.getppid(), dask.config.get("distributed.worker.profile.enabled")

    def die_once(marker):
        if not Path(marker).exists():
            Path(marker).touch()
            os._exit(1)            # this worker dies; Dask gives the task to the other one
        return os.getpid()

    def die(_):
        os._exit(1)

    if __name__ == "__main__":
        from npuprof.cluster import dask_local
        from npuprof.cluster.executors import Executor

        dask_local.LOCAL_CONFIG["distributed.scheduler.no-workers-timeout"] = "2s"
        out = {"driver": os.getpid()}
        with Executor("dask", workers=2) as ex:
            out["forked"] = ex._local.forked
            out["who"] = ex.map(who, list(range(4)))
            out["survivor"] = ex.map(die_once, [sys.argv[1]])
            t0 = time.monotonic()
            try:
                ex.map(die, list(range(2)))
                out["all_dead"] = "returned"
            except Exception as e:
                out["all_dead"] = type(e).__name__
            out["all_dead_s"] = time.monotonic() - t0
        out["alive_after"] = [p for p, _, _ in out["who"] if os.path.exists(f"/proc/{p}")]
        print("RESULT " + json.dumps(out))
""")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked workers are Linux's path")
def test_local_dask_workers_are_the_drivers_children(tmp_path):
    script = tmp_path / "local_dask.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "died")], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["forked"] is True
    pids = {pid for pid, _, _ in out["who"]}
    assert 1 <= len(pids) <= 2 and os.getpid() not in pids
    assert {ppid for _, ppid, _ in out["who"]} == {out["driver"]}      # children of the driver itself
    assert {profile for _, _, profile in out["who"]} == {False}         # the dashboard's profiler is off
    assert (tmp_path / "died").exists() and len(out["survivor"]) == 1  # one worker died, the other ran it
    assert out["all_dead"] != "returned" and out["all_dead_s"] < 120   # no worker left: an error, not a hang
    assert out["alive_after"] == []                                     # every worker ended with the executor


IDLE_SCRIPT = textwrap.dedent("""
    import json, os
    if __name__ == "__main__":
        from npuprof.cluster.executors import Executor

        with Executor("dask", workers=2) as ex:
            workers = [p.pid for p in ex._local._procs]
        print("RESULT " + json.dumps({"workers": workers, "exit_codes": [p.exitcode for p in ex._local._procs]}))
""")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forked workers are Linux's path")
def test_local_dask_closed_before_any_task_ends_its_workers(tmp_path):
    """The workers join the scheduler while the driver goes on (they are waited for once tasks are handed
    out): a cluster closed before any task still ends each of them through the scheduler, none is terminated."""
    script = tmp_path / "idle_dask.py"
    script.write_text(IDLE_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert len(out["workers"]) == 2 and out["exit_codes"] == [0, 0]     # ended by the scheduler, not terminated
    assert "terminating" not in proc.stderr
