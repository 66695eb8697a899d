"""The ``npuprof`` command line (msprof habits: analyse/import/export/show).

Exit codes: 0 success, the data complete; 1 unreadable data or failed analysis
(a run whose files a reader claimed but could not read, or a run with no
readable data, is never a success); 2 bad usage or configuration; 3 partial
data: analysed, and each input missing, cut, unreadable or not measured is
named with the tables it affects in a ``data quality`` section on stderr
(:mod:`npuprof.quality`). Failures print one line ``npuprof: error: <reason>``.

Reading commands (``show``) write nothing. Writing commands write npuprof's
own runs in place and another tool's runs (torch_npu, MindSpore, CANN,
traces) under ``-o`` (default ``./npuprof_output``): those are read-only input.
``export timeline|summary`` of an SS928/SS927 JOB writes msprof.pyc's layout
(the plugin's ``npuprof_tool_layout``), into the JOB only with ``--in-place`` or
for a JOB ``npuprof collect`` fetched.

Example::

    npuprof analyse ./npuprof_data
    npuprof analyse ./torch_run/rank0_ascend_pt -o ./analysed
    npuprof export summary --format json -dir ./npuprof_data
    npuprof export ascend -dir ./npuprof_data -o ./npuprof_ascend
    npuprof export db -dir ./npuprof_data -o ./npuprof_ascend_db
    npuprof show -dir ./npuprof_data
    npuprof export summary -dir ./JOBABCDEFGH --msprof ./msprof.pyc -o ./out   # SS928: msprof.pyc's files
    npuprof memory -dir ./torch_run/rank0_ascend_pt
    npuprof diff ./before ./after --fail-on 5 -o diff.html
    npuprof dynamic start ./dyn_cfg --start-step 200 --active 2
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Optional, Sequence

from .cli_args import add_folder_argument, resolve_folder_argument, take_late_folder
from .errors import CARRIED_IN_RESULT, ProfilerConfigError, ProfilerDataError, ProfilerError

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK, EXIT_DATA, EXIT_USAGE, EXIT_PARTIAL = 0, 1, 2, 3
# where the pyACL plugin's SS928/SS927 reader looks for the vendor's msprof.pyc first; --msprof sets it
MSPROF_PYC_ENV = "NPUPROF_MSPROF_PYC"
MSPROF_HELP = ("the vendor's msprof.pyc (CANN toolkit, SS928/SS927) that parses a raw JOB; default: "
               f"${MSPROF_PYC_ENV}, msprof.pyc on PATH, then the toolkit under $ASCEND_TOOLKIT_HOME")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise SystemExit(_fail(EXIT_USAGE, message))

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def,override]
        namespace, extras = super().parse_known_args(args, namespace)
        return namespace, take_late_folder(namespace, extras)


def _fail(code: int, message: str) -> int:
    print(f"npuprof: error: {message}", file=sys.stderr)
    return code


def _read(path: str, quiet: bool = True) -> list:
    """Analyse without writing (the reading commands)."""
    from .analysis.pipeline import analyse_path
    from .progress import terminal_progress

    with terminal_progress("analysing", enabled=not quiet) as progress:
        return analyse_path(path, progress=progress)


def _analyse_and_export(path: str, export_type: Optional[list], output: Optional[str], quiet: bool,
                        force: bool = False) -> list:
    from .export.writer import analyse_and_export
    from .progress import terminal_progress

    with terminal_progress("analysing", enabled=not quiet) as progress:
        return analyse_and_export(path, export_type=export_type, output=output, progress=progress, force=force,
                                  log_quality=False)


def _report_problems(results: Sequence) -> int:
    """Print every run's notes and its data quality section; the exit code the data allows
    (0 complete, 3 partial, 1 when a run holds nothing usable)."""
    for res in results:
        issues = {str(i) for i in res.quality.issues}
        for w in res.warnings:
            if w not in issues:
                print(f"warning: {w}", file=sys.stderr)
        for line in res.quality.lines():
            print(f"{res.run_dir}: {line}" if line.startswith("data quality") else line, file=sys.stderr)
    return worst_exit(res.quality.exit_code for res in results)


def worst_exit(codes: Iterable[int]) -> int:
    """The exit code of several runs' data: 1 when none is usable, 3 when some run is partial or unusable
    (the others' numbers stand; each problem is named), 0 when all are complete.

    Example::

        >>> worst_exit([0, 0]), worst_exit([0, 3]), worst_exit([0, 1]), worst_exit([1, 1])
        (0, 3, 3, 1)
    """
    codes = set(codes)
    if codes == {EXIT_DATA}:
        return EXIT_DATA
    return EXIT_PARTIAL if codes & {EXIT_PARTIAL, EXIT_DATA} else EXIT_OK


def _report_export_problems(runs: Sequence) -> int:
    """As :func:`_report_problems`, plus exporters that failed: a missing output is an error."""
    code = _report_problems([r.result for r in runs])
    for run in runs:
        for failure in run.failures:
            print(f"error: {run.result.run_dir}: {failure}", file=sys.stderr)
            code = EXIT_DATA
    return code


@contextmanager
def vendor_parser(path: Optional[str]) -> Iterator[None]:
    """``--msprof PATH``: the vendor parser for this command (the same as ``$NPUPROF_MSPROF_PYC``,
    which it sets while the command runs and restores afterwards).

    Example::

        with vendor_parser("/opt/toolkit/msprof.pyc"):
            analyse_path("JOBABCDEFGH")
    """
    if not path:
        yield
        return
    given = Path(path).expanduser()
    if not given.is_file():
        raise ProfilerConfigError("--msprof", path, "the path of an existing msprof.pyc file",
                                  hint="it is in the CANN toolkit: toolkit/tools/profiler/profiler_tool/analysis/"
                                       "msprof/msprof.pyc")
    before = os.environ.get(MSPROF_PYC_ENV)
    os.environ[MSPROF_PYC_ENV] = str(given.absolute())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(MSPROF_PYC_ENV, None)
        else:
            os.environ[MSPROF_PYC_ENV] = before


def cmd_analyse(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    runs = _analyse_and_export(args.path, args.export_type, args.output, args.quiet, args.force)
    code = _report_export_problems(runs)
    written = [run for run in runs if not run.failures]     # after an error, no success line for that run
    if not args.quiet:
        for run in written:
            print(f"{run.result.run_dir}: {len(run.result.events)} events -> {run.output_dir}")
        if written:
            counted = f"{len(written)} of {len(runs)}" if len(written) < len(runs) else f"{len(runs)}"
            print(f"analysed {counted} run(s) in {time.perf_counter() - t0:.2f} s")
    return code


def cmd_import(args: argparse.Namespace) -> int:
    runs = _analyse_and_export(args.dir, ["text", "db"], args.output, args.quiet)
    code = _report_export_problems(runs)
    if not args.quiet:
        for run in runs:
            if not run.failures:
                print(f"{run.result.run_dir}: imported {len(run.result.events)} events -> {run.output_dir}")
    return code


def cmd_export(args: argparse.Namespace) -> int:
    from .analysis.pipeline import find_runs
    from .export.csvfiles import write_csv, write_json
    from .export.tool_layout import tool_layout
    from .export.trace_json import trace_settings, write_trace
    from .export.writer import output_root
    from .analysis.analyzer import only_with_rows

    if args.what in ("ascend", "db"):
        if args.in_place:
            raise ProfilerConfigError("--in-place", True, "export timeline or summary (ascend/db copies go to -o)")
        return _export_ascend(args)
    if args.in_place and args.output:
        raise ProfilerConfigError("--in-place", True, "either -o OUT or --in-place, not both")
    root = Path(args.dir)
    layouts = {run: tool_layout(run) for run in find_runs(root)}
    if args.in_place:
        for run, layout in layouts.items():
            if layout is None:
                raise ProfilerConfigError("--in-place", str(run), "a run whose tool writes its exports into it "
                                          "(an SS928/SS927 JOB, as msprof.pyc does)",
                                          hint="another tool's run is read-only input: its exports go under -o")
    results = _read(args.dir)
    for res in results:
        layout = layouts.get(res.run_dir)
        if layout is not None:
            into_run = args.in_place or (layout.collected_by_npuprof and args.output is None)
            place = res.run_dir if into_run else output_root(res.run_dir, False, args.output, root)
            if not into_run:
                _check_outside_run(place, res.run_dir)
            for path in layout.write(res, args.what, args.format, place):
                print(path)
            continue
        place = output_root(res.run_dir, res.info.writable, args.output, root)
        if args.what == "timeline":
            print(write_trace(res.events, place / "timeline" / "msprof_timeline.json", use_gzip=args.gzip,
                              **trace_settings(res)))
        else:
            for name, table in res.tables.items():
                if not len(table) and only_with_rows(name):    # as analyse (and torch_npu): no header-only file
                    continue
                target = place / "summary" / f"{name}.{args.format}"
                print(write_csv(table, target) if args.format == "csv" else write_json(table, target))
    return _report_problems(results)


def _check_outside_run(place: Path, run_dir: Path) -> None:
    where, run = place.resolve(), run_dir.resolve()
    if where == run or run in where.parents:
        raise ProfilerConfigError("-o", str(place), "a place outside the run being read (or --in-place)",
                                  f"{run_dir} is another tool's data")


def _export_ascend(args: argparse.Namespace) -> int:
    from .export.ascend_copy import plan_ascend_export, write_ascend_copies

    if not args.output:
        raise ProfilerConfigError("-o", args.output, "an output directory for the copies (-o OUT)")
    plan = plan_ascend_export(args.dir, args.output)
    results = _read(args.dir)
    if args.what == "db":   # the same copies, with the Ascend profiler database whatever the run asked for
        for res in results:
            res.info = dataclasses.replace(res.info, export_type=tuple(dict.fromkeys((*res.info.export_type, "db"))))
    for copy in write_ascend_copies(plan, results):
        print(copy)
    return _report_problems(results)


def show_tables(result: object) -> list[str]:
    """The tables ``npuprof show`` prints for ``result``, in order: every registered analyzer's
    summary table (op_shape_statistic: empty, so not shown, without shapes), then the tables a
    reader handed over (aa_core_metrics, frequency: what an SS928/SS927 JOB's msprof.pyc measured)."""
    from .analysis.analyzer import registered_analyzers

    analyzers = registered_analyzers()
    made = {r.analyzer.table for r in analyzers}
    return [r.analyzer.table for r in analyzers if r.analyzer.summary] + \
        [name for name in result.tables if name not in made]  # type: ignore[attr-defined]


def cmd_show(args: argparse.Namespace) -> int:
    """Print the summary tables; writes nothing. Another tool's run shows that
    tool's own tables as it wrote them, npuprof's recomputation with --recompute (a plugin analyzer's
    table, which no tool writes, is npuprof's analysis either way)."""
    from .analysis.analyzer import registered_analyzers
    from .readers.tool_csv_tables import read_own_tables

    console = _table_console(args.width)
    results = _read(args.dir)
    # a third-party analyzer's table is never one the tool wrote: npuprof's analysis, beside the tool's own
    plugins = {r.analyzer.table for r in registered_analyzers() if not r.builtin}
    for res in results:
        names = show_tables(res)
        own = {} if args.recompute or res.info.writable else \
            read_own_tables(res.run_dir, [n for n in names if n not in plugins])
        source = f"tables written by {res.info.origin}" if own else "npuprof's analysis"
        if own and any(n in plugins for n in names):
            source += "; plugin analyzers' tables: npuprof's analysis"
        _print_rule(console, f"{res.run_dir.name}  ({len(res.events)} events; {source})")
        for name in names:
            table = own.get(name) if own and name not in plugins else res.tables.get(name)
            if table is not None:
                _print_table(console, table, args.limit)
    return _report_problems(results)


def cmd_memory(args: argparse.Namespace) -> int:
    """The memory peak of each run: when, in which step, what was alive, and every memory series'
    range; reads, writes nothing but the -o timeline file (outside -dir)."""
    from rich.console import Console
    from rich.table import Table as RichTable

    from .analysis.memory import check_memory_device, memory_of_device, memory_summary, memory_timeline
    from .export.memory_timeline import TIMELINE_SUFFIXES, timeline_form, write_memory_timeline
    from .validate import check_output_path

    target = None
    if args.output is not None:
        target = check_output_path("-o", args.output, file=True)
        if not timeline_form(target):
            raise ProfilerConfigError("-o", args.output, f"a file name ending in {', '.join(TIMELINE_SUFFIXES)}")
        if Path(args.dir).resolve() in (target.resolve(), *target.resolve().parents):
            raise ProfilerConfigError("-o", args.output, "a file outside -dir (the runs read are never written)")
    check_memory_device(args.device)
    results = _read(args.dir)
    if target is not None and len(results) != 1:
        raise ProfilerConfigError("-o", args.output, f"one run in -dir (it holds {len(results)}): point -dir at one")
    events = [memory_of_device(res.events, args.device) for res in results]
    if target is not None:
        timeline = memory_timeline(events[0], top=args.top)     # its summary is the run's (one run)
        summaries = [(results[0], timeline.summary)]
        written = write_memory_timeline(timeline, target, f"npuprof memory: {results[0].run_dir.name}",
                                        start_ns=_run_start_ns(results[0]))
        print(f"memory timeline: {written}", file=sys.stderr)
    else:
        summaries = [(res, memory_summary(ev, top=args.top)) for res, ev in zip(results, events)]
    if args.json:     # absolute times (epoch ns), with the run's start to relate them to
        print(json.dumps([{"run": str(res.run_dir), "run_start_ns": _run_start_ns(res), **dataclasses.asdict(s),
                           "data_quality": res.quality.to_json()}
                          for res, s in summaries], indent=2))
        return _report_problems(results)
    console = Console()
    for res, s in summaries:
        console.rule(f"{res.run_dir.name}  (memory)")
        if s.peak_mb is None:
            console.print("no allocation data (operator_memory or memory_record) in this run" +
                          (f"; {s.allocations} allocations without totals" if s.allocations else ""))
        else:
            start = _run_start_ns(res)      # times as the report shows them: from the run's first event

            def since_start(ns: int) -> str:
                return f"{(ns - start) / 1e9:.6f}"

            step = "no step recorded there" if s.peak_step is None else f"step {s.peak_step}"
            console.print(f"peak allocated: {s.peak_mb:,.3f} MB ({s.peak_source}) at {since_start(s.peak_ns)} s "
                          f"after the run's start ({step}); {s.allocations} allocations recorded")
            live = RichTable(title=f"largest allocations alive at the peak (top {args.top})")
            for col in ("Operator", "Size(KB)", "Allocated at(s)", "Released at(s)"):
                live.add_column(col)
            for a in s.live:
                live.add_row(a.name, f"{a.size_bytes / 1024:,.1f}", since_start(a.allocated_ns),
                             "-" if a.released_ns is None else since_start(a.released_ns))
            console.print(live)
            per_op = RichTable(title="alive at the peak, per operator")
            for col in ("Operator", "Allocations", "Size(KB)"):
                per_op.add_column(col)
            for name, count, size in s.live_by_operator:
                per_op.add_row(name, str(count), f"{size / 1024:,.1f}")
            console.print(per_op)
        if s.series:
            series = RichTable(title="memory series over the run")
            for col in ("Series", "Samples", "First", "Peak", "Last"):
                series.add_column(col)
            for r in s.series:
                series.add_row(r.name, str(r.samples), f"{r.first:,.3f}", f"{r.peak:,.3f}", f"{r.last:,.3f}")
            console.print(series)
    return _report_problems(results)


UNBOUNDED_WIDTH = 100_000   # "as wide as the table": a table takes its natural width, never more
RULE_WIDTH = 100             # a run's title line where the console is as wide as any table


def _table_console(width: Optional[int]) -> "Console":
    """The console tables are printed on: ``--width`` columns when given; a terminal's width; else
    (a file, a pipe, a pager) each table at its full width, its numbers never split across lines."""
    from rich.console import Console

    if width is not None:
        return Console(width=width)
    console = Console()
    return console if console.is_terminal else Console(width=UNBOUNDED_WIDTH)


def _print_rule(console: "Console", title: str) -> None:
    from rich.rule import Rule

    console.print(Rule(title), width=min(console.width, RULE_WIDTH) if console.width == UNBOUNDED_WIDTH else None)


def _columns(text: str) -> int:
    """``--width``: a number of columns, at least 40."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of columns, got {text!r}") from None
    if value < 40:
        raise argparse.ArgumentTypeError(f"expected at least 40 columns, got {value}")
    return value


def _run_start_ns(result: object) -> int:
    """The run's start as the report counts it: its first event (epoch ns; 0 for a run without events)."""
    ts = result.events["ts"]  # type: ignore[attr-defined]
    return int(ts.min()) if len(ts) else 0


def _print_table(console: object, table: object, limit: int) -> None:
    from rich.table import Table as RichTable

    if not len(table):  # type: ignore[arg-type]
        return
    rt = RichTable(title=table.name, show_lines=False)  # type: ignore[attr-defined]
    for col in table.columns:  # type: ignore[attr-defined]
        rt.add_column(col, overflow="fold")
    for row in table.head(limit):  # type: ignore[attr-defined]
        rt.add_row(*["N/A" if x is None else str(x) for x in row])     # None: not measured
    console.print(rt)  # type: ignore[attr-defined]


def cmd_doctor(args: argparse.Namespace) -> int:
    """What npuprof runs on here (``npuprof doctor``): exit 1 when the output directory cannot be written."""
    from .doctor import diagnose, doctor_json

    out = Path(args.output)
    if not out.is_dir():
        raise ProfilerConfigError("--output", args.output, "an existing directory (doctor writes a test file there)")
    report = diagnose(out)
    print(doctor_json(report) if args.json else report.text())
    return EXIT_OK if report.write.mb_per_s is not None else EXIT_DATA


def version_text() -> str:
    """What ``npuprof --version`` prints: the version, Python, platform, page size and the compiled modules."""
    import mmap
    import platform

    from . import __version__
    from .compiled import COMPILED_MODULES, compiled_status

    compiled = ", ".join(f"{name} {'loaded' if s.loaded else 'not loaded (' + s.reason + ')'}"
                         for name, s in ((n, compiled_status(n)) for n in COMPILED_MODULES))
    return (f"npuprof {__version__}\n{platform.python_implementation()} {platform.python_version()} on "
            f"{platform.system()} {platform.machine()}, page size {mmap.PAGESIZE} bytes\ncompiled: {compiled}")


class _VersionAction(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version, platform and compiled modules, and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        print(version_text())
        parser.exit()


def cmd_plugins(args: argparse.Namespace) -> int:
    from .analysis.analyzer import registered_analyzers
    from .plugins.manager import get_plugin_host

    host = get_plugin_host()
    records = host.describe()
    analyzers = registered_analyzers(host)
    if args.json:
        tables = {r.name: [a.analyzer.table for a in analyzers if a.plugin == r.name] for r in records}
        print(json.dumps([{**r.__dict__, "analyzers": tables[r.name]} for r in records], indent=2))
        return EXIT_OK
    for r in records:
        state = "loaded" if r.loaded else (r.error or "not loaded")
        kind = "built-in" if r.builtin else "third-party"
        print(f"{r.name:<12} {kind:<11} {state:<14} {r.module}  hooks: {', '.join(r.hooks) or '-'}")
    print("\nanalyzers (table, plugin, needs):")
    for a in analyzers:
        print(f"  {a.analyzer.table:<20} {a.plugin:<12} {a.analyzer.needs.describe()}"
              + (f"  - {a.analyzer.title}" if a.analyzer.title else ""))
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import main as demo_main

    return demo_main(["--output", args.output] + (["--host-only"] if args.host_only else []))


# the commands that print every run's warnings and failures from its result (see _report_problems)
_PRINTS_RESULT_PROBLEMS = (cmd_analyse, cmd_import, cmd_export, cmd_show, cmd_memory)


class _CarriedInResult(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, CARRIED_IN_RESULT, False)


def _run_command(args: argparse.Namespace) -> int:
    """Each warning printed once: a command that prints its runs' problems from their results
    (``warning:``/``skipped:``/``error:``) does not print them again as log lines."""
    resolve_folder_argument(args)
    if args.func not in _PRINTS_RESULT_PROBLEMS:
        return int(args.func(args) or 0)
    carried = _CarriedInResult()
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(carried)
    try:
        return int(args.func(args) or 0)
    finally:
        for handler in handlers:
            handler.removeFilter(carried)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="npuprof", description="Profile MindSpore, TensorFlow and pyACL runs; analyse and export.")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress")
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    a = sub.add_parser("analyse", aliases=["analyze"], help="offline analysis of a run or a parent of runs")
    add_folder_argument(a, "path")
    a.add_argument("--export-type", nargs="+", choices=["text", "db"], default=None)
    a.add_argument("-o", "--output", default=None,
                   help="where outputs of another tool's runs go (default ./npuprof_output; npuprof's own runs "
                        "are written in place unless -o is given)")
    a.add_argument("--force", action="store_true", help="read input files over the size limit")
    a.add_argument("--quiet", action="store_true")
    a.add_argument("--msprof", metavar="PATH", default=None, help=MSPROF_HELP)
    a.set_defaults(func=cmd_analyse)

    i = sub.add_parser("import", help="parse raw data (msprof habit; writes text and db outputs)")
    add_folder_argument(i, "dir")
    i.add_argument("-o", "--output", default=None, help="as for analyse")
    i.add_argument("--quiet", action="store_true")
    i.add_argument("--msprof", metavar="PATH", default=None, help=MSPROF_HELP)
    i.set_defaults(func=cmd_import)

    e = sub.add_parser("export", help="export timeline or summary files, or a copy of each run for the Ascend "
                                      "tools (trace_view.json as a JSON array)")
    e.add_argument("what", choices=["timeline", "summary", "ascend", "db"],
                   help="db: as ascend, each copy also holding ascend_{pytorch|mindspore}_profiler_{rank}.db and its "
                        "analysis database (msprof-analyze cluster -m <recipe>, MindStudio Insight)")
    add_folder_argument(e, "dir")
    e.add_argument("-o", "--output", default=None,
                   help="ascend/db: directory for the copies (outside -dir); timeline/summary: where another "
                        "tool's runs get theirs (default ./npuprof_output)")
    e.add_argument("--format", choices=["csv", "json"], default="csv")
    e.add_argument("--gzip", action="store_true", help="gzip the timeline (npuprof's msprof_timeline.json)")
    e.add_argument("--in-place", action="store_true",
                   help="timeline/summary of an SS928/SS927 JOB: write them into the JOB itself, as msprof.pyc does "
                        "(default: under -o, or into the JOB when npuprof collect fetched it)")
    e.add_argument("--msprof", metavar="PATH", default=None, help=MSPROF_HELP)
    e.set_defaults(func=cmd_export)

    s = sub.add_parser("show", help="print the summary tables")
    add_folder_argument(s, "dir")
    s.add_argument("--limit", type=int, default=15)
    s.add_argument("--width", type=_columns, default=None,
                   help="columns to fit the tables in (default: the terminal's; when not a terminal, each "
                        "table's full width)")
    s.add_argument("--recompute", action="store_true",
                   help="for another tool's run, show npuprof's recomputed tables instead of the tool's own")
    s.add_argument("--msprof", metavar="PATH", default=None, help=MSPROF_HELP)
    s.set_defaults(func=cmd_show)

    m = sub.add_parser("memory", help="the memory peak: when, in which step, what was alive; writes nothing "
                                      "unless -o")
    add_folder_argument(m, "dir")
    m.add_argument("--top", type=int, default=10, help="allocations listed (default 10)")
    m.add_argument("-o", "--output", default=None,
                   help="also write the memory timeline of the run: FILE.html (a page with the plot), .json or "
                        ".json.gz (its data); outside -dir")
    m.add_argument("--device", default=None, help='only this device\'s memory data: "cpu", "npu" or "npu:N"')
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_memory)

    pl = sub.add_parser("plugins", help="list loaded and available plugins")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plugins)

    dr = sub.add_parser("doctor", help="what npuprof runs on here: platform, page size, compiled modules (and why "
                                       "not), frameworks, the output directory's write speed")
    dr.add_argument("-o", "--output", default=".", help="directory whose write speed is measured (default: .)")
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(func=cmd_doctor)

    d = sub.add_parser("demo", help="run the embedded demo")
    d.add_argument("--output", default="./npuprof_demo")
    d.add_argument("--host-only", action="store_true")
    d.set_defaults(func=cmd_demo)

    from .dynamic_profile.commands import add_commands as add_dynamic_commands
    from .plugins.manager import get_plugin_host

    add_dynamic_commands(sub)
    get_plugin_host().call("npuprof_add_commands", subparsers=sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    Called without ``argv`` (the ``npuprof`` program, ``python -m npuprof``) the process ends when this returns:
    every object left is then frozen out of the garbage collector, whose collections at interpreter exit
    would otherwise walk all of them (0.04-0.17 s of a cluster analysis's serial end on a 2-core machine).

    Example::

        >>> main(["plugins"])  # doctest: +SKIP
        0
    """
    code = _main(argv)
    if argv is None:
        import gc

        gc.freeze()
    return code


def _main(argv: Optional[Sequence[str]] = None) -> int:
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
        with vendor_parser(getattr(args, "msprof", None)):
            return _run_command(args)
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
