"""Built-in plugin: the ``npuprof report`` command.

Example::

    npuprof report ./prof -o report.html
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..hookspecs import hookimpl


def cmd_report(args: argparse.Namespace) -> int:
    from .page import write_report

    progress = None if args.quiet else (lambda msg: print(f"npuprof: {msg} ...", file=sys.stderr))
    report = write_report(args.path, output=args.output, backend=args.backend, workers=args.workers,
                          timeline_ranks=args.timeline, progress=progress, job=args.job,
                          advise_min_ms=_advise_min_ms(args.advise))
    print(report.path)
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for line in report.quality.lines():
        print(line, file=sys.stderr)
    return report.quality.exit_code


def _advise_min_ms(value: Any) -> Any:
    from ..validate import check_number

    return None if value is None else check_number("--advise", value, 0.0)


@hookimpl
def npuprof_add_commands(subparsers: Any) -> None:
    from ..cli_args import add_folder_argument

    r = subparsers.add_parser("report", help="write one self-contained HTML report of a run or a job")
    add_folder_argument(r, "path")
    r.add_argument("-o", "--output", default=None, help="HTML file (default <path>/npuprof_report.html; for another "
                   "tool's job ./npuprof_output/<path name>/npuprof_report.html)")
    r.add_argument("--job", default=None, metavar="NAME",
                   help="the job to report when the folder holds several (their names are listed if not given)")
    r.add_argument("--backend", choices=["process", "dask", "serial"], default="process")
    r.add_argument("--workers", type=int, default=None)
    r.add_argument("--timeline", default=None, metavar="RANKS", help="also write a merged timeline of these ranks")
    r.add_argument("--advise", type=float, default=None, metavar="MIN_MS", nargs="?", const=1.0,
                   help="end the page with npuprof advise's findings of each rank (at least MIN_MS ms at stake per "
                        "step, default 1)")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=cmd_report)
