"""The ``npuprof`` command line (msprof habits: analyse/import/export/show).

Exit codes: 0 success, 1 unreadable data or failed analysis, 2 bad usage or
configuration. Failures print one line ``npuprof: error: <reason>``.

Example::

    npuprof analyse ./npuprof_data
    npuprof export summary --format json -dir ./npuprof_data
    npuprof export ascend -dir ./npuprof_data -o ./npuprof_ascend
    npuprof show -dir ./npuprof_data
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Optional, Sequence

from .errors import ProfilerConfigError, ProfilerDataError, ProfilerError

EXIT_OK, EXIT_DATA, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise SystemExit(_fail(EXIT_USAGE, message))


def _fail(code: int, message: str) -> int:
    print(f"npuprof: error: {message}", file=sys.stderr)
    return code


def _analyse(path: str, export_type: Optional[list], quiet: bool, force: bool = False) -> list:
    from .analysis.pipeline import analyse_path
    from .progress import terminal_progress

    with terminal_progress("analysing", enabled=not quiet) as progress:
        return analyse_path(path, export_type=export_type, progress=progress, force=force)


def cmd_analyse(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    results = _analyse(args.path, args.export_type, args.quiet, args.force)
    if not args.quiet:
        for res in results:
            for w in res.warnings:
                print(f"warning: {w}", file=sys.stderr)
            print(f"{res.run_dir}: {len(res.events)} events -> {res.run_dir / 'ASCEND_PROFILER_OUTPUT'}")
        print(f"analysed {len(results)} run(s) in {time.perf_counter() - t0:.2f} s")
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    results = _analyse(args.dir, ["text", "db"], args.quiet)
    if not args.quiet:
        for res in results:
            print(f"{res.run_dir}: imported {len(res.events)} events")
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from .export.csvfiles import write_csv, write_json
    from .export.trace_json import write_trace

    if args.what == "ascend":
        return _export_ascend(args)
    if args.output is not None:
        raise ProfilerConfigError("-o", args.output, "no value with `export timeline|summary`",
                                  "those write next to each run; -o is for `export ascend`")
    results = _analyse(args.dir, None, True)
    for res in results:
        if args.what == "timeline":
            out = write_trace(res.events, res.run_dir / "timeline" / "msprof_timeline.json", rank=res.rank,
                              use_gzip=args.gzip)
            print(out)
        else:
            for name, table in res.tables.items():
                target = res.run_dir / "summary" / f"{name}.{args.format}"
                print(write_csv(table, target) if args.format == "csv" else write_json(table, target))
    return EXIT_OK


def _export_ascend(args: argparse.Namespace) -> int:
    from .export.ascend_copy import plan_ascend_export, write_ascend_copies

    if not args.output:
        raise ProfilerConfigError("-o", args.output, "an output directory for the copies (-o OUT)")
    plan = plan_ascend_export(args.dir, args.output)
    for copy in write_ascend_copies(plan, _analyse(args.dir, None, True)):
        print(copy)
    return EXIT_OK


# op_shape_statistic: torch's key_averages(group_by_input_shape=True); empty (not shown) without shapes
SHOW_TABLES = ("step_trace_time", "op_statistic", "op_shape_statistic", "api_statistic", "range_statistic",
               "host_usage")


def cmd_show(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table as RichTable

    console = Console()
    for res in _analyse(args.dir, None, True):
        console.rule(f"{res.run_dir.name}  ({len(res.events)} events)")
        for name in SHOW_TABLES:
            table = res.tables[name]
            if not len(table):
                continue
            rt = RichTable(title=name, show_lines=False)
            for col in table.columns:
                rt.add_column(col, overflow="fold")
            for row in table.head(args.limit):
                rt.add_row(*[str(x) for x in row])
            console.print(rt)
    return EXIT_OK


def cmd_plugins(args: argparse.Namespace) -> int:
    from .plugins.manager import get_plugin_host

    records = get_plugin_host().describe()
    if args.json:
        print(json.dumps([r.__dict__ for r in records], indent=2))
        return EXIT_OK
    for r in records:
        state = "loaded" if r.loaded else (r.error or "not loaded")
        kind = "built-in" if r.builtin else "third-party"
        print(f"{r.name:<12} {kind:<11} {state:<14} {r.module}  hooks: {', '.join(r.hooks) or '-'}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import main as demo_main

    return demo_main(["--output", args.output] + (["--host-only"] if args.host_only else []))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="npuprof", description="Profile MindSpore, TensorFlow and pyACL runs; analyse and export.")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    a = sub.add_parser("analyse", aliases=["analyze"], help="offline analysis of a run or a parent of runs")
    a.add_argument("path")
    a.add_argument("--export-type", nargs="+", choices=["text", "db"], default=None)
    a.add_argument("--force", action="store_true", help="read input files over the size limit")
    a.add_argument("--quiet", action="store_true")
    a.set_defaults(func=cmd_analyse)

    i = sub.add_parser("import", help="parse raw data (msprof habit; writes text and db outputs)")
    i.add_argument("-dir", "--dir", required=True)
    i.add_argument("--quiet", action="store_true")
    i.set_defaults(func=cmd_import)

    e = sub.add_parser("export", help="export timeline or summary files, or a copy of each run for the Ascend "
                                      "tools (trace_view.json as a JSON array)")
    e.add_argument("what", choices=["timeline", "summary", "ascend"])
    e.add_argument("-dir", "--dir", required=True)
    e.add_argument("-o", "--output", default=None, help="ascend: directory for the copies (outside -dir)")
    e.add_argument("--format", choices=["csv", "json"], default="csv")
    e.add_argument("--gzip", action="store_true", help="gzip the timeline")
    e.set_defaults(func=cmd_export)

    s = sub.add_parser("show", help="print the summary tables")
    s.add_argument("-dir", "--dir", required=True)
    s.add_argument("--limit", type=int, default=15)
    s.set_defaults(func=cmd_show)

    pl = sub.add_parser("plugins", help="list loaded and available plugins")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plugins)

    d = sub.add_parser("demo", help="run the embedded demo")
    d.add_argument("--output", default="./npuprof_demo")
    d.add_argument("--host-only", action="store_true")
    d.set_defaults(func=cmd_demo)

    from .plugins.manager import get_plugin_host

    get_plugin_host().call("npuprof_add_commands", subparsers=sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except ProfilerConfigError as e:
        return _fail(EXIT_USAGE, str(e))
    except ProfilerDataError as e:
        return _fail(EXIT_DATA, str(e))
    except ProfilerError as e:
        return _fail(EXIT_DATA, str(e))
    except KeyboardInterrupt:
        return _fail(130, "interrupted")
    except OSError as e:
        return _fail(EXIT_DATA, f"{getattr(e, 'filename', '') or ''} {e.strerror or e}".strip())
