"""How the cluster's workers start: forked pool workers keep the driver's objects frozen out of their garbage
collector (their collections do not walk, nor copy the pages of, the driver's imports), the driver itself is
left as it was; the command line freezes its objects only when the process ends with it."""
from __future__ import annotations

import contextlib
import gc
import io
import subprocess
import sys

import pytest

from npuprof.cluster.executors import Executor
from npuprof.cluster.startmethod import fork_allowed, frozen_objects


def _freeze_count(_: int) -> int:
    return gc.get_freeze_count()


def test_frozen_objects_is_undone_in_this_process() -> None:
    before = gc.get_freeze_count()
    with frozen_objects():
        assert gc.get_freeze_count() > before
    assert gc.get_freeze_count() == 0


@pytest.mark.skipif(not fork_allowed(), reason="workers are forked only on Linux from a single-threaded process")
def test_forked_pool_workers_keep_the_driver_objects_frozen() -> None:
    with Executor("process", workers=2) as ex:
        assert gc.get_freeze_count() == 0            # the driver: as it was
        counts = ex.map(_freeze_count, [0, 1, 2, 3])
    assert all(c > 1000 for c in counts), counts     # every import of the driver, frozen in each worker


def test_cli_freezes_only_as_the_program() -> None:
    from npuprof.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["plugins"]) == 0
    assert gc.get_freeze_count() == 0                # called with arguments (a test, a script): nothing frozen
    code = ("import gc, sys; from npuprof.cli import main; sys.argv = ['npuprof', 'plugins']; "
            "code = main(); print(code, gc.get_freeze_count() > 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split()[-2:] == ["0", "True"], out.stdout + out.stderr
