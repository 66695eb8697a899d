"""Two analysed runs compared: step time with a confidence interval, breakdown, per-name rows.

Pure: :func:`compare` reads two :class:`~npuprof.analysis.result.AnalysisResult`
and returns a :class:`DiffResult`; nothing is written (the ``npuprof diff``
command and :func:`npuprof.diff` load the runs and write the page or JSON).

What it answers, largest first:

- **step time** per side (median, 10th-90th percentile over the steps) and its
  change with a bootstrap 95 % interval (:mod:`.diffstats`); ``--metric`` picks
  another per-step number (a breakdown column, or one row's time per step);
- the **breakdown** (Computing, Communication(Not Overlapped), Overlapped,
  Free, Preparing: mean per step, µs) per side and its delta;
- **rows** per operator, kernel, API, user range, collective (with its
  group) and step: counts and totals per side, matched by name
  (:mod:`.diffnames`); a row one side lacks is still a row (zeros on the other
  side) and is listed in ``unmatched``;
- the **top contributors** to the step-time delta: rows ranked by their change
  per step, with their share of the step's change (rows nest, a range holding
  operators, so shares of different kinds do not add up to 100 %);
- the **memory** peak per side when both sides have allocation data.

Steps: events count in the step they started in; a device kernel or
collective with a correlation id counts in its launch's step, and in none
when the data links kernels to launches but not this one (as HTA attributes
kernels to iterations). Each side's ``outside_steps`` counts the events of the compared
kinds left outside the compared steps, ``communication_tasks`` the tasks of
collectives (their time is their operator's row): no event is dropped unsaid.

Example::

    >>> from pathlib import Path
    >>> from npuprof.events import EventTable, EventKind
    >>> from npuprof.runinfo import RunInfo
    >>> from npuprof.analysis.step_breakdown import assign_steps
    >>> def run(slow):
    ...     ts, dur, kind, name = [], [], [], []
    ...     for s in range(6):
    ...         t0 = s * 10_000_000
    ...         ts += [t0, t0 + 10, t0 + 5_000_000]; kind += [EventKind.STEP, EventKind.RANGE, EventKind.RANGE]
    ...         dur += [9_000_000, 4_000_000 + slow * 1_000_000 + s * 1000, 3_000_000]
    ...         name += [f"ProfilerStep#{s}", "forward", "backward"]
    ...     ev = assign_steps(EventTable.from_records(ts=ts, dur=dur, kind=kind, name=name))
    ...     return AnalysisResult(Path("run"), RunInfo(Path("run")), ev)
    >>> d = compare(run(0), run(0))
    >>> d.step_time.verdict, d.step_time.delta_pct
    ('no significant change', 0.0)
    >>> d = compare(run(0), run(1), DiffOptions(metric="range:forward"))
    >>> d.step_time.verdict, d.top_contributors[0].name
    ('regression', 'forward')
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import ProfilerConfigError
from ..events import EventKind, EventTable
from .rows import comm_op_mask, comm_task_mask
from .step_breakdown import step_trace
from .diffnames import BASE_ONLY, NEW_ONLY, match_names, normalise_name
from .diffstats import Change, step_change
from .result import AnalysisResult

BY_KINDS = ("op", "kernel", "api", "range", "communication", "step")
BREAKDOWN = ("Computing", "Communication(Not Overlapped)", "Overlapped", "Free", "Preparing")
_ROW_KINDS = {"op": EventKind.OP, "kernel": EventKind.KERNEL, "api": EventKind.API, "range": EventKind.RANGE,
              "communication": EventKind.COMM}
_STEPS_RE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


# -- options ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DiffOptions:
    """What to compare. ``*_steps``: inclusive step-number ranges (None: every step);
    ``metric``: ``step`` (the step time), a breakdown column, or ``BY:NAME`` (one row's time per step,
    e.g. ``range:forward``); ``name_map``: base name -> new name (``--map``); ``normalise``: False
    matches names exactly (and by ``name_map``) only, as HTA's TraceDiff without short names."""

    by: tuple[str, ...] = BY_KINDS
    top: int = 10
    base_steps: Optional[tuple[int, int]] = None
    new_steps: Optional[tuple[int, int]] = None
    metric: str = "step"
    name_map: Optional[dict[str, str]] = None
    normalise: bool = True


