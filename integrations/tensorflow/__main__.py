"""Run a TensorFlow script with npuprof's TensorFlow integration activated.

``python -m npuprof.integrations.tensorflow [options] script.py [args...]``
runs ``script.py`` unchanged after :func:`~npuprof.integrations.tensorflow.activate`:
sessions whose config carries the NpuOptimizer ``profiling_mode`` are
profiled. With ``PROFILING_MODE=true`` in the environment (Ascend's job-wide
switch, as ``npuprof collect --via env`` sets it) one profiler configured
from ``PROFILING_OPTIONS`` covers the whole script, including TF2 / Keras
code; each ``sess.run`` of a session is one of its steps. Run directories
are analysed when the script ends.

Exit codes: the script's own; 2 for invalid options (one line on stderr).

Example::

    PROFILING_MODE=true PROFILING_OPTIONS='{"output":"./prof","task_time":"on"}' \\
        python -m npuprof.integrations.tensorflow train.py --epochs 1
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from typing import Optional, Sequence

from npuprof.errors import ProfilerConfigError


def _schedule(text: str):  # noqa: ANN202 - argparse type
    from npuprof import schedule

    try:
        parts = [int(p) for p in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("expected wait,warmup,active[,repeat[,skip_first]]") from None
    if not 3 <= len(parts) <= 5:
        raise argparse.ArgumentTypeError("expected wait,warmup,active[,repeat[,skip_first]]")
    keys = ("wait", "warmup", "active", "repeat", "skip_first")
    try:
        return schedule(**dict(zip(keys, parts)))
    except ProfilerConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m npuprof.integrations.tensorflow",
                                 description="run a TensorFlow script with npuprof profiling activated")
    ap.add_argument("--schedule", type=_schedule, default=None, metavar="W,WU,A[,R[,S]]",
                    help="npuprof schedule over profiled sess.run calls (default: all)")
    ap.add_argument("--no-analyse", action="store_true", help="leave raw data, do not export tables")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)

    from . import activate, deactivate
    from .sessrun import profiling_from_config

    analyse = not args.no_analyse
    job = None
    try:
        activate(schedule=args.schedule, analyse=analyse)
        options = profiling_from_config(None)  # PROFILING_MODE / PROFILING_OPTIONS
        if options is not None:
            from .profiler import Profiler

            job = Profiler(profiling_options=options, schedule=args.schedule, start_profile=False)
            job.npuprof_steps_from_sessions = True
            job.start()
    except ProfilerConfigError as e:
        deactivate()
        print(f"npuprof: error: {e}", file=sys.stderr)
        return 2
    sys.argv = [args.script, *args.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    code = 0
    try:
        runpy.run_path(args.script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        deactivate()
        if job is not None:
            job.stop()
            if analyse and job.saved_runs:
                job.analyse()
            for run in job.saved_runs:
                print(f"npuprof: {run}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
