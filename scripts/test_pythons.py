"""``make test-pythons``: the smoke subset of the suite on the oldest and newest Python npuprof claims.

    python scripts/test_pythons.py [--versions 3.9,3.13,3.13t] [--host-python .venv/bin/python]

For each version: an interpreter is found (``pythonX.Y`` on PATH, then ``uv python find``, then
pyenv's versions), a venv ``.venv-pyX.Y`` made with it, npuprof installed there from this tree as a
user installs it (``pip install .``: its compiled modules built for that Python), and the smoke
subset run against that install: the C-vs-Python parity tests, the private-API fallbacks, doctor.

The free-threaded build (``3.13t``), where none is found, is built once from source under build/
(scripts/freethreaded_python.py: no package anywhere this machine reaches ships one). orjson has no
free-threaded wheel: pip builds orjson < 3.13 from its sdist (3.13's PyO3 refuses a free-threaded 3.13),
which needs Rust's ``cargo`` (its crates are inside the sdist, so no network). Then, each with the GIL
as npuprof's imports leave it (on: orjson on Python 3.13 declares it needs it, and npuprof's compiled
modules run) and with ``PYTHON_GIL=0`` (off: npuprof must leave it off and run its Python twins):

- 8 threads each record 5,000 ``record_function`` ranges and 5,000 ``mstx`` marks at once, and every
  event is read back from the run, counted per thread; ``sys._is_gil_enabled()`` and which path ran
  are printed, with ``npuprof doctor``'s python, GIL and compiled lines;
- one synthetic run is analysed to every output (scripts/aarch64/outputs.py) and each file must be
  byte-identical to the one ``--host-python`` (.venv's 3.11) writes from the same input.

A version with no interpreter here is reported as such (for 3.13t: why the build failed) and fails the
run unless ``--allow-missing`` names it.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import freethreaded_python  # noqa: E402

FREE_THREADED = "3.13t"
HOST_PYTHON = ROOT / ".venv" / "bin" / "python"
FREE_THREADED_PINS = ["orjson<3.13"]     # see _install
# what the outputs compared with .venv's need beyond npuprof's dependencies: the report's cluster tables
# are Parquet files only where pyarrow is installed (.venv has it, with the cluster extra)
FREE_THREADED_EXTRAS = ["pyarrow"]

SMOKE_TESTS = ["tests/performance/test_hotpath.py", "tests/performance/test_rowrender.py", "tests/platform/test_private_api.py", "tests/platform/test_doctor.py"]
TOOLS = ["setuptools>=61", "pytest>=8", "pytest-timeout>=2.3", "hypothesis>=6.100"]

# Records 8 threads x (N record_function ranges + N marks) and reads every event back; says what the GIL did.
# EXPECT_GIL_OFF=1: the GIL must still be off after npuprof was imported and recorded, and npuprof must run its
# Python twins (its compiled modules need the GIL); otherwise the compiled modules must be in use.
RECORD = r'''
import json, os, sys, sysconfig, tempfile, threading
from pathlib import Path
import npuprof
from npuprof import mstx, record_function
from npuprof.compiled import compiled_status, gil_status
from npuprof.rawstore import read_raw_dir
THREADS, N = 8, 5000
out = Path(tempfile.mkdtemp())
prof = npuprof.Profiler(output_path=str(out), activities=["CPU"])
start = threading.Barrier(THREADS)
def work(i):
    start.wait()      # all at once: with the GIL off they append and flush on both cores together
    for _ in range(N):
        with record_function(f"t{i}"):
            mstx.mark("m")
threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
[t.start() for t in threads]
[t.join() for t in threads]
prof.stop()
table, _ = read_raw_dir(prof.saved_runs[0] / "NPUPROF")
names = table.column_strings("name")
per_thread = {f"t{i}": names.count(f"t{i}") for i in range(THREADS)}
assert per_thread == {f"t{i}": N for i in range(THREADS)} and names.count("m") == THREADS * N, (per_thread, names.count("m"))
gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
hotpath = compiled_status("npuprof._hotpath")
if os.environ.get("EXPECT_GIL_OFF") == "1":
    assert not gil, "the GIL was turned on"
    assert not hotpath.loaded and "GIL" in hotpath.reason, hotpath
else:
    assert hotpath.loaded, hotpath
print(json.dumps({"events": len(names), "threads": THREADS, "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
                  "gil_enabled": gil, "gil": gil_status().line(), "hotpath_loaded": hotpath.loaded,
                  "hotpath_reason": hotpath.reason}))
'''


def _dependencies() -> list[str]:
    """npuprof's dependencies as pyproject.toml lists them."""
    import tomllib     # 3.11+: the interpreter that runs this script (make: .venv's)

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def _is(candidate: str, version: str) -> bool:
    """Whether ``candidate`` runs and is Python ``version`` ("3.13t": free-threaded)."""
    code = ("import sys, sysconfig; print('%d.%d%s' % (sys.version_info[0], sys.version_info[1], "
            "'t' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))")
    try:
        done = subprocess.run([candidate, "-c", code], capture_output=True, text=True, timeout=60)
    except OSError:
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def find_python(version: str) -> Optional[str]:
    """An interpreter for ``version`` ("3.9", "3.13t") that runs, or None."""
    exe = f"python{version}"
    candidates = [shutil.which(exe)]
    if version == FREE_THREADED:
        candidates.append(str(freethreaded_python.interpreter(freethreaded_python.DEFAULT_BUILD)))
    uv = shutil.which("uv")
    if uv:
        done = subprocess.run([uv, "python", "find", "--no-python-downloads", version], capture_output=True,
                              text=True)
        candidates.append(done.stdout.strip() if done.returncode == 0 else None)
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    base = version.rstrip("t")
    candidates += sorted(glob.glob(str(pyenv / f"{base}.*" / "bin" / exe)))
    candidates += sorted(glob.glob(str(pyenv / f"{base}.*" / "bin" / "python3")))
    return next((c for c in candidates if c and _is(c, version)), None)


