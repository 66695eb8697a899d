"""``npuprof report``: one self-contained HTML page for a run or a job.

The page embeds everything (CSS and SVG charts inline, no script, no font or
image from the network): step-time breakdown per step and per rank, slow
ranks and the rule used, top operators by time, host CPU/memory over time,
memory (each rank's peak, and the timeline of the rank with the highest) when recorded,
the communication matrix when there is one, a section per third-party
analyzer's table (each rank's rows as cluster analysis merged them, the first
:data:`MAX_ANALYZER_ROWS`) and the warnings of those that failed, and relative
links to every trace file and cluster table. Numbers come from :func:`npuprof.cluster.
cluster_analyse` (one rank works too), which also writes the tables linked
from the page.

The page opens with the job's data quality section when its data is not
complete (:mod:`npuprof.quality`).

Example::

    report = write_report("./prof")           # report.path: ./prof/npuprof_report.html
    report.quality.exit_code                  # 0 complete, 3 partial
"""
from __future__ import annotations

import datetime as _dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from ..errors import ProfilerDataError
from ..fileio import atomic_write
from ..quality import DataQuality
from ..validate import check_output_path
from ..export import svg
from ..export.memory_page import memory_section
from ..export.svg import CSS, html_table
from ..export.svg import escape as _e

REPORT_NAME = "npuprof_report.html"
HOST_SERIES = ("CPU Usage(%)", "Memory Usage(%)")
MAX_HOST_LINES = 8
TOP_OPS = 15
MAX_ANALYZER_ROWS = 50      # rows of a third-party analyzer's table on the page (the whole table is linked)



def _rel(target: Union[str, Path], base: Path) -> str:
    return Path(os.path.relpath(Path(target).resolve(), base.resolve())).as_posix()


def _num(v: Optional[float]) -> str:
    return "N/A" if v is None else f"{v:,.1f}"      # None: not measured


def _mean_measured(values: list) -> float:
    """Mean of the measured values (None: not measured, left out); 0.0 when none is."""
    measured = [v for v in values if v is not None]
    return float(np.mean(measured)) if measured else 0.0


def _memory_part(summaries: list, t0: int) -> str:
    """Each rank's peak, then the memory timeline of the rank with the highest."""
    peaks = sorted(summaries, key=lambda s: -(s.memory.summary.peak_mb or 0.0))
    rows = []
    for s in sorted(summaries, key=lambda x: x.rank):
        m = s.memory.summary
        rows.append([_e(s.rank), "-" if m.peak_mb is None else f"{m.peak_mb:,.3f}",
                     "-" if m.peak_step is None else _e(m.peak_step),
                     "-" if m.peak_ns is None else f"{(m.peak_ns - t0) / 1e9:.6f}", f"{m.allocations:,}"])
    top = peaks[0]
    return "\n".join(["<h2 id='memory-peaks'>Memory peak per rank</h2>",
                      html_table(["Rank", "Peak allocated (MB)", "Step", "At (s)", "Allocations"], rows),
                      memory_section(top.memory, heading=f"Memory over time, rank {top.rank}", start_ns=t0)])


def _cell(value: Any) -> str:
    return "-" if value is None else _e(value)


