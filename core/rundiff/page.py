"""The ``npuprof diff -o FILE.html`` page: one self-contained HTML file (inline CSS and SVG, no script).

It shows what the JSON holds: the step time of each side (every step as a
point, the median as a line, side by side), the verdict with its interval,
the breakdown of each side, the top contributors as a bar chart, the rows
that changed most per kind, and the unmatched rows.

Example::

    from npuprof.rundiff.page import write_diff_page
    write_diff_page(npuprof.diff("./before", "./after"), "diff.html")
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Optional, Sequence, Union

from ..analysis.diff import DiffResult
from ..export import svg
from ..export.svg import CSS, html_table
from ..export.svg import escape as _e
from ..fileio import atomic_write

ROWS_PER_KIND = 25
UNMATCHED_SHOWN = 100
_STACK = ("Computing", "Communication(Not Overlapped)", "Free")


def render(result: DiffResult, title: str) -> str:
    """HTML text of the page for ``result``."""
    st = result.step_time
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width,initial-scale=1">',
             f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
             f"<h1>{_e(title)}</h1>",
             f"<p class='meta'>generated {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} "
             "by npuprof diff</p>"]
    parts.append(html_table(["", "Path", "Kind", "Rank", "Steps", "Events"], [
        [name, _e(s.path), _e(s.kind), s.rank, _e(_steps_text(s.steps)), f"{s.events:,}"]
        for name, s in (("base", result.base), ("new", result.new))], left=3))

    parts.append("<h2 id='step-time'>Step time</h2>")
    verdict = st.verdict
    cls = "bad" if verdict == "regression" else ""
    ci = (f"95 % interval of the change [{st.ci95_pct[0]:+.2f} %, {st.ci95_pct[1]:+.2f} %]"
          if st.ci95_pct else "no interval (fewer than 5 steps on a side)")
    delta = "n/a" if st.delta_pct is None else f"{st.delta_pct:+.2f} %"
    parts.append(f"<p><span class='{cls}'>{_e(verdict)}</span>: {_e(st.metric)} median {_num(st.base_ms)} ms "
                 f"&rarr; {_num(st.new_ms)} ms ({delta}); {ci}.</p>")
    parts.append("<p class='note'>Each point is one step; the line is the median. The interval is a bootstrap "
                 "over the steps of each side.</p>")
    parts.append(svg.points_by_column({"base": result.base.step_ms, "new": result.new.step_ms}, "ms", "step"))

    parts.append("<h2 id='breakdown'>Breakdown (mean per step)</h2>")
    by_name = {b.name: b for b in result.breakdown}
    series = {c: [by_name[c].base_us, by_name[c].new_us] for c in _STACK if c in by_name}
    if series:
        parts.append(svg.stacked_bars(["base", "new"], series, "µs", height=240, x_title="side"))
    parts.append(html_table(["Column", "Base (µs)", "New (µs)", "Delta (µs)"],
                            [[_e(b.name), _num(b.base_us), _num(b.new_us), _signed(b.delta_us)]
                             for b in result.breakdown]))

    parts.append("<h2 id='contributors'>Top contributors to the change</h2>")
    tc = result.top_contributors
    if tc:
        parts.append("<p class='note'>Change per step of each row (µs, absolute value in the chart); the share is "
                     "of the step time's change. Rows nest (a range holds operators), so shares of different kinds "
                     "do not add up.</p>")
        parts.append(svg.horizontal_bars([f"{c.by}: {c.name}" for c in tc], [abs(c.delta_per_step_us) for c in tc],
                                         "µs per step"))
        parts.append(html_table(["Kind", "Name", "Change per step (µs)", "Share (%)"], [
            [_e(c.by), _e(c.name), _signed(c.delta_per_step_us), "-" if c.share_pct is None else f"{c.share_pct:.1f}"]
            for c in tc], left=2))
    else:
        parts.append("<p class='note'>No rows to rank.</p>")

    parts.append("<h2 id='rows'>Rows per kind</h2>")
    kinds = list(dict.fromkeys(r.by for r in result.rows))
    if not kinds:
        parts.append("<p class='note'>No rows.</p>")
    for by in kinds:
        rows = [r for r in result.rows if r.by == by]
        parts.append(f"<h3>{_e(by)} ({len(rows)} rows{', largest changes first' if by != 'step' else ''})</h3>")
        parts.append(html_table(["Name", "Match", "Base n", "New n", "Base (µs)", "New (µs)", "Delta (µs)", ""], [
            [_e(r.name), _e(r.match), r.base_count, r.new_count, _num(r.base_total_us), _num(r.new_total_us),
             _signed(r.delta_us), _e(r.change)] for r in rows[:ROWS_PER_KIND]], left=2))

    parts.append("<h2 id='unmatched'>Unmatched rows</h2>")
    for side, only in result.unmatched.items():
        if not only:
            parts.append(f"<p class='note'>Every {side} row was matched.</p>")
            continue
        parts.append(f"<p>{len(only)} row(s) only in {side}.</p>")
        parts.append(html_table(["Kind", "Name", "Count", "Total (µs)"], [
            [_e(u.by), _e(u.name), u.count, _num(u.total_us)] for u in only[:UNMATCHED_SHOWN]], left=2))
    if result.memory is not None:
        m = result.memory
        parts.append("<h2 id='memory'>Memory peak</h2>")
        parts.append(html_table(["Base (MB)", "New (MB)", "Delta (MB)"],
                                [[_num(m.base_peak_mb), _num(m.new_peak_mb), _signed(m.delta_mb)]]))
    problems = [(side, s) for side, q in result.data_quality.items() for s in q.issues]
    if problems:
        parts.append("<h2 id='data-quality'>Data quality: partial</h2><ul>")
        parts += [f"<li>{_e(side)}: {_e(s)}</li>" for side, s in problems]
        parts.append("</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _steps_text(steps: Sequence[int]) -> str:
    if not steps:
        return "none"
    return f"{steps[0]}-{steps[-1]} ({len(steps)})" if len(steps) > 1 else str(steps[0])


def _num(v: Optional[float]) -> str:
    return "n/a" if v is None else f"{float(v):,.3f}"


def _signed(v: float) -> str:
    return f"{v:+,.3f}"


def write_diff_page(result: DiffResult, path: Union[str, Path], title: str = "") -> Path:
    """Write the page to ``path`` (atomically); returns it."""
    title = title or f"npuprof diff: {Path(result.base.path).name} vs {Path(result.new.path).name}"
    return atomic_write(Path(path), render(result, title))
