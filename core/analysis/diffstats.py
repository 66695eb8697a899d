"""Is the new run's step time different from the base's? A bootstrap over steps.

Each side's steps are resampled with replacement (independently, ``ROUNDS``
times); the change of the medians, in percent of the base median, gives an
empirical distribution whose 2.5th and 97.5th percentiles are the 95 %
confidence interval. With fewer than :data:`MIN_STEPS` steps a side no verdict
is given: a bootstrap of 3 values is a guess.

Example::

    >>> base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
    >>> change = step_change(base, [v * 1.3 for v in base])
    >>> change.verdict, round(change.delta_pct, 1), change.ci95_pct[0] > 25
    ('regression', 30.0, True)
    >>> step_change(base[:4], base[:4]).verdict
    'not enough steps'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import numpy.typing as npt

MIN_STEPS = 5
ROUNDS = 2000
SEED = 20260101          # fixed: the same two runs give the same interval every time
REGRESSION, IMPROVEMENT, NO_CHANGE, NOT_ENOUGH = "regression", "improvement", "no significant change", \
    "not enough steps"


@dataclass(frozen=True)
class Change:
    """The change of a per-step metric: medians, spreads, the change and its 95 % interval (None without a verdict)."""

    base_ms: Optional[float]
    new_ms: Optional[float]
    base_spread_ms: Optional[tuple[float, float]]    # 10th and 90th percentile of the steps
    new_spread_ms: Optional[tuple[float, float]]
    delta_pct: Optional[float]
    ci95_pct: Optional[tuple[float, float]]
    verdict: str

    def regressed_beyond(self, pct: float) -> bool:
        """True when the change is above ``pct`` percent with 95 % confidence (the interval's low end above it)."""
        return self.ci95_pct is not None and self.ci95_pct[0] > pct


def step_change(base: npt.ArrayLike, new: npt.ArrayLike, rounds: int = ROUNDS, seed: int = SEED) -> Change:
    """Median change of ``new`` against ``base`` (values per step, ms) with a bootstrap 95 % interval."""
    b, n = np.asarray(base, dtype=np.float64), np.asarray(new, dtype=np.float64)
    base_ms = float(np.median(b)) if len(b) else None
    new_ms = float(np.median(n)) if len(n) else None
    spread = lambda a: (float(np.percentile(a, 10)), float(np.percentile(a, 90))) if len(a) else None  # noqa: E731
    delta = None
    if base_ms is not None and new_ms is not None:
        delta = 0.0 if new_ms == base_ms else (100.0 * (new_ms - base_ms) / base_ms if base_ms else float("inf"))
    if len(b) < MIN_STEPS or len(n) < MIN_STEPS or not base_ms:
        return Change(base_ms, new_ms, spread(b), spread(n), delta, None, NOT_ENOUGH)
    rng = np.random.default_rng(seed)
    mb = np.median(b[rng.integers(0, len(b), (rounds, len(b)))], axis=1)
    mn = np.median(n[rng.integers(0, len(n), (rounds, len(n)))], axis=1)
    pct = 100.0 * (mn - mb) / np.where(mb > 0, mb, np.nan)
    pct = pct[np.isfinite(pct)]
    lo, hi = (float(np.percentile(pct, 2.5)), float(np.percentile(pct, 97.5))) if len(pct) else (0.0, 0.0)
    verdict = REGRESSION if lo > 0 else IMPROVEMENT if hi < 0 else NO_CHANGE
    return Change(base_ms, new_ms, spread(b), spread(n), delta, (lo, hi), verdict)
