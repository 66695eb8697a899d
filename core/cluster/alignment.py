"""Clock alignment of ranks for a merged timeline.

Every rank stamps events with its own host's wall clock (epoch ns, taken with
a monotonic/realtime anchor bracketed by two monotonic reads). Ranks on one
host share that clock: no shift is needed and the error is the anchor's read
error (well under a microsecond). Ranks on different hosts differ by their
NTP offset (typically 0.1-10 ms), which a merged view must remove.

Method (``align="comm"``): a collective cannot finish on any rank before
every rank has entered it. For the same collective ``k`` on ranks ``a``
(already aligned) and ``b``, the correction ``x`` to add to ``b``'s clock
satisfies ``start_a - end_b <= x <= end_a - start_b``. Intersecting over all
matched collectives (matched by step, op type, group and order) gives an
interval ``[lo, hi]`` that holds the true offset for certain; the estimate is
the median of ``end_a - end_b`` (collectives end nearly together) clipped to
that interval, and the stated error bound is ``max(x - lo, hi - x)``
(guaranteed, often loose: about the shortest collective's duration);
``end_residual_ns`` reports how closely the collectives' ends line up after
the shift (the typical error). Ranks
are aligned breadth-first from the lowest rank; bounds add up along the path.
``align="auto"`` uses no shift when all ranks share one hostname, ``comm``
otherwise (ranks without communication data keep their wall clock, error
unknown); ``align="none"`` never shifts.

Example::

    >>> import numpy as np
    >>> keys = ["0|AllReduce|g|0", "0|AllReduce|g|1"]
    >>> a = (keys, np.array([100, 300]), np.array([200, 400]))
    >>> b = (keys, np.array([1150, 1340]), np.array([1205, 1402]))   # b's clock is ~1000 ahead
    >>> x, bound, n, ok = pair_offset(a, b)
    >>> x, bound, n, ok
    (-1003, 99, 2, True)
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import ProfilerConfigError

MODES = ("auto", "comm", "none")


def pair_offset(a: tuple, b: tuple) -> tuple[int, int, int, bool]:
    """(correction for b, error bound, matched ops, consistent) from
    (keys, starts, ends) of two ranks."""
    ia = {k: i for i, k in enumerate(a[0])}
    pairs = [(ia[k], j) for j, k in enumerate(b[0]) if k in ia]
    if not pairs:
        return 0, -1, 0, False
    ai = np.array([p[0] for p in pairs])
    bj = np.array([p[1] for p in pairs])
    sa, ea = a[1][ai].astype(np.int64), a[2][ai].astype(np.int64)
    sb, eb = b[1][bj].astype(np.int64), b[2][bj].astype(np.int64)
    lo = int((sa - eb).max())
    hi = int((ea - sb).min())
    est = int(np.median(ea - eb))
    if lo <= hi:
        x = min(max(est, lo), hi)
        return x, max(x - lo, hi - x), len(pairs), True
    spread = int((ea - eb).max() - (ea - eb).min())
    return est, max(spread, lo - hi), len(pairs), False


def _end_residual(a: tuple, b: tuple, x: int) -> int:
    """Largest |end_a - (end_b + x)| over matched collectives: how well ends line up after the shift."""
    ia = {k: i for i, k in enumerate(a[0])}
    pairs = [(ia[k], j) for j, k in enumerate(b[0]) if k in ia]
    if not pairs:
        return -1
    ea = a[2][[p[0] for p in pairs]].astype(np.int64)
    eb = b[2][[p[1] for p in pairs]].astype(np.int64)
    return int(np.abs(ea - eb - x).max())


def align_ranks(summaries: list, mode: str = "auto") -> dict:
    """Per-rank clock corrections ``{rank: {"offset_ns", "error_bound_ns", "method", ...}}``."""
    if mode not in MODES:
        raise ProfilerConfigError("align", mode, ", ".join(MODES))
    by_rank = {s.rank: s for s in summaries}
    hosts = {s.hostname for s in summaries}
    out: dict = {}
    use_comm = mode == "comm" or (mode == "auto" and len(hosts) > 1)
    if not use_comm:
        method = "none (single host: one shared clock)" if len(hosts) <= 1 else "none (requested)"
        for r in sorted(by_rank):
            out[r] = {"offset_ns": 0, "error_bound_ns": 0 if len(hosts) <= 1 else None, "method": method,
                      "reference": None, "matched_ops": 0, "consistent": True}
        return {"mode": mode, "ranks": out}
    data = {r: (s.align_keys, np.asarray(s.align_start), np.asarray(s.align_end)) for r, s in by_rank.items()}
    with_ops = [r for r in sorted(data) if data[r][0]]
    aligned: dict = {}
    if with_ops:
        ref = with_ops[0]
        aligned[ref] = (0, 0)
        out[ref] = {"offset_ns": 0, "error_bound_ns": 0, "method": "reference", "reference": None,
                    "matched_ops": len(data[ref][0]), "consistent": True}
        pending = [r for r in with_ops if r != ref]
        key_sets = {r: set(data[r][0]) for r in with_ops}
        # each pending rank's best reference so far: (shared collectives, the earliest aligned rank sharing
        # that many), updated as ranks are aligned (each pair's overlap counted once, not once per round)
        best_for: dict = {b: (0, None) for b in pending}

        def consider(a: int) -> None:
            for b in pending:
                n = len(key_sets[a] & key_sets[b])
                if n > best_for[b][0]:
                    best_for[b] = (n, a)

        consider(ref)
        while pending:
            best: Optional[tuple] = None
            for b in pending:
                n, a = best_for[b]
                if n and (best is None or n > best[0]):
                    best = (n, a, b)
            if best is None:
                break
            _, a, b = best
            x, bound, n, ok = pair_offset(data[a], data[b])
            residual = _end_residual(data[a], data[b], x)
            off = aligned[a][0] + x
            err = aligned[a][1] + bound
            aligned[b] = (off, err)
            out[b] = {"offset_ns": int(off), "error_bound_ns": int(err), "method": "collectives",
                      "reference": a, "matched_ops": n, "consistent": ok,
                      "end_residual_ns": residual}
            pending.remove(b)
            del best_for[b]
            consider(b)
    for r in sorted(by_rank):
        if r not in out:
            out[r] = {"offset_ns": 0, "error_bound_ns": None, "method": "wall clock (no shared collectives)",
                      "reference": None, "matched_ops": 0, "consistent": True}
    return {"mode": mode, "ranks": dict(sorted(out.items()))}
