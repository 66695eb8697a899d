"""``make test-pythons``: the smoke subset of the suite on the oldest and newest Python npuprof claims.

    python scripts/test_pythons.py [--versions 3.9,3.13,3.13t]

For each version: an interpreter is found (``pythonX.Y`` on PATH, then ``uv python find``, then
pyenv's versions), a venv ``.venv-pyX.Y`` made with it, npuprof installed there from this tree as a
user installs it (``pip install .``: its compiled modules built for that Python), and the smoke
subset run against that install: the C-vs-Python parity tests, the private-API fallbacks, doctor.
A free-threaded build (``3.13t``) gets the import-and-record check: npuprof imports, records from
several threads and reads the events back (its compiled modules keep the GIL on while loaded).

A version with no interpreter here is reported as such (with how to get one) and fails the run
unless ``--allow-missing`` names it.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
SMOKE_TESTS = ["tests/performance/test_hotpath.py", "tests/performance/test_rowrender.py", "tests/platform/test_private_api.py", "tests/platform/test_doctor.py"]
TOOLS = ["setuptools>=61", "pytest>=8", "pytest-timeout>=2.3", "hypothesis>=6.100"]

RECORD = r'''
import sys, sysconfig, tempfile, threading
from pathlib import Path
import npuprof
from npuprof import mstx, record_function
from npuprof.rawstore import read_raw_dir
out = Path(tempfile.mkdtemp())
prof = npuprof.Profiler(output_path=str(out), activities=["CPU"])
def work(i):
    for _ in range(100):
        with record_function(f"t{i}"):
            mstx.mark("m")
threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
prof.stop()
table, _ = read_raw_dir(prof.saved_runs[0] / "NPUPROF")
names = table.column_strings("name")
assert sum(n.startswith("t") for n in names) == 400 and names.count("m") == 400, names[:10]
gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
print(f"recorded 800 events from 4 threads; free-threaded build: {bool(sysconfig.get_config_var('Py_GIL_DISABLED'))}, "
      f"GIL on: {gil}")
'''


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


def run_version(version: str, python: str) -> bool:
    venv = ROOT / f".venv-py{version}"
    vpy = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "NPUPROF_PURE_PYTHON")}
    steps = []
    if not vpy.exists():
        steps.append([python, "-m", "venv", str(venv)])
    # this tree's npuprof, rebuilt each time (--no-cache-dir: pip's wheel cache would keep an older build)
    steps += [[str(vpy), "-m", "pip", "install", "-q", *TOOLS],
              [str(vpy), "-m", "pip", "install", "-q", "--no-cache-dir", "."]]
    free = version.endswith("t")
    steps.append([str(vpy), "-c", RECORD] if free else
                 [str(vpy), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *SMOKE_TESTS])
    for step in steps:
        print(f"[{version}] {' '.join(step[:6])}{' ...' if len(step) > 6 else ''}", flush=True)
        if subprocess.run(step, cwd=ROOT, env=env).returncode != 0:
            return False
    return True


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", default="3.9,3.13,3.13t")
    ap.add_argument("--allow-missing", default="", help="versions whose missing interpreter is not a failure")
    args = ap.parse_args(argv)
    allowed = {v for v in args.allow_missing.split(",") if v}
    results = {}
    for version in [v for v in args.versions.split(",") if v]:
        python = find_python(version)
        if python is None:
            results[version] = "no interpreter here (install one: uv python install " + version + ")"
            continue
        results[version] = "passed" if run_version(version, python) else "FAILED"
    print("\n".join(f"python {v}: {r}" for v, r in results.items()))
    bad = [v for v, r in results.items() if r == "FAILED" or (r.startswith("no interpreter") and v not in allowed)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