def parse_steps(param: str, value: Any) -> Optional[tuple[int, int]]:
    """``"A-B"`` or ``"N"`` -> (A, B) inclusive; None stays None.

    Example::

        >>> parse_steps("--steps", "3-10"), parse_steps("--steps", "4")
        ((3, 10), (4, 4))
    """
    if value is None:
        return None
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        lo, hi = value
    else:
        m = _STEPS_RE.match(str(value))
        if not m:
            raise ProfilerConfigError(param, value, "a step number N or a range A-B of step numbers")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
    if lo > hi or lo < 0:
        raise ProfilerConfigError(param, value, "a range A-B with 0 <= A <= B")
    return lo, hi


def parse_by(value: Any) -> tuple[str, ...]:
    """``--by``: one of :data:`BY_KINDS`, ``all``, or several joined by commas."""
    parts = [p.strip() for p in str(value).split(",") if p.strip()] if value is not None else ["all"]
    if parts == ["all"]:
        return BY_KINDS
    bad = [p for p in parts if p not in BY_KINDS]
    if bad or not parts:
        raise ProfilerConfigError("--by", value, f"one of {', '.join(BY_KINDS)}, all, or several joined by commas")
    return tuple(dict.fromkeys(parts))


def check_metric(value: Any) -> str:
    """``--metric``: ``step``, a breakdown column (any case), or ``BY:NAME``."""
    text = str(value)
    if text == "step" or _breakdown_column(text) is not None:
        return text
    by, sep, name = text.partition(":")
    if sep and by in _ROW_KINDS and name:
        return text
    raise ProfilerConfigError("--metric", value, "step, a breakdown column (" + ", ".join(BREAKDOWN) +
                              "), or BY:NAME with BY one of " + ", ".join(_ROW_KINDS) + " (e.g. range:forward)")


def _breakdown_column(text: str) -> Optional[str]:
    low = text.lower()
    return next((c for c in BREAKDOWN if c.lower() == low or c.lower().split("(")[0] == low), None)


# -- result ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SideQuality:
    """What was wrong with one side's input: its data-quality issues (:mod:`npuprof.quality`: an input
    missing, cut, unreadable or not measured; the run is then partial) and its notes."""

    issues: list[str]
    warnings: list[str]

    @property
    def partial(self) -> bool:
        return bool(self.issues)


def input_quality(result: AnalysisResult) -> SideQuality:
    """One side's data quality: the issues of its analysis's :class:`~npuprof.quality.DataQuality`, and the
    warnings that are notes."""
    issues = [str(i) for i in result.quality.issues]
    return SideQuality(issues=issues, warnings=[w for w in result.warnings if w not in issues])


@dataclass(frozen=True)
class Side:
    """One run compared: where, what wrote it, which rank and steps, each step's time (ms)."""

    path: str
    kind: str
    rank: int
    events: int
    steps: list[int]
    step_ms: list[float]
    outside_steps: int          # events of the compared kinds outside the compared steps (not in any row)
    communication_tasks: int    # tasks of collectives in the compared steps: inside their operators' rows' time


@dataclass(frozen=True)
class StepTime(Change):
    """The compared per-step metric (``metric``; the step time by default): medians, change, interval,
    verdict, rounded as shown."""

    metric: str = "step_time"


@dataclass(frozen=True)
class BreakdownRow:
    """One breakdown column: mean per step on each side (µs) and the change."""

    name: str
    base_us: float
    new_us: float
    delta_us: float


@dataclass(frozen=True)
class DiffRow:
    """One name (or names matched together) of one kind: counts and total time per side (µs)."""

    by: str
    name: str
    base_count: int
    new_count: int
    base_total_us: float
    new_total_us: float
    delta_us: float
    change: str                 # HTA's count change: "+" more in new, "-" fewer, "=" same
    match: str                  # exact | normalised | map | base only | new only
    base_names: list[str]
    new_names: list[str]

    @property
    def base_avg_us(self) -> Optional[float]:
        return self.base_total_us / self.base_count if self.base_count else None

    @property
    def new_avg_us(self) -> Optional[float]:
        return self.new_total_us / self.new_count if self.new_count else None


@dataclass(frozen=True)
class Contributor:
    """A row's change per step (µs) and its share of the step time's change (%; None when that is 0)."""

    by: str
    name: str
    delta_per_step_us: float
    share_pct: Optional[float]


