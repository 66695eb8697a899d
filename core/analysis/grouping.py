"""Group-by on integer columns without sorting when the key space is small.

Event tables carry string codes, kinds, devices and thread ids: columns with
few distinct values. Grouping them by a dense composite key (one
``bincount`` pass) is linear; ``np.unique`` (a sort) is the fallback when the
key space is too large.

Example::

    >>> g = group_by(np.array([3, 1, 3, 3]), np.array([0, 0, 0, 1]))
    >>> g.keys.tolist(), g.inverse.tolist(), g.count.tolist()
    ([[1, 0], [3, 0], [3, 1]], [1, 0, 1, 2], [1, 2, 1])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..events import EventTable, is_constant_column

DENSE_LIMIT = 1 << 24   # composite key spaces up to this size use bincount
SMALL_DISTINCT = 32     # small_unique gives up (falls back to a sort) past this many values per block
BLOCK = 1 << 20
DENSE_STATS = 1 << 21     # duration_stats: composite key spaces up to this size are aggregated block by block


@dataclass
class Groups:
    """``keys[g]`` = key columns of group g (sorted), ``inverse[i]`` = group of row i."""

    keys: np.ndarray      # (groups, ncols) int64
    inverse: np.ndarray   # (rows,) int64
    count: np.ndarray     # (groups,) int64

    def __len__(self) -> int:
        return len(self.count)

    def sum(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.inverse, weights=values, minlength=len(self))

    def min(self, values: np.ndarray) -> np.ndarray:
        out = np.full(len(self), np.inf)
        np.minimum.at(out, self.inverse, values)
        return out

    def max(self, values: np.ndarray) -> np.ndarray:
        out = np.full(len(self), -np.inf)
        np.maximum.at(out, self.inverse, values)
        return out


def group_by(*cols: np.ndarray) -> Groups:
    """Group rows by the tuple of integer columns (groups in ascending key order)."""
    cols64 = [np.asarray(c).astype(np.int64, copy=False) for c in cols]
    n = len(cols64[0])
    if n == 0:
        return Groups(np.zeros((0, len(cols)), np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    lows = [int(c.min()) for c in cols64]
    spans = [int(c.max()) - lo + 1 for c, lo in zip(cols64, lows)]
    space = 1
    for s in spans:
        space *= s
    if space <= max(DENSE_LIMIT, 0):
        key = np.zeros(n, dtype=np.int64)
        for c, lo, s in zip(cols64, lows, spans):
            key *= s
            key += c
            if lo:
                key -= lo
        counts = np.bincount(key, minlength=space)
        present = np.flatnonzero(counts)
        to_group = np.empty(space, dtype=np.int64)
        to_group[present] = np.arange(len(present))
        inverse = to_group[key]
        keys = np.empty((len(present), len(cols)), dtype=np.int64)
        rest = present.copy()
        for j in range(len(cols) - 1, -1, -1):
            keys[:, j] = rest % spans[j] + lows[j]
            rest //= spans[j]
        return Groups(keys, inverse, counts[present].astype(np.int64))
    stacked = np.stack(cols64, 1)
    keys, inverse, count = np.unique(stacked, axis=0, return_inverse=True, return_counts=True)
    return Groups(keys.astype(np.int64), inverse.reshape(-1).astype(np.int64), count.astype(np.int64))


def small_unique(values: np.ndarray, mask: Optional[np.ndarray] = None) -> np.ndarray:
    """Sorted distinct values of a column that holds few of them (thread ids, pids).

    Works block by block, peeling one value per pass; a block with many
    distinct values is sorted instead. Linear in practice, never worse than
    ``np.unique`` by much.
    """
    found: set = set()
    for lo in range(0, len(values), BLOCK):
        block = values[lo:lo + BLOCK]
        if mask is not None:
            block = block[mask[lo:lo + BLOCK]]
        known = np.fromiter(found, dtype=block.dtype, count=len(found)) if found else None
        if known is not None and len(block):
            block = block[~np.isin(block, known)]
        passes = 0
        while len(block) and passes < SMALL_DISTINCT:
            v = block[0]
            found.add(v.item())
            block = block[block != v]
            passes += 1
        if len(block):
            found.update(np.unique(block).tolist())
    return np.array(sorted(found), dtype=values.dtype)


def duration_stats(mask: np.ndarray, events: EventTable, key_cols: tuple) -> tuple:
    """Groups of the masked rows by ``key_cols``, ordered by total duration (desc, stable).

    ``key_cols`` are event column names or full-length integer arrays.
    Returns keys, count, total, min, max, sum of squares of ``dur``. When the
    composite key space is small the sums are accumulated block by block
    (memory: a few block-sized arrays); otherwise all rows are grouped at once.
    """
    cols = [events[c] if isinstance(c, str) else c for c in key_cols]
    lows, spans = [], []
    for c in cols:
        if is_constant_column(c):   # one value: no need to gather the masked rows
            lows.append(int(c[0]))
            spans.append(1)
            continue
        sel = c[mask]
        lows.append(int(sel.min()))
        spans.append(int(sel.max()) - lows[-1] + 1)
        del sel
    space = int(np.prod(spans, dtype=object))
    if space > DENSE_STATS:
        rows = np.flatnonzero(mask)
        g = group_by(*(c[rows] for c in cols))
        d = events["dur"][rows].astype(np.float64)
        total, sq, mn, mx, count, keys = g.sum(d), g.sum(d * d), g.min(d), g.max(d), g.count, g.keys
    else:
        count = np.zeros(space, np.int64)
        total = np.zeros(space)
        sq = np.zeros(space)
        mn = np.full(space, np.inf)
        mx = np.full(space, -np.inf)
        dur = events["dur"]
        for lo in range(0, len(mask), BLOCK):
            rows = np.flatnonzero(mask[lo:lo + BLOCK])   # once: each column below is a take, not a mask scan
            if not len(rows):
                continue
            key = np.zeros(len(rows), dtype=np.int64)
            for c, low, span in zip(cols, lows, spans):
                if span > 1:
                    key *= span
                    key += c[lo:lo + BLOCK].take(rows)
                    key -= low
            d = dur[lo:lo + BLOCK].take(rows).astype(np.float64)
            count += np.bincount(key, minlength=space)
            total += np.bincount(key, weights=d, minlength=space)
            sq += np.bincount(key, weights=d * d, minlength=space)
            np.minimum.at(mn, key, d)
            np.maximum.at(mx, key, d)
        present = np.flatnonzero(count)
        count, total, sq, mn, mx = count[present], total[present], sq[present], mn[present], mx[present]
        keys = np.empty((len(present), len(cols)), dtype=np.int64)
        rest = present.copy()
        for j in range(len(cols) - 1, -1, -1):
            keys[:, j] = rest % spans[j] + lows[j]
            rest //= spans[j]
    order = np.argsort(-total, kind="stable")
    return keys[order], count[order], total[order], mn[order], mx[order], sq[order]
