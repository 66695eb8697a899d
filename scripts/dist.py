"""``make dist``: the sdist and the wheels, built by the project's own build configuration.

    python scripts/dist.py [--out dist]

1. the sdist, through setuptools' PEP 517 backend (pyproject.toml + setup.py), with the setuptools
   installed here: no network, no build isolation (setuptools >= 61; setup.py names the minimum);
2. from that sdist, as a user's ``pip install`` builds it: the platform wheel (the compiled modules
   inside, tagged for this Python and machine; ``auditwheel repair`` retags it manylinux where
   auditwheel is installed, and says so where it is not) and the pure wheel (``NPUPROF_PURE_WHEEL=1``:
   no compiled module, tagged ``py3-none-any``) for hosts that cannot build them;
3. ``NPUPROF_DIST_HOOK``: a command run last with ``NPUPROF_DIST_OUT`` set to the output directory,
   for wheels built elsewhere (the aarch64 cross-build); what it leaves there is listed too.

Each wheel is checked to carry ``py.typed`` and the ``.pyi`` stubs, the platform wheel its compiled
modules and the pure wheel none. tests/platform/test_dist.py installs each into a fresh venv.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TYPED = ("npuprof/py.typed", "npuprof/_hotpath.pyi", "npuprof/export/_rowrender.pyi")
COMPILED = ("npuprof/_hotpath", "npuprof/export/_rowrender")


def _backend(hook: str, source: Path, out: Path, env: dict) -> Path:
    """Run setuptools' PEP 517 hook (build_sdist or build_wheel) in ``source``; the file it made."""
    code = ("import sys, setuptools.build_meta as backend; "
            f"print(backend.{hook}(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-c", code, str(out)], cwd=source, env=env, capture_output=True, text=True)
    sys.stderr.write("".join(line + "\n" for line in done.stderr.splitlines() if line.startswith("WARNING: npuprof")))
    if done.returncode != 0:
        sys.exit(f"dist: {hook} failed in {source}:\n{done.stderr[-4000:]}")
    return out / done.stdout.strip().splitlines()[-1]


def _check_wheel(wheel: Path, pure: bool) -> str:
    names = zipfile.ZipFile(wheel).namelist()
    missing = [t for t in TYPED if t not in names]
    if missing:
        sys.exit(f"dist: {wheel.name} lacks {missing}")
    compiled = [n for n in names if n.endswith(".so") or n.endswith(".pyd")]
    if pure and (compiled or not wheel.name.endswith("-py3-none-any.whl")):
        sys.exit(f"dist: the pure wheel {wheel.name} holds {compiled} or is not tagged py3-none-any")
    if not pure and not all(any(n.startswith(c) for n in compiled) for c in COMPILED):
        sys.exit(f"dist: the platform wheel {wheel.name} lacks a compiled module (has {compiled}); "
                 "is there a C compiler and Python headers here?")
    return f"{wheel.name}: {len(names)} files" + (f", compiled: {', '.join(sorted(compiled))}" if compiled else ", pure")


def _manylinux(wheel: Path, out: Path) -> Path:
    """The wheel retagged manylinux by auditwheel, where auditwheel is installed; else the wheel."""
    try:
        import auditwheel  # noqa: F401
    except ImportError:
        print(f"dist: auditwheel is not installed: {wheel.name} keeps its plain linux tag "
              "(pip install auditwheel for a manylinux one)")
        return wheel
    fixed = out / "manylinux"
    done = subprocess.run([sys.executable, "-m", "auditwheel", "repair", "-w", str(fixed), str(wheel)],
                          capture_output=True, text=True)
    made = sorted(fixed.glob("*.whl"))
    if done.returncode != 0 or not made:
        print(f"dist: auditwheel could not retag {wheel.name}: {done.stderr.strip().splitlines()[-1:]}")
        return wheel
    wheel.unlink()
    target = out / made[0].name
    shutil.move(str(made[0]), target)
    shutil.rmtree(fixed)
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "dist")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "NPUPROF_PURE_WHEEL"}
    sdist = _backend("build_sdist", ROOT, out, env)
    lines = [f"{sdist.name}: sdist"]
    with tempfile.TemporaryDirectory(prefix="npuprof-dist-") as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp)
        source = next(Path(tmp).iterdir())
        platform_wheel = _manylinux(_backend("build_wheel", source, out, env), out)
        lines.append(_check_wheel(platform_wheel, pure=False))
        shutil.rmtree(source / "build", ignore_errors=True)   # the pure wheel must not pick up the compiled build
        pure_wheel = _backend("build_wheel", source, out, {**env, "NPUPROF_PURE_WHEEL": "1"})
        lines.append(_check_wheel(pure_wheel, pure=True))
    hook = os.environ.get("NPUPROF_DIST_HOOK", "")
    if hook:
        before = set(out.glob("*.whl"))
        done = subprocess.run(hook, shell=True, cwd=ROOT, env={**env, "NPUPROF_DIST_OUT": str(out)})
        if done.returncode != 0:
            sys.exit(f"dist: NPUPROF_DIST_HOOK ({hook}) failed with exit {done.returncode}")
        lines += [f"{w.name}: from NPUPROF_DIST_HOOK" for w in sorted(set(out.glob("*.whl")) - before)]
    print("\n".join(f"dist: {line}" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
