"""How the cluster's workers start: forked pool workers keep the driver's objects frozen out of their garbage
collector (their collections do not walk, nor copy the pages of, the driver's imports), the driver itself is
left as it was; the command line freezes its objects only when the process ends with it."""
from __future__ import annotations

import contextlib
import gc
import io
import json
import subprocess
import sys
import textwrap

import pytest

from npuprof.cluster.startmethod import frozen_objects


def test_frozen_objects_is_undone_in_this_process() -> None:
    assert gc.get_freeze_count() == 0
    with frozen_objects():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_objects_the_caller_froze_stay_frozen() -> None:
    gc.freeze()
    try:
        before = gc.get_freeze_count()
        with frozen_objects():
            pass
        assert gc.get_freeze_count() >= before > 0       # the caller's choice, not undone by npuprof
    finally:
        gc.unfreeze()


POOL_SCRIPT = textwrap.dedent("""
    import gc, json

    def freeze_count(_):
        return gc.get_freeze_count()

    if __name__ == "__main__":
        from npuprof.cluster.executors import Executor
        from npuprof.cluster.startmethod import fork_allowed

        forked = fork_allowed()
        with Executor("process", workers=2) as ex:
            driver = gc.get_freeze_count()
            counts = ex.map(freeze_count, [0, 1, 2, 3])
        print("RESULT " + json.dumps({"forked": forked, "driver": driver, "workers": counts}))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked only on Linux")
def test_forked_pool_workers_keep_the_driver_objects_frozen(tmp_path) -> None:
    """Run as the CLI runs it: a fresh single-threaded process, whose pool workers are forked from it."""
    script = tmp_path / "pool_freeze.py"
    script.write_text(POOL_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["forked"] is True and out["driver"] == 0                  # the driver: as it was
    assert all(c > 1000 for c in out["workers"]), out["workers"]        # the driver's imports, frozen in each worker


def test_cli_freezes_only_as_the_program() -> None:
    from npuprof.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["plugins"]) == 0
    assert gc.get_freeze_count() == 0                # called with arguments (a test, a script): nothing frozen
    code = ("import gc, sys; from npuprof.cli import main; sys.argv = ['npuprof', 'plugins']; "
            "code = main(); print(code, gc.get_freeze_count() > 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split()[-2:] == ["0", "True"], out.stdout + out.stderr


FIRST_RANK_SCRIPT = textwrap.dedent("""
    import json, sys
    from npuprof.cluster import workerprep          # what the driver imports before it forks the workers
    from npuprof.cluster.worker import RankTask, summarise_packed

    before = set(sys.modules)
    summarise_packed(RankTask(rank=0, run_dirs=(sys.argv[1],), series=False))
    print("RESULT " + json.dumps(sorted(set(sys.modules) - before)))
""")


def test_a_workers_first_rank_imports_no_reader(tmp_path) -> None:
    """A worker forked after :mod:`npuprof.cluster.workerprep` summarises a real torch_npu rank without importing
    a reader (or numpy's masked arrays, msgspec) of its own: each was imported once, before the fork."""
    from cluster_real import JOB
    from realdata import realdata

    rank0 = next(p for p in sorted(realdata(JOB).iterdir()) if p.is_dir() and p.name.endswith("_ascend_pt"))
    script = tmp_path / "first_rank.py"
    script.write_text(FIRST_RANK_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(rank0)], capture_output=True, text=True, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    imported = json.loads(lines[-1][len("RESULT "):])
    late = [m for m in imported if m.startswith(("npuprof.readers", "npuprof.cluster", "numpy", "msgspec", "sqlite3"))]
    assert not late, late
