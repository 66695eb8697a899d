"""The ``slow_rank`` job rule: which rank is slow, and where its extra step time goes.

Steps are matched across ranks by number, so a rank whose profiler merely started later (start-up
skew) is judged on the same steps as the others, never on the time it started; the skew itself is
measured (first common step's start, rank by rank) and reported. Only the steps every rank recorded
are used, less the first of them (warm-up) when three or more remain, and less a last step under a
tenth of the median step (the window's tail from the last ``step()`` to its stop).

Per rank the metric is its median **busy time** per step, ``Stage - Communication(Not Overlapped)``
(in synchronous training the others wait for a slow rank inside communication, so its step is not
longer, its busy time is); without communication data the step time. A rank is slow when its busy
time exceeds the ranks' median by more than ``max(3.5 * 1.4826 * MAD, 5 % of the median)`` (a robust
z-score above 3.5 and 5 % over: npuprof.cluster.slowrank's rule, applied to the per-rank medians).

Its excess over the median rank is decomposed into what it spent more on per step, each with its
share of the excess (each a median over the steps): operator types (op_statistic), named ranges (range_statistic), data waiting
(the ``dataloader`` rule's names), host gaps (Free), communication waiting (Communication(Not
Overlapped): the time the *other* ranks wait shows there, so a slow rank's is usually below median).
"""
from __future__ import annotations

import math
import re

import numpy as np

from ....events import EventKind
from ...steps import step_spans
from ..model import Finding, Needs, NotChecked, Rule, RuleContext

DATA_WAIT = re.compile(r"enumerate\(DataLoader\)|DataLoaderIter|IteratorGetNext|GetNext|dataset_iterator|"
                       r"data_?load|next_batch", re.IGNORECASE)
Z_LIMIT, MAD_SCALE, MIN_EXCESS = 3.5, 1.4826, 0.05
TOP = 8


def _steps(result) -> dict:
    """step number -> (Stage ms, Communication(Not Overlapped) ms or 0, Free ms or nan)."""
    table = result.tables.get("step_trace_time")
    out: dict = {}
    if table is None or not len(table):
        return out
    for r in table.records():
        try:
            stage = float(r["Stage"]) / 1000.0
        except (TypeError, ValueError):
            continue
        if math.isnan(stage):
            continue
        comm = _f(r.get("Communication(Not Overlapped)"))
        out[int(r["Step"])] = (stage, 0.0 if math.isnan(comm) else comm / 1000.0, _f(r.get("Free")) / 1000.0)
    return out


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _per_step_components(result, steps: list) -> dict:
    """component -> its median ms per step over ``steps`` (events inside those steps' ProfilerStep ranges):
    the median, so that a step slowed by something else on the machine does not decide."""
    ev = result.events
    numbers, starts, ends = step_spans(ev)
    keep = np.isin(numbers, np.array(steps))
    comps: dict = {}
    if not keep.any() or not len(ev):
        return comps
    n_steps = len(numbers)
    kind, dur, ts = ev["kind"], ev["dur"], ev["ts"]
    b = np.searchsorted(starts, ts, side="right") - 1
    bc = np.clip(b, 0, n_steps - 1)
    inside = (b >= 0) & (ts < ends[bc]) & keep[bc]
    names = ev.strings
    per_step: dict = {}

    def add(prefix: str, mask: np.ndarray, key_col: np.ndarray) -> None:
        rows = np.flatnonzero(mask & inside)
        if not len(rows):
            return
        for code in np.unique(key_col[rows]).tolist():
            mine = rows[key_col[rows] == code]
            sums = np.bincount(bc[mine], weights=dur[mine].astype(np.float64), minlength=n_steps)
            key = f"{prefix}{names[code]}"
            per_step[key] = per_step.get(key, 0.0) + sums

    device = ev["device"] >= 0
    kernels = (kind == np.uint8(EventKind.KERNEL)) & device
    add("operator type: ", kernels, ev["type"])
    if not kernels.any():
        add("operator type: ", kind == np.uint8(EventKind.OP), ev["type"])
    add("range: ", (kind == np.uint8(EventKind.RANGE)) & (ev["device"] < 0), ev["name"])
    data = [v for k, v in per_step.items() if k.startswith("range: ") and DATA_WAIT.search(k)]
    if data:
        per_step["data wait"] = sum(data)
    for key, values in per_step.items():
        comps[key] = float(np.median(values[keep])) / 1e6
    return comps


