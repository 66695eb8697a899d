"""The memory timeline page: one self-contained HTML file (inline CSS and SVG, no script, no network).

What it shows, from a :class:`~npuprof.analysis.memory.MemoryTimeline`: the peak (MB, when, in which
step), the allocations alive over time stacked by operator with the peak marked, every memory series
(allocator totals, components, process RSS) in MB, and the allocations alive at the peak, largest first
and per operator. It reads the timeline and changes nothing.

Example::

    html_text = render_memory_page(memory_timeline(result.events), "npuprof memory: my run")
"""
from __future__ import annotations

import datetime as _dt
from typing import Optional

from ..analysis.memory import MemoryTimeline
from . import svg
from .svg import CSS
from .svg import escape as _e

TOP_ROWS = 20
_PROCESS = "Process RSS"


def _short(name: str, width: int = 48) -> str:
    """A legend label: the end of a long name (an op's path ends in what it is)."""
    return name if len(name) <= width else "…" + name[-(width - 1):]


def _rows(headers: list, rows: list) -> str:
    return svg.html_table(headers, [[_e(c) for c in r] for r in rows])


def memory_section(timeline: MemoryTimeline, heading: str = "Memory", start_ns: Optional[int] = None) -> str:
    """The page's body: peak, charts and tables (also the HTML report's memory section). Times are
    seconds since ``start_ns``, the run's start (default: the first memory sample)."""
    s = timeline.summary
    starts = [int(timeline.times_ns[0])] if len(timeline.times_ns) else []
    starts += [int(t[0]) for t, _ in timeline.series.values() if len(t)]
    t0 = min(starts, default=0) if start_ns is None else start_ns
    parts = [f"<h2 id='memory'>{_e(heading)}</h2>"]
    if s.peak_mb is not None and s.peak_ns is not None:
        step = "" if s.peak_step is None else f" in step {s.peak_step}"
        parts.append(f"<p class='peak'>Peak allocated: <b>{s.peak_mb:,.3f} MB</b> at "
                     f"{(s.peak_ns - t0) / 1e9:.6f} s{_e(step)} ({s.allocations:,} allocations recorded).</p>")
    elif not timeline.series:
        parts.append("<p class='note'>This run holds no memory data (profile_memory=True records it).</p>")
    if timeline.live_bytes:
        xs = [(t - t0) / 1e9 for t in timeline.times_ns.tolist()]
        layers = {_short(k): (v / (1024.0 * 1024.0)).tolist() for k, v in timeline.live_bytes.items()}
        marker = None if s.peak_ns is None else ((s.peak_ns - t0) / 1e9, "peak")
        parts.append("<p class='note'>Allocations alive over time by operator (MB), the operators holding the "
                     "most at the peak; memory allocated before the window is not in it.</p>")
        parts.append(svg.stacked_area(xs, layers, "MB", marker=marker))
    # the process's resident memory is orders above an allocator's: its own chart keeps both readable
    for note, pick in (("Memory series (MB): allocators and components.", lambda n: not n.startswith(_PROCESS)),
                       ("The process's resident memory (MB), sampled by npuprof.", lambda n: n.startswith(_PROCESS))):
        lines = {_short(name): ([(t - t0) / 1e9 for t in ts.tolist()], v.tolist())
                 for name, (ts, v) in timeline.series.items() if pick(name)}
        if lines:
            parts.append(f"<p class='note'>{_e(note)}</p>")
            parts.append(svg.line_chart(dict(list(lines.items())[:len(svg.PALETTE)]), "MB"))
    if s.live:
        parts.append("<h3>Alive at the peak, largest first</h3>")
        parts.append(_rows(["Operator", "Size (KB)", "Allocated at (s)", "Released at (s)"],
                           [[a.name, f"{a.size_bytes / 1024:,.2f}", f"{(a.allocated_ns - t0) / 1e9:.6f}",
                             "-" if a.released_ns is None else f"{(a.released_ns - t0) / 1e9:.6f}"]
                            for a in s.live[:TOP_ROWS]]))
    if s.live_by_operator:
        parts.append("<h3>Alive at the peak, per operator</h3>")
        parts.append(_rows(["Operator", "Allocations", "Size (KB)"],
                           [[n, f"{c:,}", f"{b / 1024:,.2f}"] for n, c, b in s.live_by_operator[:TOP_ROWS]]))
    return "\n".join(parts)


def render_memory_page(timeline: MemoryTimeline, title: str, start_ns: Optional[int] = None) -> str:
    """The whole HTML page of :func:`memory_section`."""
    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
                      f"<h1>{_e(title)}</h1><p class='meta'>generated "
                      f"{_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by npuprof</p>",
                      memory_section(timeline, start_ns=start_ns), "</body></html>\n"])