def build_free_threaded() -> tuple[Optional[str], str]:
    """scripts/freethreaded_python.py's interpreter (built once under build/), or None and why not."""
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "freethreaded_python.py")], cwd=ROOT,
                          stdout=subprocess.PIPE, text=True)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "printed nothing"
    return (last, "") if done.returncode == 0 else (None, last)


def _step(version: str, argv: list, env: dict, capture: bool = False) -> subprocess.CompletedProcess:
    shown = [str(a) for a in argv]
    said = ["<script>" if "\n" in a else a for a in shown]
    print(f"[{version}] {' '.join(said[:6])}{' ...' if len(said) > 6 else ''}", flush=True)
    return subprocess.run(shown, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE if capture else None)


def _install(version: str, python: str, env: dict, tools: list[str]) -> Optional[Path]:
    venv = ROOT / f".venv-py{version}"
    vpy = venv / "bin" / "python"
    steps = []
    if not vpy.exists():
        steps.append([python, "-m", "venv", str(venv)])
    steps.append([vpy, "-m", "pip", "install", "-q", *tools])
    if version == FREE_THREADED:
        # npuprof's dependencies first, with pip's wheel cache: orjson has no free-threaded wheel, so pip
        # builds it from its sdist once (Rust; its crates are inside the sdist, so cargo needs no network),
        # with orjson's own switch for a free-threaded build (ORJSON_BUILD_FREETHREADED: without it its
        # build stops with "free-threaded Python is not supported"; on 3.13 it declares it needs the GIL).
        # FREE_THREADED_PINS: orjson 3.13 uses PyO3 0.29, which refuses a free-threaded 3.13 ("PyO3 does
        # not support the free-threaded build of CPython versions below 3.14"); 3.12 (PyO3 0.28) builds.
        # --prefer-binary: numpy 2.5 ships no cp313t wheel (cp314t only), so the newest numpy with one
        # (2.4) is taken instead of compiling 2.5's sdist
        steps.append([vpy, "-m", "pip", "install", "-q", "--prefer-binary", *_dependencies(), *FREE_THREADED_PINS,
                      *FREE_THREADED_EXTRAS])
    # this tree's npuprof, rebuilt each time (--no-cache-dir: pip's wheel cache would keep an older build)
    steps.append([vpy, "-m", "pip", "install", "-q", "--no-cache-dir", "."])
    env = {**env, "ORJSON_BUILD_FREETHREADED": "1"} if version == FREE_THREADED else env
    for argv in steps:
        if _step(version, argv, env).returncode != 0:
            return None
    return vpy


