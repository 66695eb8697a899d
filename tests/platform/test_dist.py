"""``make dist`` as users install it: the sdist and wheels scripts/dist.py builds, each installed into a
fresh venv and smoke-tested there (version, doctor, record from threads, analyse); and an install
from the sdist on a host without a C compiler: a WARNING line, a pure wheel, the fallback visible and
the parity tests skipping with the reason while the rest pass."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SMOKE = r'''
import json, sys, threading
from pathlib import Path
import npuprof
from npuprof import mstx, record_function, recorder
from npuprof.export import textrows
out = Path(sys.argv[1])
prof = npuprof.Profiler(output_path=str(out), activities=["CPU"])
prof.start()
def work(i):
    for k in range(50):
        with record_function(f"t{i}"):
            mstx.mark("m")
threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
prof.step()
prof.stop()
print(json.dumps({"file": npuprof.__file__, "hotpath": recorder._hotpath is not None,
                  "rowrender": textrows._compiled is not None, "run": str(prof.saved_runs[0])}))
'''


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    made = subprocess.run([sys.executable, str(ROOT / "scripts" / "dist.py"), "--out", str(out)], capture_output=True,
                          text=True, timeout=900)
    assert made.returncode == 0, made.stderr[-3000:]
    return out


def _venv(where: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    return where / "bin" / "python"


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NPUPROF_PURE_PYTHON", "VIRTUAL_ENV")}
    return {**env, **extra}


def _install(python: Path, target: str, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run([str(python), "-m", "pip", "install", "-v", "--no-cache-dir", target], capture_output=True,
                          text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def _smoke(python: Path, tmp_path: Path, compiled: bool) -> str:
    env = _clean_env()
    bindir = python.parent
    version = subprocess.run([str(bindir / "npuprof"), "--version"], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("npuprof "), version.stderr
    doctor = subprocess.run([str(bindir / "npuprof"), "doctor", "-o", str(tmp_path)], capture_output=True,
                            text=True, env=env, cwd=tmp_path, timeout=300)
    assert doctor.returncode == 0, doctor.stderr
    state = "loaded (" if compiled else "NOT loaded"
    assert f"compiled    npuprof._hotpath: {state}" in doctor.stdout, doctor.stdout
    smoke = subprocess.run([str(python), "-c", SMOKE, str(tmp_path / "runs")], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=300)
    assert smoke.returncode == 0, smoke.stderr[-3000:]
    got = json.loads(smoke.stdout.strip().splitlines()[-1])
    assert str(python.parents[2]) in got["file"]                   # the installed copy, not the source tree
    assert got["hotpath"] is compiled and got["rowrender"] is compiled
    assert ("pure-Python fallback" in smoke.stderr) is not compiled
    analysed = subprocess.run([str(bindir / "npuprof"), "analyse", got["run"], "--quiet"], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=300)
    assert analysed.returncode == 0, analysed.stderr[-3000:]
    assert (Path(got["run"]) / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").stat().st_size > 0
    return doctor.stdout


@pytest.mark.slow
def test_make_dist_builds_an_sdist_a_platform_wheel_and_a_pure_wheel(dist):
    names = sorted(p.name for p in dist.iterdir())
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert "npuprof-0.1.0.tar.gz" in names and "npuprof-0.1.0-py3-none-any.whl" in names
    platform = [n for n in names if n.startswith(f"npuprof-0.1.0-{tag}-{tag}-") and n.endswith(".whl")]
    assert len(platform) == 1
    for wheel in dist.glob("*.whl"):
        files = zipfile.ZipFile(wheel).namelist()
        assert {"npuprof/py.typed", "npuprof/_hotpath.pyi", "npuprof/export/_rowrender.pyi"} <= set(files)
        compiled = [f for f in files if f.endswith(".so")]
        assert (len(compiled) == 2) is (wheel.name in platform)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["platform", "pure"])
def test_each_wheel_installs_into_a_fresh_venv_and_works(dist, tmp_path, kind):
    wheel = next(w for w in dist.glob("*.whl") if w.name.endswith("-py3-none-any.whl") is (kind == "pure"))
    python = _venv(tmp_path / "venv")
    _install(python, str(wheel), _clean_env())
    _smoke(python, tmp_path, compiled=kind == "platform")


@pytest.mark.slow
def test_the_sdist_installs_without_a_c_compiler_warns_and_runs_on_the_fallback(dist, tmp_path):
    python = _venv(tmp_path / "venv")
    installed = _install(python, str(dist / "npuprof-0.1.0.tar.gz"), _clean_env(CC="/bin/false"))
    said = installed.stdout + installed.stderr
    assert "WARNING: npuprof: npuprof._hotpath was not built" in said
    assert "WARNING: npuprof: npuprof.export._rowrender was not built" in said
    assert "npuprof-0.1.0-py3-none-any.whl" in said                  # tagged pure, as it is
    doctor = _smoke(python, tmp_path, compiled=False)
    assert "not built for this Python" in doctor and "fallback    costs record_function" in doctor
    # the suite's smoke subset in that venv: the parity tests skip with the reason, the rest pass
    tools = subprocess.run([str(python), "-m", "pip", "install", "-q", "pytest", "pytest-timeout", "hypothesis"],
                           capture_output=True, text=True, timeout=900, env=_clean_env())
    assert tools.returncode == 0, tools.stderr[-2000:]
    tests = subprocess.run([str(python), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests/performance/test_hotpath.py",
                            "tests/performance/test_rowrender.py", "tests/platform/test_private_api.py", "tests/platform/test_doctor.py",
                            "-k", "not parity_tests_pass_on_a_build"], cwd=ROOT, capture_output=True, text=True,
                           timeout=900, env=_clean_env())
    assert tests.returncode == 0, tests.stdout[-4000:]
    assert "npuprof._hotpath is not in use: not built for this Python" in tests.stdout


OLD_SETUPTOOLS = """
import runpy, sys, setuptools
setuptools.__version__ = "60.9.3"   # older than the [project] table's support
sys.argv = ["setup.py", "--version"]
runpy.run_path("setup.py", run_name="__main__")
"""


def test_an_older_setuptools_is_told_the_minimum():
    done = subprocess.run([sys.executable, "-c", OLD_SETUPTOOLS], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "npuprof needs setuptools >= 61.0 to build (pyproject.toml's [project] table); this one is 60.9.3" in done.stderr
