"""Suite-wide: everything temporary goes under pytest's basetemp, which is
removed when the session passes.

TMPDIR (and ``tempfile.tempdir`` in this process) point into the session's
basetemp, so what the tests, their child processes and the tools they run
(TensorFlow's autograph files, Dask's scratch space, msprof-analyze's logs,
``tempfile.mkdtemp`` in helpers) write is removed with it; pyproject sets
``tmp_path_retention_policy = "failed"``, so only failing tests' directories
are kept. CI shares this machine's disk: a suite that leaves gigabytes behind
makes the next run fail with ENOSPC (it did, once).
"""
from __future__ import annotations

import os
import signal
import tempfile
from typing import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def session_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = str(tmp_path_factory.mktemp("tmpdir"))
    saved_env, saved_module = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = tmp, tmp
    yield tmp
    tempfile.tempdir = saved_module
    if saved_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved_env


@pytest.fixture(scope="session", autouse=True)
def sigint_not_ignored() -> Iterator[None]:
    """The child processes the crash tests send SIGINT to start as a program started from a shell
    does: SIGINT at its default. A suite started as a background job of a non-interactive shell
    (``cmd &``, no job control) inherits SIGINT ignored, and so would every child; npuprof then
    rightly leaves it ignored, the SIGINT kills do nothing and those tests fail for the launch,
    not for npuprof. A handler set here is reset to the default in children at exec."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture(params=["compiled", "cells"])
def both_renderers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test with textrows' compiled renderer and again with its cell renderer (the
    fallback); tests/performance/test_rowrender.py checks that the install built the compiled one."""
    from npuprof.export import textrows

    if request.param == "cells":
        monkeypatch.setattr(textrows, "_compiled", None)
    elif textrows._compiled is None:
        pytest.skip("the compiled renderer is not built here (test_rowrender.py fails for that)")
    return request.param