def run_version(version: str, python: str, host_python: str) -> bool:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "NPUPROF_PURE_PYTHON",
                                                            "PYTHON_GIL")}
    if version != FREE_THREADED:
        vpy = _install(version, python, env, TOOLS)
        return vpy is not None and _step(version, [vpy, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                                                   *SMOKE_TESTS], env).returncode == 0
    if shutil.which("cargo") is None:
        print(f"[{version}] orjson has no free-threaded wheel and pip builds it with Rust: no cargo here "
              "(install Rust's toolchain: rustup, or Debian's cargo package)", flush=True)
        return False
    vpy = _install(version, python, env, ["setuptools>=61"])
    if vpy is None:
        return False
    ok = True
    # as installed: orjson (on 3.13) turns the GIL on at import, and the compiled modules run;
    # PYTHON_GIL=0: the GIL stays off and npuprof runs its Python twins
    for label, extra in (("GIL as imports leave it", {}), ("PYTHON_GIL=0", {"PYTHON_GIL": "0", "EXPECT_GIL_OFF": "1"})):
        done = _step(version, [vpy, "-c", RECORD], {**env, **extra}, capture=True)
        if done.returncode != 0:
            print(f"[{version}] {label}: recording from threads FAILED", flush=True)
            ok = False
            continue
        got = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"[{version}] {label}: {got['events']} events from {got['threads']} threads read back; "
              f"free-threaded build: {got['free_threaded']}, sys._is_gil_enabled(): {got['gil_enabled']}; "
              f"npuprof._hotpath {'loaded' if got['hotpath_loaded'] else 'not loaded: ' + got['hotpath_reason']}",
              flush=True)
        ok &= got["free_threaded"]
        doctor = _step(version, [vpy, "-m", "npuprof", "doctor", "-o", tempfile.gettempdir()], {**env, **extra},
                       capture=True)
        shown = [line for line in doctor.stdout.splitlines() if line.startswith(("python", "GIL", "compiled"))]
        print("\n".join(f"[{version}]   doctor: {line}" for line in shown), flush=True)
        # doctor says what recording saw: the GIL's state (and why), each compiled module loaded or why not
        gil_line = f"GIL         {'on' if got['gil_enabled'] else 'off'} (free-threaded build): "
        said_hotpath = ("compiled    npuprof._hotpath: loaded" if got["hotpath_loaded"] else
                        "compiled    npuprof._hotpath: NOT loaded")
        if doctor.returncode != 0 or not any(line.startswith(gil_line) for line in shown) or \
                not any(line.startswith(said_hotpath) for line in shown):
            print(f"[{version}] {label}: doctor does not say {gil_line.strip()!r} and {said_hotpath!r}", flush=True)
            ok = False
    return ok and compare_outputs(version, vpy, host_python, env)


