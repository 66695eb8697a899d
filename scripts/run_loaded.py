"""Run a command (the test suite) beside busy processes, as on a loaded machine: ``make test-loaded``.

A test that passes alone but fails here depends on timing; it is made deterministic, never given a
wider tolerance. Each busy process spins one CPU in pure Python until the command ends.

Example::

    python scripts/run_loaded.py --busy 2 --runs 3 -- python -m pytest -ra tests/integrations/pyacl/test_acl_import.py
"""
from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import time


def spin() -> None:
    while True:
        pass


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", type=int, default=2, help="busy processes beside the command (default 2)")
    ap.add_argument("--runs", type=int, default=1, help="times the command is run (default 1)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.busy < 0 or args.runs < 1:
        ap.error("give --busy >= 0, --runs >= 1 and a command after --")
    hogs = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for hog in hogs:
        hog.start()
    failed = []
    try:
        for run in range(1, args.runs + 1):
            t0 = time.monotonic()
            code = subprocess.run(command).returncode
            print(f"run_loaded: run {run}/{args.runs} beside {args.busy} busy process(es): exit {code} "
                  f"in {time.monotonic() - t0:.0f} s", flush=True)
            if code != 0:
                failed.append(run)
    finally:
        for hog in hogs:
            hog.terminate()
        for hog in hogs:
            hog.join()
    print(f"run_loaded: {args.runs - len(failed)} of {args.runs} run(s) passed"
          + (f"; failed: {', '.join(map(str, failed))}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
