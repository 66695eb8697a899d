"""Built-in plugin: the ``npuprof cluster``, ``npuprof timeline`` and ``npuprof
xplane`` commands (a rank's own communication files are written by the
exporters plugin, :mod:`npuprof.export.communication_json`).

Example::

    npuprof cluster ./prof --backend dask --timeline 0,3 --gzip
    npuprof timeline ./prof --ranks 0,1 --steps 3-4 --min-dur 10us --gzip
    npuprof xplane ./prof/host_1_20240101000000000_ascend_ms --logdir ./tb
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any, Optional

from ..hookspecs import hookimpl
from ..quality import DataQuality

def _progress(quiet: bool) -> Any:
    if quiet:
        return None
    return lambda msg: print(f"npuprof: {msg} ...", file=sys.stderr)


class _LazyBar:
    """A terminal progress bar (:func:`npuprof.progress.terminal_progress`: on a terminal only) that
    starts at its first call, so that its timer thread starts after the pool forked its workers."""

    def __init__(self, stack: contextlib.ExitStack, enabled: bool) -> None:
        self._stack, self._enabled, self._bar = stack, enabled, None

    def __call__(self, message: str, done: Optional[int] = None, total: Optional[int] = None) -> None:
        if self._enabled and self._bar is None:
            from ..progress import terminal_progress

            self._bar = self._stack.enter_context(terminal_progress("cluster"))
            self._enabled = self._bar is not None
        if self._bar is not None:
            self._bar(message, done, total)


def cmd_cluster(args: argparse.Namespace) -> int:
    from .analyse import cluster_analyse
    from .ranks import ranks_phrase
    from .tool_summary import OWN_RUN

    formats = tuple(f for f in ("csv", "json", "parquet") if not (f == "parquet" and args.no_parquet))
    backend = args.backend or ("dask" if args.scheduler else "process")
    with contextlib.ExitStack() as stack:
        bar = _LazyBar(stack, enabled=not args.quiet)
        res = cluster_analyse(args.path, output=args.output, backend=backend, scheduler=args.scheduler,
                              workers=args.workers, ranks=args.ranks, timeline_ranks=args.timeline, steps=args.steps,
                              min_dur=args.min_dur, use_gzip=args.gzip, rank_traces=args.traces, align=args.align,
                              formats=formats, progress=_progress(args.quiet), job=args.job,
                              tool_tables=not args.recompute, rank_series=False, progress_bar=bar)
    quality = res.quality
    if args.json:
        print(json.dumps(res.summary(), indent=2))
        return quality.exit_code
    ranks = [s.rank for s in res.summaries]
    job = f" of job {res.job.name!r}" if res.job is not None and res.job.name != "." else ""
    print(f"{len(ranks)} ranks{job} analysed on {res.backend} in {res.seconds:.2f} s -> {res.output_dir}")
    if res.tool_table_ranks:
        print(f"{ranks_phrase(res.tool_table_ranks)} summarised from the tool's own tables "
              f"(--recompute parses their events)")
    reasons: dict = {}
    for r, why in res.parsed.items():       # with --recompute every rank is parsed: nothing to explain
        if not args.recompute and why != OWN_RUN:
            reasons.setdefault(why, []).append(r)
    for why, ranks in reasons.items():
        print(f"{ranks_phrase(ranks)}: events parsed ({why})")
    if res.slow["applicable"]:
        print(f"slow ranks: {res.slow['slow_ranks'] or 'none'}  (rule: {res.slow['rule']})")
    else:
        print(f"slow-rank test not applied: {res.slow['note']}")
    if args.explain:
        _explain(res)
    if res.matrix:
        print(f"communication matrix: {len(res.tables['cluster_communication_matrix'])} links")
    if res.merged_timeline:
        print(f"merged timeline: {res.merged_timeline}")
    if res.traces:
        print(f"per-rank traces: {res.output_dir / 'traces'}")
    for t in res.analyzer_tables:
        print(f"{t.merged}: analyzer {t.table!r} of plugin {t.plugin!r}, {ranks_phrase(list(t.ranks))}")
    for w in res.analyzer_warnings:
        print(f"warning: {w}", file=sys.stderr)
    for line in quality.lines():
        print(line, file=sys.stderr)
    return quality.exit_code


def _explain(res: Any) -> None:
    """Why each slow rank is slow (npuprof advise's slow_rank rule over the job's runs)."""
    from rich.console import Console

    from ..advise import explain_job
    from ..advise.page import print_advice

    runs = {s.rank: s.run_dirs[0] for s in res.summaries if s.run_dirs}
    print_advice([explain_job(f"job: {res.job.name if res.job else '.'}", runs)], Console())


def cmd_timeline(args: argparse.Namespace) -> int:
    from ..export.filters import file_size_report, human_bytes, parse_duration_ns, parse_steps, size_report
    from .alignment import align_ranks
    from .executors import Executor
    from .ranks import discover_ranks, parse_rank_list
    from .timeline import write_merged
    from .worker import RankTask, rank_events, summarise_rank

    steps = parse_steps("steps", args.steps)
    min_dur_ns = parse_duration_ns("min_dur", args.min_dur)
    found = discover_ranks(args.path, parse_rank_list("ranks", args.ranks))
    tasks = [RankTask(rank=r, run_dirs=tuple(str(d) for d in dirs)) for r, dirs in found.items()]
    with Executor(args.backend, workers=args.workers) as ex:
        align = {"ranks": {}}
        if len(tasks) > 1:
            align = align_ranks(ex.map(summarise_rank, tasks), args.align)
        parts = ex.map(rank_events, tasks, steps, min_dur_ns)
    from ..events import EventTable

    est = size_report(EventTable.concat([p[1] for p in parts]))
    out = Path(args.output) if args.output else Path(args.path) / (
        "timeline_" + "_".join(f"r{t.rank}" for t in tasks[:8]) + ".json" + (".gz" if args.gzip else ""))
    use_gzip = args.gzip or str(out).endswith(".gz")
    path = write_merged(parts, align, out, use_gzip)
    actual = file_size_report([path])[0]
    quality = DataQuality(issues=[i for p in parts for i in p[3]])
    report = {"output": str(path), "ranks": [t.rank for t in tasks], "estimate": est, "written": actual,
              "data_quality": quality.to_json()}
    if args.size_report_json:
        print(json.dumps(report, indent=2))
        return quality.exit_code
    print(f"{path}: {est['events']} events, {human_bytes(actual['bytes'])} on disk"
          + (f" ({human_bytes(actual['uncompressed_bytes'])} uncompressed)" if "uncompressed_bytes" in actual else ""))
    for kind, row in sorted(est["by_kind"].items(), key=lambda kv: -kv[1]["bytes"]):
        print(f"  {kind:<8} {row['events']:>10} events  ~{human_bytes(row['bytes'])}")
    for line in quality.lines():
        print(line, file=sys.stderr)
    return quality.exit_code


def cmd_xplane(args: argparse.Namespace) -> int:
    from ..cli import worst_exit
    from ..export.xplane import export_tensorboard

    qualities: list[DataQuality] = []
    paths = export_tensorboard(args.path, args.logdir, run_name=args.run, qualities=qualities)
    for p in paths:
        print(p)
    print(f"view with: tensorboard --logdir {args.logdir}   (or: xprof --logdir={args.logdir})")
    for quality in qualities:
        for line in quality.lines():
            print(line, file=sys.stderr)
    return worst_exit(q.exit_code for q in qualities)


@hookimpl
def npuprof_add_commands(subparsers: Any) -> None:
    from ..cli_args import add_folder_argument

    c = subparsers.add_parser("cluster", help="analyse all ranks of a multi-rank job (process pool or Dask)")
    add_folder_argument(c, "path")
    c.add_argument("--job", default=None, metavar="NAME",
                   help="the job to analyse when the folder holds several (their names are listed if not given)")
    c.add_argument("-o", "--output", default=None, help="output directory (default <path>/npuprof_cluster; for another tool's job ./npuprof_output/<path name>/npuprof_cluster)")
    c.add_argument("--backend", choices=["process", "dask", "serial"], default=None,
                   help="where per-rank work runs (default: process, or dask when --scheduler is given)")
    c.add_argument("--scheduler", default=None, help="Dask scheduler address (default: a local Dask cluster)")
    c.add_argument("--workers", type=int, default=None, help="worker processes (default: half the CPUs)")
    c.add_argument("--ranks", default=None, help="ranks to analyse, e.g. 0-7,12 (default all)")
    c.add_argument("--timeline", default=None, metavar="RANKS", help="write a merged timeline of these ranks")
    c.add_argument("--traces", action="store_true", help="write per-rank traces in one directory (for HTA)")
    c.add_argument("--steps", default=None, help="keep only these steps in timelines, e.g. 3-5")
    c.add_argument("--min-dur", default=0, help="drop spans shorter than this from timelines, e.g. 10us")
    c.add_argument("--gzip", action="store_true", help="gzip the timelines")
    c.add_argument("--align", choices=["auto", "comm", "none"], default="auto", help="clock alignment of ranks")
    c.add_argument("--no-parquet", action="store_true", help="CSV and JSON only")
    c.add_argument("--recompute", action="store_true",
                   help="parse every rank's events, also where another tool's run holds its own summary files "
                        "(step_trace_time.csv, op_statistic.csv, communication.json, communication_matrix.json), "
                        "which are used by default")
    c.add_argument("--json", action="store_true", help="print the result summary as JSON")
    c.add_argument("--explain", action="store_true", help="say why each slow rank is slow: its extra step time "
                                                          "over the median rank by operator type, range, data "
                                                          "wait, host gaps, communication wait (npuprof advise's "
                                                          "slow_rank rule)")
    c.add_argument("--quiet", action="store_true")
    c.set_defaults(func=cmd_cluster)

    t = subparsers.add_parser("timeline", help="write a filtered (optionally merged, gzipped) timeline")
    add_folder_argument(t, "path")
    t.add_argument("-o", "--output", default=None, help="output file (.json or .json.gz)")
    t.add_argument("--ranks", default=None, help="ranks to include (default all)")
    t.add_argument("--steps", default=None, help="steps to keep, e.g. 3-5")
    t.add_argument("--min-dur", default=0, help="drop spans shorter than this, e.g. 10us or 0.5ms")
    t.add_argument("--gzip", action="store_true")
    t.add_argument("--align", choices=["auto", "comm", "none"], default="auto")
    t.add_argument("--backend", choices=["process", "dask", "serial"], default="serial")
    t.add_argument("--workers", type=int, default=None)
    t.add_argument("--size-report-json", action="store_true", help="print the size report as JSON")
    t.set_defaults(func=cmd_timeline)

    x = subparsers.add_parser("xplane", help="export runs as XSpace for TensorBoard / xprof")
    add_folder_argument(x, "path")
    x.add_argument("--logdir", required=True, help="TensorBoard log directory")
    x.add_argument("--run", default=None, help="run name under plugins/profile (default: a UTC time stamp)")
    x.set_defaults(func=cmd_xplane)
