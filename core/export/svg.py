"""Inline SVG charts and the page style of npuprof's HTML pages (the report, the memory timeline):
no JavaScript, no network.

Each function returns an ``<svg>`` string; values are escaped; every bar and
point has a ``<title>`` tooltip.

Example::

    >>> svg = stacked_bars(["1", "2"], {"Computing": [3.0, 4.0], "Free": [1.0, 0.5]}, "µs")
    >>> svg.startswith("<svg") and svg.count('class="bar"')
    4
"""
from __future__ import annotations

import html
import math
from typing import Optional, Sequence

PALETTE = ["#3b7dd8", "#e8833a", "#59a14f", "#b07aa1", "#e15759", "#76b7b2", "#edc948", "#9c755f", "#bab0ac",
           "#4e79a7"]
# the style every npuprof page embeds
CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:960px;color:#1d232b}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde3ea;
padding-bottom:4px}.meta{color:#5b6776}.chart{display:block;margin:6px 0;background:#fbfcfd;border:1px solid #e3e8ee}
.chart .grid{stroke:#e3e8ee}.chart .tick{font-size:11px;fill:#5b6776}.chart .legend{font-size:12px;fill:#1d232b}
.chart .unit,.chart .axis{font-size:11px;fill:#5b6776}.chart .slow{fill:none;stroke:#d62728;stroke-width:2}
table{border-collapse:collapse;margin:6px 0;font-size:13px}td,th{border:1px solid #dde3ea;padding:3px 8px;
text-align:right}th{background:#f1f4f7}td.l,th.l{text-align:left}.bad{color:#d62728;font-weight:600}
.note{color:#5b6776;font-size:12px}ul.links li{margin:2px 0}code{background:#f1f4f7;padding:0 3px}
"""
SERIES_COLORS = {"Computing": "#3b7dd8", "Communication(Not Overlapped)": "#e8833a", "Overlapped": "#76b7b2",
                 "Free": "#bab0ac"}


def escape(text: object) -> str:
    """Text as HTML (quotes too)."""
    return html.escape(str(text), quote=True)


_e = escape


def nice_ticks(vmax: float, n: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``vmax``.

    Example::

        >>> nice_ticks(93.0)
        [0, 20, 40, 60, 80, 100]
    """
    if vmax <= 0 or not math.isfinite(vmax):
        return [0.0, 1.0]
    raw = vmax / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    count = int(math.ceil(vmax / step - 1e-9))
    return [round(i * step, 10) for i in range(count + 1)]


def _fmt(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:.1f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.0f}k"
    return f"{v:g}" if abs(v) >= 1 or v == 0 else f"{v:.2g}"


def _frame(width: int, height: int, label: str, body: list, legend: list, legend_x: int = 70) -> str:
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(label)}">']
    parts.extend(body)
    x = legend_x
    for name, color in legend:
        parts.append(f'<rect x="{x}" y="6" width="12" height="12" fill="{color}"/>'
                     f'<text x="{x + 16}" y="16" class="legend">{_e(name)}</text>')
        x += 24 + 7 * len(name)
    parts.append("</svg>")
    return "".join(parts)


def _y_axis(ticks: list, x0: int, x1: int, y_of, unit: str) -> list:
    out = []
    for t in ticks:
        y = y_of(t)
        out.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{x0 - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{_fmt(t)}</text>')
    out.append(f'<text x="{x0 - 6}" y="{y_of(ticks[-1]) - 8:.1f}" class="unit" text-anchor="end">{_e(unit)}</text>')
    return out


def stacked_bars(labels: Sequence[str], series: dict, unit: str, width: int = 900, height: int = 280,
                 highlight: Optional[set] = None, x_title: str = "") -> str:
    """Vertical stacked bars: one bar per label, one segment per series."""
    highlight = highlight or set()
    n = max(len(labels), 1)
    left, right, top, bottom = 64, 16, 40, 46
    totals = [sum(float(v[i]) for v in series.values()) for i in range(len(labels))]
    ticks = nice_ticks(max(totals) if totals else 0.0)
    span = ticks[-1] or 1.0
    plot_h = height - top - bottom

    def y_of(v: float) -> float:
        return top + plot_h * (1 - v / span)

    body = _y_axis(ticks, left, width - right, y_of, unit)
    slot = (width - left - right) / n
    bar_w = max(min(slot * 0.7, 60), 1.5)
    label_every = max(1, int(math.ceil(n / 40)))
    for i, lab in enumerate(labels):
        x = left + slot * i + (slot - bar_w) / 2
        acc = 0.0
        for j, (name, vals) in enumerate(series.items()):
            v = float(vals[i])
            if v <= 0:
                continue
            color = SERIES_COLORS.get(name, PALETTE[j % len(PALETTE)])
            y1, y0 = y_of(acc + v), y_of(acc)
            body.append(f'<rect class="bar" x="{x:.1f}" y="{y1:.1f}" width="{bar_w:.1f}" height="{y0 - y1:.1f}" '
                        f'fill="{color}"><title>{_e(lab)}: {_e(name)} {v:,.3f} {_e(unit)}</title></rect>')
            acc += v
        if lab in highlight:
            body.append(f'<rect x="{x - 1:.1f}" y="{y_of(acc) - 1:.1f}" width="{bar_w + 2:.1f}" '
                        f'height="{y_of(0) - y_of(acc) + 2:.1f}" class="slow"/>')
        if i % label_every == 0:
            body.append(f'<text x="{x + bar_w / 2:.1f}" y="{height - bottom + 14}" class="tick" '
                        f'text-anchor="middle">{_e(lab)}</text>')
    body.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 8}" class="axis" '
                f'text-anchor="middle">{_e(x_title)}</text>')
    legend = [(name, SERIES_COLORS.get(name, PALETTE[j % len(PALETTE)])) for j, name in enumerate(series)]
    return _frame(width, height, f"stacked bars per {x_title}", body, legend)


def points_by_column(columns: dict, unit: str, what: str = "value", width: int = 900, height: int = 260) -> str:
    """One column per series, side by side: each value a point, the median a line across the column
    (``npuprof diff``'s step times of each side)."""
    left, right, top, bottom = 64, 16, 40, 36
    values = [float(v) for vals in columns.values() for v in vals]
    ticks = nice_ticks(max(values) if values else 0.0)
    span = ticks[-1] or 1.0
    plot_h = height - top - bottom

    def y_of(v: float) -> float:
        return top + plot_h * (1 - v / span)

    body = _y_axis(ticks, left, width - right, y_of, unit)
    col_w = (width - left - right) / max(len(columns), 1)
    legend = []
    for i, (label, vals) in enumerate(columns.items()):
        color = PALETTE[i % len(PALETTE)]
        x0 = left + col_w * i
        legend.append((f"{label} ({len(vals)})", color))
        n = max(len(vals), 1)
        for j, v in enumerate(vals):
            x = x0 + col_w * (0.2 + 0.6 * (j + 0.5) / n)
            body.append(f'<circle class="point" cx="{x:.1f}" cy="{y_of(float(v)):.1f}" r="3" fill="{color}">'
                        f'<title>{_e(label)} {_e(what)} #{j + 1}: {float(v):,.3f} {_e(unit)}</title></circle>')
        if len(vals):
            ordered = sorted(float(v) for v in vals)
            mid = len(ordered) // 2
            med = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
            body.append(f'<line class="median" x1="{x0 + col_w * 0.15:.1f}" x2="{x0 + col_w * 0.85:.1f}" '
                        f'y1="{y_of(med):.1f}" y2="{y_of(med):.1f}" stroke="#1d232b" stroke-width="2">'
                        f'<title>{_e(label)} median {med:,.3f} {_e(unit)}</title></line>')
        body.append(f'<text x="{x0 + col_w / 2:.1f}" y="{height - 12}" class="axis" text-anchor="middle">'
                    f'{_e(label)}</text>')
    return _frame(width, height, f"{what} per column", body, legend)


def horizontal_bars(labels: Sequence[str], values: Sequence[float], unit: str, width: int = 900,
                    color: str = "#3b7dd8") -> str:
    """One horizontal bar per label (top operators)."""
    row = 22
    left, right, top = 220, 90, 28
    height = top + row * max(len(labels), 1) + 30
    vmax = max([float(v) for v in values] or [0.0]) or 1.0
    body = []
    for i, (lab, v) in enumerate(zip(labels, values)):
        y = top + i * row
        w = (width - left - right) * float(v) / vmax
        short = lab if len(lab) <= 32 else lab[:30] + "…"
        body.append(f'<text x="{left - 8}" y="{y + 15}" class="tick" text-anchor="end">{_e(short)}</text>'
                    f'<rect class="bar" x="{left}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row - 6}" '
                    f'fill="{color}"><title>{_e(lab)}: {float(v):,.3f} {_e(unit)}</title></rect>'
                    f'<text x="{left + max(w, 1) + 6:.1f}" y="{y + 15}" class="tick">{float(v):,.1f}</text>')
    body.append(f'<text x="{left}" y="{height - 8}" class="axis">{_e(unit)}</text>')
    return _frame(width, height, "top operators", body, [])


_TIME_MARGINS = (64, 16, 40, 40)    # left, right, top, bottom of the time charts


def _time_axes(x_max: float, y_max: float, unit: str, width: int, height: int) -> tuple:
    """(x_of, y_of, body) of a chart over time: the value -> pixel maps and its axes, ticks and labels."""
    left, right, top, bottom = _TIME_MARGINS
    x_ticks, y_ticks = nice_ticks(x_max, 8), nice_ticks(y_max)
    xs_span, ys_span = x_ticks[-1] or 1.0, y_ticks[-1] or 1.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def x_of(v: float) -> float:
        return left + plot_w * v / xs_span

    def y_of(v: float) -> float:
        return top + plot_h * (1 - v / ys_span)

    body = _y_axis(y_ticks, left, width - right, y_of, unit)
    for t in x_ticks:
        body.append(f'<text x="{x_of(t):.1f}" y="{height - bottom + 16}" class="tick" '
                    f'text-anchor="middle">{_fmt(t)}</text>')
    body.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 6}" class="axis" '
                f'text-anchor="middle">time since start (s)</text>')
    return x_of, y_of, body


def line_chart(series: dict, unit: str, width: int = 900, height: int = 240, y_max: Optional[float] = None) -> str:
    """Lines over time: ``series[name] = (x_seconds, y)``."""
    xs = [x for xv, _ in series.values() for x in xv]
    ys = [y for _, yv in series.values() for y in yv]
    x_of, y_of, body = _time_axes(max(xs) if xs else 0.0, y_max if y_max is not None else (max(ys) if ys else 0.0),
                                  unit, width, height)
    legend = []
    for j, (name, (xv, yv)) in enumerate(series.items()):
        color = PALETTE[j % len(PALETTE)]
        legend.append((name, color))
        pts = " ".join(f"{x_of(x):.1f},{y_of(y):.1f}" for x, y in zip(xv, yv))
        if len(xv) == 1:
            body.append(f'<circle class="point" cx="{x_of(xv[0]):.1f}" cy="{y_of(yv[0]):.1f}" r="3" '
                        f'fill="{color}"><title>{_e(name)}</title></circle>')
        body.append(f'<polyline class="line" points="{pts}" fill="none" stroke="{color}" stroke-width="1.8">'
                    f'<title>{_e(name)}</title></polyline>')
    return _frame(width, height, f"{unit} over time", body, legend)


def thin_indices(totals: Sequence[float], max_points: int) -> list[int]:
    """At most ``max_points`` indices of a long curve, keeping each bucket's highest point (and the last),
    so a peak is never thinned away.

    Example::

        >>> thin_indices([1, 5, 2, 3, 9, 4], 3)
        [1, 3, 4, 5]
    """
    n = len(totals)
    if n <= max_points:
        return list(range(n))
    size = n / max_points
    keep = {n - 1}
    for b in range(max_points):
        lo, hi = int(b * size), max(int((b + 1) * size), int(b * size) + 1)
        keep.add(max(range(lo, min(hi, n)), key=lambda i: totals[i]))
    return sorted(keep)


def stacked_area(xs: Sequence[float], layers: dict, unit: str, width: int = 900, height: int = 280,
                 marker: Optional[tuple] = None, max_points: int = 1500) -> str:
    """Layers stacked over time (``layers[name]`` = values at ``xs``, seconds), as step curves;
    ``marker = (x, label)`` draws a vertical line (the peak)."""
    top, bottom = _TIME_MARGINS[2], _TIME_MARGINS[3]
    names = list(layers)
    totals = [sum(float(layers[k][i]) for k in names) for i in range(len(xs))]
    keep = thin_indices(totals, max_points)
    xs = [float(xs[i]) for i in keep]
    x_of, y_of, body = _time_axes(max(xs) if xs else 0.0, max(totals) if totals else 0.0, unit, width, height)
    base = [0.0] * len(keep)
    legend = []
    for j, name in enumerate(names):
        color = PALETTE[j % len(PALETTE)]
        legend.append((name, color))
        upper = [b + float(layers[name][i]) for b, i in zip(base, keep)]
        pts = []
        for k, x in enumerate(xs):       # a step curve: the value holds until the next change
            if k:
                pts.append(f"{x_of(x):.1f},{y_of(upper[k - 1]):.1f}")
            pts.append(f"{x_of(x):.1f},{y_of(upper[k]):.1f}")
        back = []
        for k in range(len(xs) - 1, -1, -1):
            back.append(f"{x_of(xs[k]):.1f},{y_of(base[k]):.1f}")
            if k:
                back.append(f"{x_of(xs[k]):.1f},{y_of(base[k - 1]):.1f}")
        body.append(f'<polygon class="area" points="{" ".join(pts + back)}" fill="{color}" fill-opacity="0.85">'
                    f'<title>{_e(name)}</title></polygon>')
        base = upper
    if marker is not None:
        x = x_of(float(marker[0]))
        body.append(f'<line class="marker" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{height - bottom}" '
                    f'stroke="#d62728" stroke-dasharray="4 3"/><text x="{x + 4:.1f}" y="{top + 12}" class="tick" '
                    f'fill="#d62728">{_e(marker[1])}</text>')
    return _frame(width, height, f"{unit} over time", body, legend)


def html_table(headers: list, rows: list, left: int = 1) -> str:
    """An HTML table; cells are HTML already (escape text first), the first ``left`` columns left-aligned."""
    out = ["<table><tr>"]
    out += [f'<th class="{"l" if i < left else ""}">{_e(h)}</th>' for i, h in enumerate(headers)]
    out.append("</tr>")
    for r in rows:
        out.append("<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{v}</td>' for i, v in enumerate(r))
                   + "</tr>")
    out.append("</table>")
    return "".join(out)
