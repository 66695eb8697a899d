"""The aarch64 wheel for ``make dist``: built by the arm64 interpreter's own ``pip wheel`` under qemu-user
(Debian's arm64 CPython 3.11 from setup.sh), the C modules cross-built by ``aarch64-linux-gnu-gcc`` against
the arm64 root's libc and Python headers, from an unpacked sdist.

Prints, on its last line, JSON: ``{"wheel": PATH, "library_dirs": [...]}`` (the arm64 root's library folders,
for ``auditwheel repair --ldpaths``). The wheel keeps pip's plain ``linux_aarch64`` tag; scripts/dist.py
retags it. Exit 1 with the reason when the environment cannot be set up or the build fails.

Example::

    .venv/bin/python scripts/aarch64/wheel.py /tmp/npuprof-0.1.0 dist/
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check  # noqa: E402  (scripts/aarch64/check.py: the environment and its interpreter)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path, help="an unpacked npuprof sdist (setuptools writes build/ there)")
    ap.add_argument("out", type=Path, help="folder the wheel is written to")
    ap.add_argument("--host-python", default=sys.executable, help="the x86 interpreter whose package versions "
                    "setup.sh pins")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    arm = check.setup(args.host_python)
    before = set(out.glob("*.whl"))
    done = check.step([arm.python, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                       "--no-cache-dir", "-w", out, "."], env=arm.build_env(), cwd=args.source.resolve())
    made = sorted(w for w in set(out.glob("*.whl")) - before if w.name.endswith("-linux_aarch64.whl"))
    if done.returncode != 0 or len(made) != 1:
        raise SystemExit(f"aarch64: pip wheel failed (exit {done.returncode}, made {[w.name for w in made]})")
    print(json.dumps({"wheel": str(made[0]), "library_dirs": [str(d) for d in arm.library_dirs()]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