@dataclass(frozen=True)
class UnmatchedRow:
    by: str
    name: str
    count: int
    total_us: float


@dataclass(frozen=True)
class MemoryChange:
    base_peak_mb: float
    new_peak_mb: float
    delta_mb: float


@dataclass
class DiffResult:
    """What :func:`compare` found; ``to_json()`` is the stable shape docs/diff.md describes.

    Example::

        d = npuprof.diff("./before", "./after")
        assert d.step_time.verdict != "regression", d.table()
    """

    base: Side
    new: Side
    step_time: StepTime
    breakdown: list[BreakdownRow]
    rows: list[DiffRow]
    top_contributors: list[Contributor]
    unmatched: dict[str, list[UnmatchedRow]]
    memory: Optional[MemoryChange]
    data_quality: dict[str, SideQuality]
    options: DiffOptions = field(default_factory=DiffOptions)

    @property
    def partial(self) -> bool:
        """True when either side's data is partial (has data-quality issues)."""
        return any(q.partial for q in self.data_quality.values())

    def regressed_beyond(self, pct: float) -> bool:
        return self.step_time.regressed_beyond(pct)

    def to_dict(self) -> dict:
        rows = []
        for r in self.rows:
            d = asdict(r)
            d["base_avg_us"], d["new_avg_us"] = r.base_avg_us, r.new_avg_us
            rows.append(d)
        return {
            "base": asdict(self.base), "new": asdict(self.new),
            "step_time": {**asdict(self.step_time),
                          "ci95_pct": list(self.step_time.ci95_pct) if self.step_time.ci95_pct else None},
            "breakdown": [asdict(b) for b in self.breakdown],
            "rows": rows,
            "top_contributors": [asdict(c) for c in self.top_contributors],
            "unmatched": {side: [asdict(u) for u in us] for side, us in self.unmatched.items()},
            "memory": asdict(self.memory) if self.memory else None,
            "data_quality": {**{side: {**asdict(q), "partial": q.partial} for side, q in self.data_quality.items()},
                             "partial": self.partial},
        }

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def table(self, rows: int = 15) -> str:
        """A plain-text summary: step time, breakdown, top contributors, the largest row changes."""
        st = self.step_time
        lines = [f"base: {self.base.path} ({self.base.kind}, rank {self.base.rank}, {len(self.base.steps)} steps)",
                 f"new:  {self.new.path} ({self.new.kind}, rank {self.new.rank}, {len(self.new.steps)} steps)"]
        ci = f"  95% CI [{st.ci95_pct[0]:+.2f}%, {st.ci95_pct[1]:+.2f}%]" if st.ci95_pct else ""
        lines.append(f"{st.metric}: {_ms(st.base_ms)} -> {_ms(st.new_ms)} ms  "
                     f"({'n/a' if st.delta_pct is None else f'{st.delta_pct:+.2f}%'}){ci}  {st.verdict}")
        if self.breakdown:
            lines.append("")
            lines.append(f"{'breakdown (mean per step)':<34}{'base us':>14}{'new us':>14}{'delta us':>14}")
            for b in self.breakdown:
                lines.append(f"{b.name:<34}{b.base_us:>14,.1f}{b.new_us:>14,.1f}{b.delta_us:>+14,.1f}")
        if self.top_contributors:
            lines.append("")
            lines.append("top contributors to the step-time change (per step):")
            for c in self.top_contributors:
                share = "" if c.share_pct is None else f"  {c.share_pct:6.1f}%"
                lines.append(f"  {c.by:<13} {c.delta_per_step_us:>+14,.1f} us{share}  {c.name}")
        shown = sorted((r for r in self.rows if r.by != "step"), key=lambda r: -abs(r.delta_us))[:rows]
        if shown:
            lines.append("")
            lines.append(f"{'by':<14}{'base n':>8}{'new n':>8}{'base us':>14}{'new us':>14}{'delta us':>14}  name")
            for r in shown:
                lines.append(f"{r.by:<14}{r.base_count:>8}{r.new_count:>8}{r.base_total_us:>14,.1f}"
                             f"{r.new_total_us:>14,.1f}{r.delta_us:>+14,.1f}  {r.change} {r.name}")
        for side, us in self.unmatched.items():
            if us:
                lines.append(f"{len(us)} row(s) only in {side}: " + ", ".join(u.name for u in us[:8]) +
                             (" ..." if len(us) > 8 else ""))
        for side, q in self.data_quality.items():
            for s in q.issues:
                lines.append(f"{side}: data quality: {s}")
        return "\n".join(lines)


