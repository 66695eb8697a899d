"""Slow-rank detection with a stated statistical rule.

In synchronous training a slow rank does not show a longer step: the others
wait for it inside communication. So the metric is each rank's **busy time**
per step, ``Stage - Communication(Not Overlapped)``: step time not spent
waiting in (exposed) communication. Without communication data it is the
step time itself.

Rule (per step, over the ranks that ran it, at least 3 ranks):

* ``m`` = median busy time, ``MAD`` = median absolute deviation from ``m``;
* a rank is an outlier in that step when ``busy - m > max(3.5 * 1.4826 * MAD,
  0.05 * m)``: a robust z-score above 3.5 (Iglewicz & Hoaglin's outlier
  threshold; 1.4826 scales MAD to a standard deviation for normal data) *and*
  more than 5 % above the median (msprof-analyze's rule of thumb, so that a
  near-zero MAD does not flag noise);
* a rank is **slow** when it is an outlier in at least half of the steps
  tested.

Example::

    >>> r = detect_slow_ranks({0: {1: 100.0, 2: 100.0}, 1: {1: 101.0, 2: 99.0},
    ...                        2: {1: 100.5, 2: 100.2}, 3: {1: 130.0, 2: 131.0}})
    >>> r["slow_ranks"]
    [3]
"""
from __future__ import annotations

import numpy as np

Z_THRESHOLD = 3.5
MAD_SCALE = 1.4826
MIN_RELATIVE = 0.05
MIN_RANKS = 3
MIN_STEP_FRACTION = 0.5
RULE = (f"per step: busy = Stage - Communication(Not Overlapped); outlier if busy - median > "
        f"max({Z_THRESHOLD} * {MAD_SCALE} * MAD, {MIN_RELATIVE:.0%} of median) over >= {MIN_RANKS} ranks; "
        f"slow if outlier in >= {MIN_STEP_FRACTION:.0%} of tested steps")


def detect_slow_ranks(busy: dict) -> dict:
    """``busy[rank][step]`` (µs) -> rule, per-step outliers and the slow ranks."""
    steps = sorted({s for per in busy.values() for s in per})
    per_rank = {r: {"tested_steps": 0, "outlier_steps": [], "max_robust_z": 0.0, "excess_pct": []}
                for r in sorted(busy)}
    step_rows = []
    for s in steps:
        ranks = [r for r in sorted(busy) if s in busy[r]]
        if len(ranks) < MIN_RANKS:
            continue
        x = np.array([busy[r][s] for r in ranks], dtype=np.float64)
        m = float(np.median(x))
        mad = float(np.median(np.abs(x - m)))
        limit = max(Z_THRESHOLD * MAD_SCALE * mad, MIN_RELATIVE * abs(m))
        outliers = []
        for r, v in zip(ranks, x.tolist()):
            info = per_rank[r]
            info["tested_steps"] += 1
            z = (v - m) / (MAD_SCALE * mad) if mad > 0 else (float("inf") if v > m else 0.0)
            if np.isfinite(z):
                info["max_robust_z"] = max(info["max_robust_z"], round(z, 3))
            if v - m > limit:
                outliers.append(r)
                info["outlier_steps"].append(s)
                info["excess_pct"].append(100.0 * (v - m) / m if m else 0.0)
        step_rows.append({"step": s, "ranks": len(ranks), "median_us": round(m, 3), "mad_us": round(mad, 3),
                          "limit_us": round(limit, 3), "outliers": outliers})
    slow = []
    ranks_out = []
    for r, info in per_rank.items():
        tested = info["tested_steps"]
        n_out = len(info["outlier_steps"])
        is_slow = tested > 0 and n_out >= MIN_STEP_FRACTION * tested
        if is_slow:
            slow.append(r)
        ranks_out.append({"rank": r, "tested_steps": tested, "outlier_steps": info["outlier_steps"],
                          "slow": is_slow, "max_robust_z": info["max_robust_z"],
                          "median_excess_pct": round(float(np.median(info["excess_pct"])), 3)
                          if info["excess_pct"] else 0.0})
    applicable = bool(step_rows)
    return {"rule": RULE, "applicable": applicable,
            "note": "" if applicable else f"needs at least {MIN_RANKS} ranks running the same step",
            "slow_ranks": slow, "steps": step_rows, "ranks": ranks_out}
