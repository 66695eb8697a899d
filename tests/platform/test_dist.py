"""``make dist`` as users install it: the sdist and wheels scripts/dist.py builds (manylinux x86-64, manylinux
aarch64 cross-built under qemu, pure), each installed into a fresh environment and smoke-tested there
(version, doctor, record from threads, analyse; the aarch64 one by the arm64 interpreter at 64 KiB pages);
and an install from the sdist on a host without a C compiler: a WARNING line, a pure wheel, the fallback
visible and the parity tests skipping with the reason while the rest pass."""
from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOST = platform.machine()
CP = f"cp{sys.version_info.major}{sys.version_info.minor}"
# this Python's wheel for this machine; the aarch64 one is for Debian 12's arm64 CPython 3.11
HOST_WHEEL = f"npuprof-0.1.0-{CP}-{CP}-manylinux2014_{HOST}.manylinux_2_17_{HOST}.whl"
ARM_WHEEL = "npuprof-0.1.0-cp311-cp311-manylinux2014_aarch64.manylinux_2_17_aarch64.whl"


def _aarch64_why_not() -> str:
    """Why the arm64 environment cannot be set up here ('' when it can): test_aarch64.py's verdict."""
    spec = importlib.util.spec_from_file_location("_npuprof_test_aarch64", Path(__file__).with_name("test_aarch64.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._why_not_here()


AARCH64_WHY_NOT = _aarch64_why_not()

SMOKE = r'''
import json, platform, sys, threading
from pathlib import Path
import npuprof
from npuprof import mstx, record_function, recorder
from npuprof.export import textrows
out = Path(sys.argv[1])
prof = npuprof.Profiler(output_path=str(out), activities=["CPU"])
def work(i):
    for k in range(50):
        with record_function(f"t{i}"):
            mstx.mark("m")
threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
prof.step()
prof.stop()
print(json.dumps({"machine": platform.machine(), "file": npuprof.__file__, "hotpath": recorder._hotpath is not None,
                  "rowrender": textrows._compiled is not None, "run": str(prof.saved_runs[0])}))
'''


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    made = subprocess.run([sys.executable, str(ROOT / "scripts" / "dist.py"), "--out", str(out),
                           "--aarch64", "no" if AARCH64_WHY_NOT else "yes"], capture_output=True, text=True, timeout=1800)
    assert made.returncode == 0, made.stderr[-3000:]
    out.with_name(out.name + ".log").write_text(made.stdout)     # beside dist/, not in it
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
    _assert_threads_recorded(Path(got["run"]))
    return doctor.stdout


def _assert_threads_recorded(run: Path) -> None:
    """SMOKE's three threads, 50 ranges and 50 marks each, in the analysed trace_view.json."""
    trace = json.loads((run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_bytes())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    for i in range(3):
        ranges = [e for e in events if e.get("name") == f"t{i}"]
        assert len(ranges) == 50, f"thread {i}: {len(ranges)} of 50 ranges"
        assert len({e["tid"] for e in ranges}) == 1
    assert len({e["tid"] for e in events if e.get("name") in ("t0", "t1", "t2")}) == 3
    assert len([e for e in events if e.get("name") == "m"]) == 150


def _glibc_versions(shared_object: bytes, tmp_path: Path) -> set[tuple[int, ...]]:
    """The GLIBC_x.y symbol versions a shared object needs, read by binutils' readelf (any architecture)."""
    path = tmp_path / "module.so"
    path.write_bytes(shared_object)
    readelf = shutil.which("readelf")
    assert readelf, "readelf (binutils) is needed to read the wheels' symbol versions"
    shown = subprocess.run([readelf, "--version-info", "--wide", str(path)], capture_output=True, text=True, check=True)
    return {tuple(int(x) for x in v.split(".")) for v in re.findall(r"Name: GLIBC_([0-9.]+)", shown.stdout)}


@pytest.mark.slow
def test_make_dist_builds_an_sdist_manylinux_wheels_and_a_pure_wheel(dist, tmp_path):
    names = sorted(p.name for p in dist.iterdir())
    platform_wheels = {HOST: HOST_WHEEL} if AARCH64_WHY_NOT else {HOST: HOST_WHEEL, "aarch64": ARM_WHEEL}
    assert names == sorted(["npuprof-0.1.0.tar.gz", "npuprof-0.1.0-py3-none-any.whl", *platform_wheels.values()])
    for wheel in dist.glob("*.whl"):
        archive = zipfile.ZipFile(wheel)
        files = archive.namelist()
        assert {"npuprof/py.typed", "npuprof/_hotpath.pyi", "npuprof/export/_rowrender.pyi",
                "npuprof/readers/_tracescan.pyi"} <= set(files)
        assert not [f for f in files if ".libs/" in f]                # nothing grafted: libc is all they need
        compiled = [f for f in files if f.endswith(".so")]
        machine = next((m for m, name in platform_wheels.items() if name == wheel.name), None)
        if machine is None:
            assert compiled == []
            continue
        cp = CP if machine == HOST else "cp311"
        suffix = f".cpython-{cp[2:]}-{machine}-linux-gnu.so"
        assert sorted(compiled) == [f"npuprof/_hotpath{suffix}", f"npuprof/export/_rowrender{suffix}",
                                    f"npuprof/readers/_tracescan{suffix}"]
        tags = archive.read("npuprof-0.1.0.dist-info/WHEEL").decode()
        assert f"Tag: {cp}-{cp}-manylinux_2_17_{machine}" in tags, tags
        # the tag's promise, checked apart from auditwheel: no module needs a glibc symbol newer than 2.17
        for so in compiled:
            needed = _glibc_versions(archive.read(so), tmp_path)
            assert needed and max(needed) <= (2, 17), f"{wheel.name}: {so} needs GLIBC {sorted(needed)}"
    said = dist.with_name(dist.name + ".log").read_text()         # scripts/dist.py's summary
    for machine, name in platform_wheels.items():
        assert f"dist: {name}: " in said and f"auditwheel: manylinux_2_17_{machine}" in said, said


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["manylinux", "pure"])
def test_each_wheel_installs_into_a_fresh_venv_and_works(dist, tmp_path, kind):
    wheel = dist / (HOST_WHEEL if kind == "manylinux" else "npuprof-0.1.0-py3-none-any.whl")
    python = _venv(tmp_path / "venv")
    _install(python, str(wheel), _clean_env())
    _smoke(python, tmp_path, compiled=kind != "pure")


@pytest.mark.slow
@pytest.mark.skipif(bool(AARCH64_WHY_NOT), reason=AARCH64_WHY_NOT or "-")
def test_the_aarch64_wheel_installs_on_arm64_python_and_works_with_64k_pages(dist, tmp_path):
    """The arm64 interpreter under qemu (64 KiB pages) installs the manylinux aarch64 wheel with its own pip
    into an empty folder; from there npuprof loads both compiled modules, records from three threads, and
    ``npuprof analyse`` writes the trace."""
    cache = Path(os.environ.get("NPUPROF_AARCH64_CACHE", Path.home() / ".cache" / "npuprof-aarch64"))
    python = cache / "root" / "bin" / "pyw"
    target = tmp_path / "site"

    def arm_env(*paths: Path) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "NPUPROF_PURE"))}
        return {**env, "NPUPROF_QEMU_PAGE": "65536", "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}

    installed = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--no-cache-dir",
                                "--root-user-action=ignore", "--target", str(target), str(dist / ARM_WHEEL)],
                               capture_output=True, text=True, timeout=900, env=arm_env(cache / "tools"))
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    env = arm_env(target, cache / "site")
    smoke = subprocess.run([str(python), "-c", SMOKE, str(tmp_path / "runs")], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=900)
    assert smoke.returncode == 0, smoke.stderr[-3000:]
    got = json.loads(smoke.stdout.strip().splitlines()[-1])
    assert got["machine"] == "aarch64"
    assert got["file"].startswith(str(target))                     # the wheel's copy, not the source tree
    assert got["hotpath"] and got["rowrender"]
    assert "pure-Python fallback" not in smoke.stderr
    analysed = subprocess.run([str(python), "-m", "npuprof", "analyse", got["run"], "--quiet"], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=900)
    assert analysed.returncode == 0, analysed.stderr[-3000:]
    _assert_threads_recorded(Path(got["run"]))


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