def _ms(v: Optional[float]) -> str:
    return "n/a" if v is None else f"{v:,.3f}"


# -- the comparison --------------------------------------------------------------------------------------------------
@dataclass
class _Prepared:
    """One side ready to compare: the selected steps' numbers and breakdown, and each event's step."""

    result: AnalysisResult
    steps: np.ndarray            # selected step numbers
    breakdown: dict[str, np.ndarray]   # column -> µs per selected step (Stage: the step time)
    step_of: np.ndarray          # per event: its step (kernels: their launch's)
    in_steps: np.ndarray         # per event: started in a selected step


def _prepare(result: AnalysisResult, steps: Optional[tuple[int, int]], param: str) -> _Prepared:
    table = result.tables.get("step_trace_time")
    if table is None:
        table = step_trace(result.events)
    cols = {c: np.asarray(table.data[c], dtype=np.float64) for c in (*BREAKDOWN, "Stage")}
    numbers = np.asarray(table.data["Step"], dtype=np.int64)
    keep = np.ones(len(numbers), bool) if steps is None else (numbers >= steps[0]) & (numbers <= steps[1])
    if steps is not None and not keep.any():
        have = f"{numbers.min()}-{numbers.max()}" if len(numbers) else "none"
        raise ProfilerConfigError(param, f"{steps[0]}-{steps[1]}", f"steps this run has ({have}): {result.run_dir}")
    step_of = _launch_steps(result.events)
    in_steps = np.isin(step_of, numbers[keep]) if len(step_of) else np.zeros(0, bool)
    return _Prepared(result, numbers[keep], {c: v[keep] for c, v in cols.items()}, step_of, in_steps)


def _launch_steps(events: EventTable) -> np.ndarray:
    """Each event's step. A device kernel or collective whose correlation id names a launch on the host
    takes the launch's step (HTA's rule). Where the data links device events to launches (some are
    found) and has ProfilerStep ranges, one whose launch is not in the trace was launched before
    recording began: it is in no step, as HTA counts it. Without links, the step it started in."""
    if not len(events):
        return np.zeros(0, np.int32)
    step = np.array(events["step"], dtype=np.int32, copy=True)
    kind, corr = events["kind"], events["corr"]
    device = ((kind == np.uint8(EventKind.KERNEL)) | (kind == np.uint8(EventKind.COMM))) & (corr >= 0)
    host = ((kind == np.uint8(EventKind.API)) | (kind == np.uint8(EventKind.OP))) & (corr >= 0)
    if not device.any() or not host.any():
        return step
    hc, hs = corr[host], step[host]
    order = np.argsort(hc, kind="stable")
    hc, hs = hc[order], hs[order]
    rows = np.flatnonzero(device)
    dc = corr[rows]
    pos = np.clip(np.searchsorted(hc, dc), 0, len(hc) - 1)
    found = hc[pos] == dc
    step[rows[found]] = hs[pos[found]]
    if found.any() and (kind == np.uint8(EventKind.STEP)).any():
        step[rows[~found]] = -1
    return step


