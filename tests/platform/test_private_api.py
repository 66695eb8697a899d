"""Every private CPython/numpy/threading API npuprof uses has a fallback that works with it removed.

Python level (npuprof.private_api): each private API is removed (monkeypatched away) and the
fallback compared with it, then all are removed at once in a fresh interpreter, before npuprof is
imported, which then profiles and analyses. C level: the compiled modules are built with
``-DNPUPROF_PUBLIC_CAPI_ONLY`` (no private C API) and the C-vs-Python parity tests run on that build.
The C library's functions reached through ctypes (madvise, malloc_trim, sync_file_range) are
removed the same way.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import numpy as np
import pytest

from npuprof import private_api, recorder

ROOT = Path(__file__).resolve().parents[2]


# -- RLock._is_owned -----------------------------------------------------------------------------

def _ownership(lock) -> list:
    """What rlock_is_owned says: free, held, held twice, released once, from another thread while held."""
    seen = [private_api.rlock_is_owned(lock)]
    with lock:
        seen.append(private_api.rlock_is_owned(lock))
        with lock:
            seen.append(private_api.rlock_is_owned(lock))
        seen.append(private_api.rlock_is_owned(lock))
        other = []
        t = threading.Thread(target=lambda: other.append((private_api.rlock_is_owned(lock),
                                                          lock.acquire(blocking=False))))
        t.start()
        t.join()
        seen.append(other[0])
    seen.append(private_api.rlock_is_owned(lock))
    return seen


def test_rlock_ownership_without_is_owned_matches_cpythons(monkeypatch):
    with_private = _ownership(private_api.new_rlock())
    assert type(private_api.new_rlock()) is not private_api.TrackedRLock
    monkeypatch.setattr(private_api, "_RLOCK_IS_OWNED", None)
    lock = private_api.new_rlock()
    assert type(lock) is private_api.TrackedRLock
    assert _ownership(lock) == with_private == [False, True, True, True, (False, False), False]
    with pytest.raises(RuntimeError):
        lock.release()


def test_a_profiler_runs_its_operations_on_the_tracked_lock(monkeypatch, tmp_path):
    import npuprof

    monkeypatch.setattr(private_api, "_RLOCK_IS_OWNED", None)
    prof = npuprof.Profiler(output_path=str(tmp_path), activities=["CPU"])
    assert type(prof._op_lock) is private_api.TrackedRLock
    for _ in range(3):
        with npuprof.record_function("work"):
            pass
        prof.step()
    prof.stop()
    assert not private_api.rlock_is_owned(prof._op_lock)
    assert prof.saved_runs


# -- sys._getframe -------------------------------------------------------------------------------

def _frames(depths):
    got = []
    for d in depths:
        f = private_api.caller_frame(d)
        got.append((f.f_code.co_name, f.f_lineno) if f is not None else None)
    return got


def _outer(depths):
    return _inner(depths)


def _inner(depths):
    return _frames(depths)


def test_caller_frame_without_getframe_gives_the_same_frames(monkeypatch):
    depths = [0, 1, 2, 3, 10_000]
    want = _outer(depths)
    assert [w[0] for w in want[:3]] == ["_frames", "_inner", "_outer"] and want[-1] is None
    assert private_api.caller_frame(0).f_code is sys._getframe(0).f_code
    monkeypatch.setattr(private_api, "_GETFRAME", None)
    got = _outer(depths)
    assert got[:3] == want[:3] and got[3][0] == want[3][0] and got[4] is None   # [3]: this test, another line


def test_call_stacks_are_recorded_without_getframe(monkeypatch):
    def stack(remove):
        if remove:
            monkeypatch.setattr(private_api, "_GETFRAME", None)
        return recorder._stack_text(skip=1)

    with_private, without = [stack(remove) for remove in (False, True)]   # called from one line: the same stack
    assert without == with_private
    assert "test_call_stacks_are_recorded_without_getframe" in json.loads(with_private)["Call stack"]


# -- numpy's _set_madvise_hugepage ---------------------------------------------------------------

def test_ordinary_pages_without_numpys_switch_changes_nothing(monkeypatch):
    from npuprof import pages

    switch = private_api.numpy_hugepage_switch()
    before = switch(True) if switch is not None else None
    try:
        monkeypatch.setattr(private_api, "_NUMPY_SWITCH", None)
        assert pages.numpy_hugepage_switch() is None
        with pages.ordinary_pages():
            a = np.ones(1 << 20)
        assert a.sum() == 1 << 20
        if switch is not None:   # numpy's advice left as it was: on
            assert switch(True) is True
    finally:
        if switch is not None:
            switch(before)


# -- the C library through ctypes -----------------------------------------------------------------

def test_populate_declines_without_madvise(monkeypatch):
    from npuprof import pages

    monkeypatch.setattr(pages, "libc_function", lambda *a, **k: None)
    column = np.zeros(1 << 16, dtype=np.int64)
    assert pages.populate(column, 0, len(column)) is False
    assert not column.any()


def test_populate_works_or_declines_on_this_kernel_with_its_page_size():
    from npuprof import pages

    column = np.arange(1 << 16, dtype=np.int64)
    pages_ok = pages.populate(column, 10, len(column) - 10)
    assert pages_ok in (True, False)
    assert (column == np.arange(1 << 16)).all()   # never changes the content


# -- all at once, in a fresh interpreter ----------------------------------------------------------

REMOVED = r'''
import sys, threading
import numpy as np, logging, typing, collections   # the standard library's own users first
try:
    from numpy._core import multiarray
except ImportError:
    from numpy.core import multiarray
if hasattr(multiarray, "_set_madvise_hugepage"):
    del multiarray._set_madvise_hugepage
del threading._PyRLock._is_owned
threading.RLock = threading._PyRLock
del sys._getframe
if hasattr(sys, "_is_gil_enabled"):
    del sys._is_gil_enabled
def _currentframe():   # what logging defines for itself where sys._getframe is missing at its import
    try:
        raise Exception
    except Exception:
        return sys.exc_info()[2].tb_frame.f_back
logging.currentframe = _currentframe
import ctypes
def _no_libc(*a, **k):
    raise OSError("no C library here")
ctypes.CDLL = _no_libc

import json
from pathlib import Path
import npuprof
from npuprof import private_api, mstx, record_function
from npuprof.libc import libc_function

out = Path(sys.argv[1])
prof = npuprof.Profiler(output_path=str(out), activities=["CPU"], with_stack=True)
def work(i):
    with record_function(f"w{i}"):
        mstx.mark("m")
threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
prof.step()
prof.stop()
run = prof.saved_runs[0]
print(json.dumps({"lock": type(prof._op_lock).__name__, "switch": private_api.numpy_hugepage_switch() is None,
                  "getframe": private_api._GETFRAME is None, "madvise": libc_function("madvise") is None,
                  "gil": private_api._IS_GIL_ENABLED is None and private_api.gil_enabled(),
                  "run": str(run)}))
'''


def test_npuprof_profiles_and_analyses_with_every_private_api_removed(tmp_path):
    script = tmp_path / "removed.py"
    script.write_text(REMOVED)
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got.pop("lock") == "TrackedRLock"
    assert all(got.pop(k) for k in ("switch", "getframe", "madvise", "gil"))
    shown = subprocess.run([sys.executable, "-m", "npuprof", "analyse", got["run"], "--quiet"], capture_output=True,
                           text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    from npuprof.rawstore import read_raw_dir

    table, _ = read_raw_dir(Path(got["run"]) / "NPUPROF")
    names = table.column_strings("name")
    assert {"w0", "w1", "w2", "m"} <= set(names)


# -- sys._is_gil_enabled ------------------------------------------------------------------------

def test_gil_enabled_without_is_gil_enabled_says_on_as_every_python_before_313(monkeypatch):
    real = getattr(sys, "_is_gil_enabled", None)
    assert private_api.gil_enabled() == (True if real is None else bool(real()))
    monkeypatch.setattr(private_api, "_IS_GIL_ENABLED", None)
    assert private_api.gil_enabled() is True
    monkeypatch.setattr(private_api, "_IS_GIL_ENABLED", lambda: False)   # a free-threaded Python without it
    assert private_api.gil_enabled() is False


# -- the compiled modules without CPython's private C API -------------------------------------------

def _compiler() -> bool:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) is not None and Path(sysconfig.get_paths()["include"], "Python.h").exists()


PRELOAD = r'''
import importlib.util, os, sys
for name, path in (("npuprof._hotpath", os.environ["NPUPROF_TEST_HOTPATH"]),
                   ("npuprof.export._rowrender", os.environ["NPUPROF_TEST_ROWRENDER"])):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
'''


def _setuptools() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 61


@pytest.mark.slow
@pytest.mark.skipif(not _compiler(), reason="no C compiler or Python headers here to build the public-only variant")
@pytest.mark.skipif(not _setuptools(), reason="no setuptools >= 61 in this Python to build the public-only variant")
def test_the_parity_tests_pass_on_a_build_without_private_c_api(tmp_path):
    build = tmp_path / "build"
    env = dict(os.environ, CFLAGS="-DNPUPROF_PUBLIC_CAPI_ONLY " + os.environ.get("CFLAGS", ""))
    made = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(build), "--build-temp",
                           str(tmp_path / "tmp")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-3000:]
    hot = next(build.glob("npuprof/_hotpath*.so"))
    rows = next(build.glob("npuprof/export/_rowrender*.so"))
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(PRELOAD)
    env = dict(os.environ, NPUPROF_TEST_HOTPATH=str(hot), NPUPROF_TEST_ROWRENDER=str(rows), NPUPROF_PURE_PYTHON="0",
               PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    check = subprocess.run([sys.executable, "-c", "from npuprof import recorder; from npuprof.export import textrows; "
                            "print(recorder._hotpath.PUBLIC_CAPI_ONLY, textrows._compiled.PUBLIC_CAPI_ONLY, "
                            "recorder._compiled_drain)"], env=env, capture_output=True, text=True, timeout=120)
    assert check.stdout.split() == ["1", "1", "None"], check.stderr
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/performance/test_hotpath.py",
                            "tests/performance/test_rowrender.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert tests.returncode == 0, tests.stdout[-4000:]
    assert " passed" in tests.stdout
