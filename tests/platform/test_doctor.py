"""``npuprof --version`` / ``npuprof doctor`` say what npuprof runs on, and a Profiler on the pure-Python
fallback says so once, with the bench's figure for what it costs."""
from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npuprof import __version__
from npuprof.compiled import FALLBACK_COST

ROOT = Path(__file__).resolve().parents[2]


def _npuprof(*args, pure=False, cwd=None):
    env = dict(os.environ, NPUPROF_PURE_PYTHON="1" if pure else "0")
    return subprocess.run([sys.executable, "-m", "npuprof", *args], env=env, capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.mark.parametrize("pure", [False, True])
def test_version_names_the_platform_page_size_and_compiled_modules(pure):
    from npuprof.compiled import compiled_status

    out = _npuprof("--version", pure=pure)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"npuprof {__version__}\n")
    assert f"page size {mmap.PAGESIZE} bytes" in out.stdout
    for name in ("npuprof._hotpath", "npuprof.export._rowrender", "npuprof.readers._tracescan"):
        if pure:
            assert f"{name} not loaded (NPUPROF_PURE_PYTHON=1 turns it off)" in out.stdout
        elif compiled_status(name).loaded:
            assert f"{name} loaded" in out.stdout


def test_doctor_reports_everything_and_leaves_nothing_behind(tmp_path):
    out = _npuprof("doctor", "-o", str(tmp_path), "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["version"] == __version__ and report["page_size"] == mmap.PAGESIZE
    assert report["machine"] and report["platform"]
    assert {c["name"] for c in report["compiled"]} == {"npuprof._hotpath", "npuprof.export._rowrender",
                                                       "npuprof.readers._tracescan"}
    assert report["write"]["mb_per_s"] > 0 and report["write"]["directory"] == str(tmp_path)
    assert set(report["private_api"]) == {"RLock._is_owned", "sys._getframe", "numpy _set_madvise_hugepage",
                                          "sys._is_gil_enabled"}
    from npuprof.compiled import free_threaded_build

    assert report["free_threaded"] == free_threaded_build()
    if free_threaded_build():   # on or off depends on what that process imported: tests/platform/test_gil.py
        assert report["gil"].startswith(("on (free-threaded build): ", "off (free-threaded build): "))
    else:
        assert report["gil"] == "on (not a free-threaded build)"
    assert report["frameworks"]["numpy"]
    assert list(tmp_path.iterdir()) == []


def test_doctor_on_the_fallback_says_why_and_what_it_costs(tmp_path):
    out = _npuprof("doctor", "-o", str(tmp_path), pure=True)
    assert out.returncode == 0, out.stderr
    assert ("compiled    npuprof._hotpath: NOT loaded, its Python fallback runs (annotations (record_function, "
            "mstx, trace_api)): NPUPROF_PURE_PYTHON=1 turns it off") in out.stdout
    assert f"fallback    costs {FALLBACK_COST.line()}" in out.stdout
    assert "output dir  " in out.stdout and " MB/s " in out.stdout


def test_doctor_refuses_a_missing_directory_and_fails_on_an_unwritable_one(tmp_path):
    missing = _npuprof("doctor", "-o", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "invalid --output=" in missing.stderr and "an existing directory" in missing.stderr
    unwritable = _npuprof("doctor", "-o", "/proc")   # not writable, even by root
    assert unwritable.returncode == 1
    assert "output dir  /proc: cannot be written:" in unwritable.stdout


PROFILE_TWICE = r'''
import logging, sys, tempfile
logging.basicConfig(format="%(message)s")
import npuprof
for _ in range(2):
    prof = npuprof.Profiler(output_path=tempfile.mkdtemp(), activities=["CPU"])
    prof.start()
    with npuprof.record_function("x"):
        pass
    prof.stop()
'''


@pytest.mark.parametrize("pure", [True, False])
def test_a_profiler_on_the_fallback_logs_one_line_with_its_cost(pure, tmp_path, monkeypatch):
    from npuprof.compiled import fallback_in_use

    env = dict(os.environ, NPUPROF_PURE_PYTHON="1" if pure else "0")
    # whether the child has all its compiled modules, asked here as the child asks (under make test-pure this
    # process runs with NPUPROF_PURE_PYTHON=1, which would leave the compiled case below unchecked)
    monkeypatch.setenv("NPUPROF_PURE_PYTHON", env["NPUPROF_PURE_PYTHON"])
    out = subprocess.run([sys.executable, "-c", PROFILE_TWICE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    said = [line for line in out.stderr.splitlines() if "pure-Python fallback" in line]
    if pure:
        assert len(said) == 1
        assert "npuprof._hotpath (NPUPROF_PURE_PYTHON=1 turns it off)" in said[0]
        assert FALLBACK_COST.line() in said[0]
    elif not fallback_in_use():
        assert said == []


def test_the_stated_fallback_cost_is_the_benchs_latest_measurement():
    latest = json.loads((ROOT / "benchmarks" / "results" / "latest.json").read_text())
    annotations, analysis = latest["annotations"], latest["analysis_10M"]
    assert FALLBACK_COST.annotation_python_ns == pytest.approx(
        annotations["sustained_python"]["record_function"]["median"], rel=0.01)
    assert FALLBACK_COST.annotation_compiled_ns == pytest.approx(
        annotations["sustained"]["record_function"]["median"], rel=0.01)
    assert FALLBACK_COST.rows_python_per_s == pytest.approx(analysis["python_events_per_s"]["median"], rel=0.01)
    assert FALLBACK_COST.rows_compiled_per_s == pytest.approx(analysis["events_per_s"]["median"], rel=0.01)
    assert latest["started"].startswith(FALLBACK_COST.measured_on.rsplit(", ", 1)[1])