def analyzer_sections(res: Any, page_dir: Path) -> str:
    """A section per third-party analyzer's job table (``res.analyzer_tables``, :func:`npuprof.cluster.tables.
    job_analyzer_tables`): its title, the plugin, its declared columns (and the rank, for a job of several) of
    the first :data:`MAX_ANALYZER_ROWS` rows, a link to the whole table; then the analyzers' warnings.
    Reads the tables cluster analysis made; computes nothing."""
    parts = []
    several = len(res.summaries) > 1
    for t in res.analyzer_tables:
        table = res.tables[t.merged]
        declared = [c for c in t.columns if c in table.columns] or [c for c in table.columns if c != "Rank"]
        columns = (["Rank"] if several and "Rank" not in declared else []) + declared
        at = [table.columns.index(c) for c in columns]
        parts.append(f"<h2 id='analyzer-{_e(t.table)}'>{_e(t.title or t.table)}</h2>")
        note = f"Table <b>{_e(t.table)}</b> of plugin <b>{_e(t.plugin)}</b>"
        if several:
            note += f", {len(t.ranks)} of {len(res.summaries)} rank(s)"
        shown = min(len(table), MAX_ANALYZER_ROWS)
        note += f"; {len(table):,} row(s)" + (f", the first {shown} shown" if shown < len(table) else "")
        missing = [c for c in t.columns if c not in table.columns]
        if missing:
            note += f"; declared but not made: {_e(', '.join(missing))}"
        csv = next((f for f in res.files if Path(f).name == f"{t.merged}.csv"), None)
        if csv is not None:
            note += f". Whole table: <a href='{_e(_rel(csv, page_dir))}'>{_e(Path(csv).name)}</a>"
        parts.append(f"<p class='note'>{note}.</p>")
        if len(table):
            parts.append(html_table(columns, [[_cell(row[i]) for i in at] for row in table.head(shown)],
                                    left=2 if columns[0] == "Rank" else 1))
    if res.analyzer_warnings:
        parts.append("<h2 id='analyzer-warnings'>Analyzer warnings</h2><ul>"
                     + "".join(f"<li class='bad'>{_e(w)}</li>" for w in res.analyzer_warnings) + "</ul>")
    return "\n".join(parts)


def quality_section(quality: DataQuality) -> str:
    """The data quality section: every issue and what it affects ("" for complete data)."""
    if quality.complete:
        return ""
    items = "".join(f"<li><b>{_e(i.subject)}</b>: {_e(i.problem)}"
                    + (f" <i>(affects {_e(', '.join(i.affects))})</i>" if i.affects else "") + "</li>"
                    for i in quality.issues)
    return (f"<h2 id='data-quality'>Data quality: {_e(quality.verdict)}</h2>"
            f"<p>The numbers below that these inputs affect are incomplete or not measured.</p><ul>{items}</ul>")


@dataclass(frozen=True)
class WrittenReport:
    """The page :func:`write_report` wrote and the data quality of what it shows."""

    path: Path
    quality: DataQuality
    warnings: list[str] = field(default_factory=list)     # third-party analyzers that failed (named, by plugin)