def slow_rank(ctx: RuleContext):
    """Slow ranks of a job and their excess step time decomposed (see the module docstring)."""
    ranks: dict = ctx.options.get("ranks") or {}
    if len(ranks) < 3:
        return NotChecked(f"a job of at least 3 ranks (the median rank needs 3; {len(ranks)} given)")
    per_rank = {rk: _steps(res) for rk, res in ranks.items()}
    common = sorted(set.intersection(*(set(s) for s in per_rank.values())))
    if len(common) >= 3:
        common = common[1:]
    if len(common) >= 3:
        stages = [float(np.median([per_rank[rk][s][0] for rk in ranks])) for s in common]
        if stages[-1] < 0.1 * float(np.median(stages)):
            common = common[:-1]
    if not common:
        return NotChecked("steps every rank recorded (step_trace_time)")
    # start-up skew: when each rank's first common step started, against the earliest
    first = {}
    for rk, res in ranks.items():
        numbers, starts, _ = step_spans(res.events)
        hit = np.flatnonzero(numbers == common[0])
        if len(hit):
            first[rk] = int(starts[hit[0]])
    t0 = min(first.values()) if first else 0
    skew = {rk: (t - t0) / 1e6 for rk, t in first.items()}
    # medians over the steps: a step slowed by something else on the machine does not decide
    busy = {rk: float(np.median([per_rank[rk][s][0] - per_rank[rk][s][1] for s in common])) for rk in ranks}
    values = np.array(list(busy.values()))
    med = float(np.median(values))
    mad = float(np.median(np.abs(values - med)))
    limit = max(Z_LIMIT * MAD_SCALE * mad, MIN_EXCESS * med)
    slow = sorted((rk for rk, v in busy.items() if v - med > limit), key=lambda rk: -busy[rk])
    if not slow:
        return []
    comps = {rk: _per_step_components(res, common) for rk, res in ranks.items()}
    on_device = all(bool((res.events["kind"] == np.uint8(EventKind.KERNEL)).any()) for res in ranks.values())
    # Free is the device's idle time; on a host-only run it is the whole step less host operators: no gap
    free = {rk: float(np.nanmedian([per_rank[rk][s][2] for s in common])) if on_device else math.nan
            for rk in ranks}
    comm = {rk: float(np.median([per_rank[rk][s][1] for s in common])) for rk in ranks}
    findings = []
    for rk in slow:
        excess = busy[rk] - med
        rows = []
        keys = set(comps[rk])
        for key in keys:
            others = [comps[o].get(key, 0.0) for o in ranks]
            delta = comps[rk][key] - float(np.median(others))
            if delta > 0:
                rows.append({"component": key, "extra_ms_per_step": round(delta, 3),
                             "share_of_excess": round(delta / excess, 4) if excess > 0 else None})
        for name, values_of in (("host gaps (Free)", free), ("communication wait (not overlapped)", comm)):
            if not math.isnan(values_of[rk]):
                delta = values_of[rk] - float(np.median(list(values_of.values())))
                rows.append({"component": name, "extra_ms_per_step": round(delta, 3),
                             "share_of_excess": round(delta / excess, 4) if excess > 0 else None})
        rows.sort(key=lambda r: -r["extra_ms_per_step"])
        evidence = [{"rank": rk, "busy_ms_per_step": round(busy[rk], 3), "median_rank_ms": round(med, 3),
                     "excess_ms": round(excess, 3), "steps_judged": f"{common[0]}-{common[-1]}",
                     "start_skew_ms": round(skew.get(rk, math.nan), 3)}] + rows[:TOP]
        top = rows[0]["component"] if rows else "unknown"
        findings.append(Finding("slow_rank", ctx.say("slow_rank.title", rank=rk, ms=excess, top=top), "high", excess,
                                evidence, ctx.say("slow_rank.advice", rank=rk, top=top)))
    skews = {rk: round(s, 3) for rk, s in skew.items()}
    findings[0].evidence.append({"start_skew_ms_by_rank (trimmed: steps matched by number)": skews})
    return findings


RULES = [
    Rule("slow_rank", "Slow ranks of a job and why", slow_rank, Needs(reads=("events", "step_trace_time")),
         docs="docs/advise.md#slow_rank", scope="job"),
]