def _row_totals(side: _Prepared, by: str, by_position: bool = False) -> dict[str, tuple[int, float]]:
    """name -> (count, total µs) of the side's events of kind ``by`` in the selected steps.

    ``step`` rows are named by step number, or by position (``step #1``...) when ``by_position``."""
    ev = side.result.events
    if by == "step":
        labels = [f"step #{i + 1}" for i in range(len(side.steps))] if by_position else \
            [f"step {n}" for n in side.steps.tolist()]
        return {label: (1, float(t)) for label, t in zip(labels, side.breakdown["Stage"].tolist())}
    if not len(ev):
        return {}
    mask = (ev["kind"] == np.uint8(_ROW_KINDS[by])) & side.in_steps
    if by == "communication":
        mask &= comm_op_mask(ev)
    rows = np.flatnonzero(mask)
    if not len(rows):
        return {}
    names = ev["name"][rows].astype(np.int64)
    dur = ev["dur"][rows].astype(np.float64)
    if by == "communication":   # per collective and group: name [group]
        args = ev["args"][rows]
        uniq_args, inv = np.unique(args, return_inverse=True)
        groups = [_group_of(ev.args_object(int(a))) if a else "" for a in uniq_args.tolist()]
        key = names * len(uniq_args) + inv.reshape(-1)
        uk, kinv = np.unique(key, return_inverse=True)
        count = np.bincount(kinv)
        total = np.bincount(kinv, weights=dur)
        out: dict[str, tuple[int, float]] = {}
        for k, c, t in zip(uk.tolist(), count.tolist(), total.tolist()):
            name, g = ev.strings[k // len(uniq_args)], groups[k % len(uniq_args)]
            label = f"{name} [{g}]" if g else name
            prev = out.get(label, (0, 0.0))
            out[label] = (prev[0] + c, prev[1] + t / 1e3)
        return out
    count = np.bincount(names)
    total = np.bincount(names, weights=dur)
    present = np.flatnonzero(count)
    return {ev.strings[c]: (int(count[c]), float(total[c]) / 1e3) for c in present.tolist()}


def _bare_collective(label: str) -> str:
    """A communication row's collective name without its `` [group]``."""
    return label.rsplit(" [", 1)[0] if label.endswith("]") else label


def _group_of(args: dict) -> str:
    for key in ("group_name", "group"):
        v = args.get(key)
        if isinstance(v, (str, int)) and v != "":
            return str(v)
    return ""


def _compare_rows(base: _Prepared, new: _Prepared, by_kinds: Sequence[str],
                  name_map: Optional[dict[str, str]], normalise: bool) -> list[DiffRow]:
    out: list[DiffRow] = []
    # steps are compared by number when both sides have the same ones, else by position
    by_position = set(base.steps.tolist()) != set(new.steps.tolist())
    for by in by_kinds:
        b, n = _row_totals(base, by, by_position), _row_totals(new, by, by_position)
        rows = []
        bare = _bare_collective if by == "communication" else None
        for m in match_names(b, n, name_map if by != "step" else None, normalise and by != "step", bare):
            bc = sum(b[x][0] for x in m.base)
            nc = sum(n[x][0] for x in m.new)
            bt = sum(b[x][1] for x in m.base)
            nt = sum(n[x][1] for x in m.new)
            rows.append(DiffRow(by, m.name, bc, nc, round(bt, 3), round(nt, 3), round(nt - bt, 3),
                                "+" if nc > bc else "-" if nc < bc else "=", m.how, list(m.base), list(m.new)))
        if by == "step":
            rows.sort(key=lambda r: int(r.name.split()[-1].lstrip("#")))
        else:
            rows.sort(key=lambda r: (-abs(r.delta_us), r.name))
        out += rows
    return out


def _contributors(rows: list[DiffRow], base: _Prepared, new: _Prepared, top: int) -> list[Contributor]:
    """Rows ranked by their change per step in the direction of the step time's change."""
    nb, nn = max(len(base.steps), 1), max(len(new.steps), 1)
    step_delta = float(new.breakdown["Stage"].mean() if len(new.steps) else 0.0) - \
        float(base.breakdown["Stage"].mean() if len(base.steps) else 0.0)
    sign = -1.0 if step_delta < 0 else 1.0
    scored = [(r.new_total_us / nn - r.base_total_us / nb, r) for r in rows if r.by != "step"]
    scored.sort(key=lambda x: (-sign * x[0], x[1].by, x[1].name))
    return [Contributor(r.by, r.name, round(d, 3), None if step_delta == 0 else round(100.0 * d / step_delta, 2))
            for d, r in scored[:top]]


def _metric_per_step(side: _Prepared, metric: str) -> np.ndarray:
    """The metric's value per selected step, ms."""
    if metric == "step":
        return side.breakdown["Stage"] / 1e3
    col = _breakdown_column(metric)
    if col is not None:
        return side.breakdown[col] / 1e3
    by, _, name = metric.partition(":")
    ev = side.result.events
    if not len(ev) or not len(side.steps):
        return np.zeros(len(side.steps))
    mask = (ev["kind"] == np.uint8(_ROW_KINDS[by])) & side.in_steps
    rows = np.flatnonzero(mask)
    codes = np.unique(ev["name"][rows]) if len(rows) else np.zeros(0, np.int64)
    key = normalise_name(name)
    wanted = [c for c in codes.tolist() if ev.strings[c] == name or normalise_name(ev.strings[c]) == key]
    rows = rows[np.isin(ev["name"][rows], wanted)]
    order = np.argsort(side.steps, kind="stable")
    pos = order[np.clip(np.searchsorted(side.steps[order], side.step_of[rows]), 0, len(order) - 1)]
    return np.bincount(pos, weights=ev["dur"][rows].astype(np.float64), minlength=len(side.steps)) / 1e6


def _memory(base: AnalysisResult, new: AnalysisResult) -> Optional[MemoryChange]:
    from .memory import memory_summary

    peaks = []
    for res in (base, new):
        if not len(res.events) or not (res.events["kind"] == np.uint8(EventKind.MEMORY)).any():
            return None
        peak = memory_summary(res.events, top=0).peak_mb
        if peak is None:
            return None
        peaks.append(peak)
    return MemoryChange(peaks[0], peaks[1], round(peaks[1] - peaks[0], 3))


def compare(base: AnalysisResult, new: AnalysisResult, options: Optional[DiffOptions] = None) -> DiffResult:
    """Compare two analysed runs (see the module doc); pure, writes nothing."""
    opts = options or DiffOptions()
    b = _prepare(base, opts.base_steps, "--base-steps")
    n = _prepare(new, opts.new_steps, "--new-steps")
    change: Change = step_change(_metric_per_step(b, opts.metric), _metric_per_step(n, opts.metric))
    step_time = StepTime(metric=opts.metric, base_ms=_r3(change.base_ms), new_ms=_r3(change.new_ms),
                         base_spread_ms=_r3(change.base_spread_ms), new_spread_ms=_r3(change.new_spread_ms),
                         delta_pct=_r3(change.delta_pct), ci95_pct=_r3(change.ci95_pct), verdict=change.verdict)
    breakdown = []
    for col in BREAKDOWN:
        bu = float(b.breakdown[col].mean()) if len(b.steps) else 0.0
        nu = float(n.breakdown[col].mean()) if len(n.steps) else 0.0
        breakdown.append(BreakdownRow(col, round(bu, 3), round(nu, 3), round(nu - bu, 3)))
    rows = _compare_rows(b, n, opts.by, opts.name_map, opts.normalise)
    unmatched = {"base": [UnmatchedRow(r.by, r.name, r.base_count, r.base_total_us) for r in rows
                          if r.match == BASE_ONLY],
                 "new": [UnmatchedRow(r.by, r.name, r.new_count, r.new_total_us) for r in rows
                         if r.match == NEW_ONLY]}
    return DiffResult(
        base=_side(b, opts.by), new=_side(n, opts.by), step_time=step_time, breakdown=breakdown, rows=rows,
        top_contributors=_contributors(rows, b, n, opts.top), unmatched=unmatched, memory=_memory(base, new),
        data_quality={"base": input_quality(base), "new": input_quality(new)}, options=opts)


def _side(p: _Prepared, by_kinds: Sequence[str]) -> Side:
    res = p.result
    outside = tasks = 0
    if len(res.events):
        kinds = [int(_ROW_KINDS[b]) for b in by_kinds if b in _ROW_KINDS]
        compared = np.isin(res.events["kind"], kinds)
        if "communication" in by_kinds:
            task = comm_task_mask(res.events)
            compared &= ~task
            tasks = int((task & p.in_steps).sum())
        outside = int((compared & ~p.in_steps).sum())
    return Side(path=str(res.run_dir), kind=res.info.origin.value, rank=res.rank, events=len(res.events),
                steps=p.steps.tolist(), step_ms=[round(v / 1e3, 6) for v in p.breakdown["Stage"].tolist()],
                outside_steps=outside, communication_tasks=tasks)


def _r3(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, tuple):
        return tuple(round(x, 3) for x in v)
    return round(v, 3)


__all__ = ["BY_KINDS", "BREAKDOWN", "BreakdownRow", "Contributor", "DiffOptions", "DiffResult", "DiffRow",
           "MemoryChange", "Side", "SideQuality", "StepTime", "UnmatchedRow", "check_metric", "compare",
           "input_quality", "parse_by", "parse_steps"]