def render(res: Any, page_dir: Path, title: str) -> str:
    """HTML text of the report for a :class:`~npuprof.cluster.ClusterResult`."""
    summaries = res.summaries
    steps_t = res.tables["cluster_step_trace_time"].records()
    slow = set(res.slow.get("slow_ranks", []))
    parts = ["\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                        '<meta name="viewport" content="width=device-width,initial-scale=1">',
                        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"])]
    n_steps = len({r["Step"] for r in steps_t})
    hosts = sorted({s.hostname for s in summaries})
    parts.append(f"<h1>{_e(title)}</h1><p class='meta'>{len(summaries)} rank(s) on {len(hosts)} host(s) · "
                 f"{n_steps} step(s) · {sum(s.events for s in summaries):,} events · generated "
                 f"{_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by npuprof</p>")
    parts.append(quality_section(res.quality))

    # -- step breakdown per step and per rank
    parts.append("<h2 id='steps'>Step time breakdown</h2>")
    # a column no rank measured (a host-only trace's device time) is left out of the charts, not drawn as 0
    cols = [c for c in ("Computing", "Communication(Not Overlapped)", "Overlapped", "Free")
            if any(r[c] is not None for r in steps_t)]
    by_step: dict = {}
    for r in steps_t:
        by_step.setdefault(r["Step"], []).append(r)
    step_labels = [str(s) for s in sorted(by_step)]
    series = {c: [_mean_measured([r[c] for r in by_step[int(s)]]) for s in step_labels] for c in cols}
    parts.append("<p class='note'>Per step, mean over ranks (µs). Computing + Communication(Not Overlapped) + Free "
                 "= step time; Overlapped is communication hidden under computing.</p>")
    parts.append(svg.stacked_bars(step_labels, series, "µs", x_title="step"))
    by_rank: dict = {}
    for r in steps_t:
        by_rank.setdefault(r["Index"], []).append(r)
    rank_labels = [str(r) for r in sorted(by_rank)]
    series_r = {c: [_mean_measured([x[c] for x in by_rank[int(r)]]) for r in rank_labels] for c in cols}
    parts.append("<p class='note'>Per rank, mean over steps (µs); slow ranks outlined in red.</p>")
    parts.append(svg.stacked_bars(rank_labels, series_r, "µs", highlight={str(r) for r in slow}, x_title="rank"))
    if res.slow.get("applicable"):
        verdict = (f"<span class='bad'>slow ranks: {', '.join(map(str, sorted(slow)))}</span>" if slow
                   else "no slow rank")
        parts.append(f"<p>{verdict}. <span class='note'>Rule: {_e(res.slow['rule'])}.</span></p>")
    else:
        parts.append(f"<p class='note'>Slow-rank test not applied: {_e(res.slow.get('note', ''))}.</p>")
    rows = []
    judged = bool(res.slow.get("applicable"))     # a "Slow" column only where the slow-rank test ran
    for rec in res.tables["cluster_rank_summary"].records()[:64]:
        row = [_e(rec["Rank"]), _e(rec["Hostname"]), _e(rec["Steps"]), _num(rec["Step Time Mean(us)"]),
               _num(rec["Computing Mean(us)"]), _num(rec["Communication(Not Overlapped) Mean(us)"]),
               _num(rec["Free Mean(us)"])]
        if judged:
            row.append("<span class='bad'>slow</span>" if rec["Slow"] else "no")
        rows.append(row)
    parts.append(html_table(["Rank", "Host", "Steps", "Step (µs)", "Computing", "Comm. not overlapped", "Free"] +
                            (["Slow"] if judged else []), rows, left=2))

    # -- top operators
    parts.append("<h2 id='ops'>Top operators by time</h2>")
    ops = res.tables["cluster_op_statistic"].records()[:TOP_OPS]
    if ops:
        parts.append("<p class='note'>Total time over all ranks (µs); device kernels when recorded, else host "
                     "framework operators.</p>")
        parts.append(svg.horizontal_bars([f"{o['OP Type']} ({o['Core Type']})" for o in ops],
                                         [o["Total Time(us)"] for o in ops], "µs (all ranks)"))
        parts.append(html_table(["OP Type", "Core", "Ranks", "Count", "Total (µs)", "Avg per rank (µs)", "Max rank"],
                            [[_e(o["OP Type"]), _e(o["Core Type"]), o["Ranks"], f"{o['Count']:,}",
                              _num(o["Total Time(us)"]), _num(o["Avg Time per Rank(us)"]), o["Max Rank"]]
                             for o in ops], left=2))
    else:
        parts.append("<p class='note'>No operator or kernel events were recorded.</p>")

    # -- host usage over time
    parts.append("<h2 id='host'>Host CPU and memory over time</h2>")
    t0 = min((s.t0_ns for s in summaries if s.t0_ns), default=0)
    chosen = [s for s in summaries if s.rank in slow][:MAX_HOST_LINES]
    chosen += [s for s in summaries if s not in chosen][:MAX_HOST_LINES - len(chosen)]
    any_host = False
    for name in HOST_SERIES:
        lines = {}
        for s in sorted(chosen, key=lambda x: x.rank):
            if name in s.host_series:
                t, v = s.host_series[name]
                lines[f"rank {s.rank}"] = ([(x - t0) / 1e9 for x in np.asarray(t).tolist()],
                                           np.asarray(v, dtype=float).tolist())
        if lines:
            any_host = True
            parts.append(f"<p class='note'>{_e(name)}</p>")
            parts.append(svg.line_chart(lines, "%", y_max=100.0))
    if not any_host:
        parts.append("<p class='note'>No host usage was sampled (Profiler(host_sys=['cpu', 'mem'])).</p>")

    # -- memory
    with_memory = [s for s in summaries if s.memory is not None]
    if with_memory:
        parts.append(_memory_part(with_memory, t0))

    # -- communication matrix
    matrix = res.tables["cluster_communication_matrix"].records()
    if matrix:
        parts.append("<h2 id='comm'>Communication matrix</h2>")
        top = sorted(matrix, key=lambda m: -m["Transit Time(ms)"])[:20]
        parts.append(html_table(["Ranks", "Step", "OP", "Src", "Dst", "Transport", "Time (ms)", "Size (MB)", "GB/s"],
                            [[_e(m["Group"]), _e(m["Step"]), _e(m["OP Name"]), m["Src Rank"], m["Dst Rank"],
                              _e(m["Transport Type"]), f"{m['Transit Time(ms)']:.3f}",
                              f"{m['Transit Size(MB)']:.3f}", f"{m['Bandwidth(GB/s)']:.3f}"] for m in top], left=3))

    # -- the third-party analyzers' tables
    parts.append(analyzer_sections(res, page_dir))

    # -- links
    parts.append("<h2 id='files'>Trace files and tables</h2><ul class='links'>")
    for s in summaries:
        for t in s.traces:
            parts.append(f"<li>rank {s.rank}: <a href='{_e(_rel(t, page_dir))}'>{_e(Path(t).parent.parent.name)}/"
                         f"{_e(Path(t).name)}</a></li>")
    for r, p, _, _ in res.traces:
        parts.append(f"<li>rank {r} (filtered): <a href='{_e(_rel(p, page_dir))}'>{_e(Path(p).name)}</a></li>")
    if res.merged_timeline:
        parts.append(f"<li>merged timeline: <a href='{_e(_rel(res.merged_timeline, page_dir))}'>"
                     f"{_e(res.merged_timeline.name)}</a></li>")
    for f in res.files:
        if Path(f).suffix in (".csv", ".json") and Path(f).name != "cluster_summary.json":
            parts.append(f"<li><a href='{_e(_rel(f, page_dir))}'>{_e(Path(f).name)}</a></li>")
    parts.append("</ul><p class='note'>Open traces in Perfetto (ui.perfetto.dev) or chrome://tracing; tables in "
                 "any spreadsheet; Parquet tables with DuckDB.</p></body></html>\n")
    return "\n".join(parts)


def write_report(path: Union[str, Path], output: Optional[Union[str, Path]] = None, backend: str = "process",
                 workers: Optional[int] = None, timeline_ranks: Any = None,
                 progress: Any = None, job: Optional[str] = None,
                 advise_min_ms: Optional[float] = None) -> WrittenReport:
    """Analyse ``path`` (a run or a parent of ranks' runs) and write the HTML report.

    With ``advise_min_ms`` the page ends with ``npuprof advise``'s findings for each rank's run (those
    with at least that many ms at stake per step; each run is analysed once more for it).
    Returns the page path (default ``<path>/npuprof_report.html``) and the data's quality.
    """
    from ..cluster import cluster_analyse
    from ..cluster.analyse import default_place

    root = Path(path)
    page = check_output_path("output", output, file=True) if output is not None else \
        default_place(root) / REPORT_NAME
    formats = ("csv", "json")
    try:
        import pyarrow  # noqa: F401

        formats = ("csv", "json", "parquet")
    except ImportError:
        pass
    # the tables the page links to go beside the page, never into the runs read
    files = page.parent / f"{page.stem}_files"
    try:
        res = cluster_analyse(root, output=files, backend=backend, workers=workers,
                              timeline_ranks=timeline_ranks, formats=formats, progress=progress, job=job)
        title = f"npuprof report: {root.resolve().name}" + \
            (f" (job {res.job.name})" if res.job and res.job.name != "." else "")
        text = render(res, page.parent, title)
        if advise_min_ms is not None:
            from ..advise import advise_path
            from ..advise.page import advice_section

            advices = [a for s in sorted(res.summaries, key=lambda s: s.rank) for run in s.run_dirs
                       for a in advise_path(run, min_ms=advise_min_ms)]
            section = advice_section(advices, heading=f"Advice (findings of at least {advise_min_ms:g} ms per step)")
            text = text.replace("</body></html>", section + "</body></html>", 1)
        return WrittenReport(atomic_write(page, text), res.quality, list(res.analyzer_warnings))
    except OSError as e:    # the page's place, named as given (its tables' folder is ours, not the user's)
        if not _is_under(e.filename, page.parent):
            raise
        raise ProfilerDataError(output if output is not None else page,
                                f"the report cannot be written there: {e.strerror or e}") from e


def _is_under(filename: Any, folder: Path) -> bool:
    if not filename:
        return False
    where = Path(os.path.abspath(os.fsdecode(filename)))
    folder = Path(os.path.abspath(folder))
    return where == folder or folder in where.parents
