"""The host environment's version of each named distribution, as ``name==version`` (for the arm64 wheels),
or with ``--pick NAME VERSION`` the file among the wheel names on stdin that holds that release.

Example::

    python scripts/aarch64/pins.py numpy orjson          # numpy==2.4.6 orjson==3.13.0
"""
from __future__ import annotations

import re
import sys
from importlib import metadata


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--pick"]:
        name, version = _norm(argv[1]), argv[2]
        for line in sys.stdin:
            parts = line.strip().split("-")
            if line.strip().endswith(".whl") and _norm(parts[0]) == name and parts[1] == version:
                print(line.strip())
                return 0
        print(f"no wheel of {argv[1]} {version} downloaded", file=sys.stderr)
        return 1
    print(" ".join(f"{name}=={metadata.version(name)}" for name in argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