def compare_outputs(version: str, vpy: Path, host_python: str, env: dict) -> bool:
    """One synthetic run analysed to every output (scripts/aarch64/outputs.py) by ``host_python`` and by
    ``vpy`` with the GIL as imports leave it and with PYTHON_GIL=0: every file's bytes must match."""
    script = ROOT / "scripts" / "aarch64" / "outputs.py"
    base = ROOT / "build" / f"outputs-py{version}"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    host_env = dict(os.environ)     # the host interpreter runs as the caller runs it (its npuprof, its path)
    made = _step(version, [host_python, script, "make-input", base / "input"], host_env, capture=True)
    if made.returncode != 0:
        return False
    run_dir = made.stdout.strip().splitlines()[-1]
    work = base / "work"
    results = {}
    host = subprocess.run([host_python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                          capture_output=True, text=True, env=host_env).stdout.strip()
    for label, python, run_env in ((f"python {host}", host_python, host_env), (version, vpy, env),
                                   (f"{version} PYTHON_GIL=0", vpy, {**env, "PYTHON_GIL": "0"})):
        done = _step(version, [python, script, "run", run_dir, work], run_env, capture=True)
        if done.returncode != 0:
            print(f"[{version}] outputs under {label}: the run FAILED", flush=True)
            return False
        results[label] = json.loads(done.stdout)
        work.rename(base / _dir(label))   # the next run writes to the same paths
    reference_label = f"python {host}"
    reference = results.pop(reference_label)
    ok = True
    for label, got in results.items():
        differ = sorted(k for k in set(reference) | set(got) if reference.get(k) != got.get(k))
        # a Parquet file names the pyarrow that wrote it (numpy 2.4 and pyarrow 24 are the newest with
        # cp313t wheels; .venv's are newer): those are compared as tables, every other file byte for byte
        tables = [k for k in differ if k.endswith(".parquet") and k in reference and k in got]
        same_tables = _same_parquet_tables(host_python, host_env, base / _dir(reference_label), base / _dir(label),
                                           tables)
        differ = [k for k in differ if k not in same_tables]
        print(f"[{version}] outputs under {label}: {len(got)} files, {len(got) - len(differ) - len(same_tables)} "
              f"byte-identical to {reference_label}'s"
              + (f", {len(same_tables)} Parquet files equal as tables" if same_tables else "")
              + (f"; DIFFERENT: {differ}" if differ else ""), flush=True)
        ok &= not differ and len(got) == len(reference) > 0
    return ok


def _dir(label: str) -> str:
    return label.replace(" ", "_").replace("=", "-")


def _same_parquet_tables(host_python: str, env: dict, reference: Path, other: Path, names: list[str]) -> list[str]:
    """Those of ``names`` whose Parquet tables (schema, rows, values) are equal under both folders."""
    if not names:
        return []
    code = ("import json, sys, pyarrow.parquet as pq\n"
            "a, b, names = sys.argv[1], sys.argv[2], sys.argv[3:]\n"
            "print(json.dumps([n for n in names if pq.read_table(f'{a}/{n}').equals(pq.read_table(f'{b}/{n}'), "
            "check_metadata=True)]))")
    done = subprocess.run([host_python, "-c", code, str(reference), str(other), *names], capture_output=True,
                          text=True, env=env)
    return json.loads(done.stdout) if done.returncode == 0 else []


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", default="3.9,3.13,3.13t")
    ap.add_argument("--allow-missing", default="", help="versions whose missing interpreter is not a failure")
    ap.add_argument("--host-python", default=str(HOST_PYTHON if HOST_PYTHON.exists() else sys.executable),
                    help="the interpreter with npuprof installed whose outputs 3.13t's must match (.venv's)")
    ap.add_argument("--no-build", action="store_true",
                    help="do not build the free-threaded interpreter where none is found")
    args = ap.parse_args(argv)
    allowed = {v for v in args.allow_missing.split(",") if v}
    results = {}
    for version in [v for v in args.versions.split(",") if v]:
        python = find_python(version)
        if python is None and version == FREE_THREADED and not args.no_build:
            python, why = build_free_threaded()
            if python is None:
                results[version] = f"no interpreter here: {why}"
                continue
        if python is None:
            how = ("make test-pythons builds one (scripts/freethreaded_python.py)" if version == FREE_THREADED
                   else f"install one: uv python install {version}, or pyenv install {version}")
            results[version] = f"no interpreter here ({how})"
            continue
        print(f"[{version}] {python}", flush=True)
        results[version] = "passed" if run_version(version, python, args.host_python) else "FAILED"
    print("\n".join(f"python {v}: {r}" for v, r in results.items()))
    bad = [v for v, r in results.items() if r == "FAILED" or (r.startswith("no interpreter") and v not in allowed)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
