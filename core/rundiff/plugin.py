"""Built-in plugin: the ``npuprof diff BASE NEW`` command, a regression gate for CI.

Exit codes: 0 no regression past ``--fail-on`` (or no ``--fail-on``); 1 the
metric regressed by more than ``--fail-on`` percent with 95 % confidence, or a
side could not be read; 2 usage; 3 either side's data is partial (its data
quality issues are printed) and no regression past ``--fail-on`` (a failed gate
is reported as such first).

Example::

    npuprof diff ./nightly_prev ./nightly --fail-on 5 -o diff.html
    npuprof diff ./job ./job --base-rank 0 --new-rank 3 --by kernel --top 20 --json
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import ProfilerConfigError
from ..hookspecs import hookimpl

EXIT_OK, EXIT_REGRESSION, EXIT_PARTIAL = 0, 1, 3
OUTPUT_SUFFIXES = (".html", ".json")


def _check_output(value: Any, sides: list[str]) -> Path:
    from ..validate import check_output_path

    target = check_output_path("-o", value, file=True)
    if target.suffix.lower() not in OUTPUT_SUFFIXES:
        raise ProfilerConfigError("-o", value, "a file name ending in .html or .json")
    for side in sides:
        root = Path(side).resolve()
        if root in target.resolve().parents or root == target.resolve():
            raise ProfilerConfigError("-o", value, f"a file outside {side} (the runs compared are never written)")
    return target


def _fail_on(value: Any) -> float:
    from ..validate import check_number

    return check_number("--fail-on", value, 0.0)


def cmd_diff(args: argparse.Namespace) -> int:
    from ..rundiff import diff_options, diff_paths

    target = _check_output(args.output, [args.base, args.new]) if args.output else None
    fail_on = _fail_on(args.fail_on) if args.fail_on is not None else None
    diff_options(steps=args.steps, base_steps=args.base_steps, new_steps=args.new_steps, by=args.by, top=args.top,
                 metric=args.metric, name_map=args.map, normalise=not args.exact_names)   # checked before reading
    result = diff_paths(args.base, args.new, rank=args.rank, base_rank=args.base_rank, new_rank=args.new_rank,
                        force=args.force, steps=args.steps, base_steps=args.base_steps, new_steps=args.new_steps,
                        by=args.by, top=args.top, metric=args.metric, name_map=args.map,
                        normalise=not args.exact_names)
    if target is not None:
        if target.suffix.lower() == ".html":
            from .page import write_diff_page

            write_diff_page(result, target)
        else:
            from ..fileio import atomic_write

            atomic_write(target, result.to_json() + "\n")
        print(f"diff: {target}", file=sys.stderr)
    print(result.to_json() if args.json else result.table())
    for side, quality in result.data_quality.items():
        for s in quality.issues:
            print(f"data quality: {side}: {s}", file=sys.stderr)
    return exit_code(result, fail_on)


def exit_code(result: Any, fail_on: Any) -> int:
    """1 when the metric regressed past ``fail_on`` % (95 % confidence), else 3 when a side is partial, else 0."""
    if fail_on is not None and result.regressed_beyond(fail_on):
        return EXIT_REGRESSION
    return EXIT_PARTIAL if result.partial else EXIT_OK


@hookimpl
def npuprof_add_commands(subparsers: Any) -> None:
    d = subparsers.add_parser("diff", help="compare two runs or jobs (any format npuprof reads); a regression gate "
                                           "with --fail-on")
    d.add_argument("base", help="the base run, job or trace file")
    d.add_argument("new", help="the new run, job or trace file")
    d.add_argument("--steps", default=None, metavar="A-B", help="steps compared on both sides (inclusive)")
    d.add_argument("--base-steps", default=None, metavar="A-B", help="steps of BASE (overrides --steps)")
    d.add_argument("--new-steps", default=None, metavar="A-B", help="steps of NEW (overrides --steps)")
    d.add_argument("--rank", type=int, default=None, help="the rank compared on both sides (default: the lowest)")
    d.add_argument("--base-rank", type=int, default=None, help="the rank of BASE")
    d.add_argument("--new-rank", type=int, default=None, help="the rank of NEW")
    d.add_argument("--by", default="all", help="rows per op, kernel, api, range, communication, step, or all "
                                               "(several joined by commas)")
    d.add_argument("--top", type=int, default=10, help="top contributors listed (default 10)")
    d.add_argument("--fail-on", type=float, default=None, metavar="PCT",
                   help="exit 1 when the metric regressed by more than PCT %% with 95 %% confidence")
    d.add_argument("--metric", default="step", help="step (default), a breakdown column (computing, free, ...) or "
                                                    "BY:NAME, e.g. range:forward")
    d.add_argument("--map", default=None, metavar="FILE.json", help="base name -> new name, for names no rule "
                                                                     "matches (cross-hardware diffs)")
    d.add_argument("--exact-names", action="store_true", help="match names exactly (and by --map) only, without "
                                                                   "the normalisation (HTA's TraceDiff without short names)")
    d.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    d.add_argument("-o", "--output", default=None, metavar="FILE.html|FILE.json",
                   help="also write the page (.html) or the JSON (.json); outside both runs")
    d.add_argument("--force", action="store_true", help="read input files over the size limit")
    d.set_defaults(func=cmd_diff)
