"""Vectorised interval arithmetic used by the step-time breakdown."""
from __future__ import annotations

import numpy as np


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge overlapping [start, end) intervals; returns disjoint sorted segments."""
    if len(starts) == 0:
        return starts.astype(np.int64), ends.astype(np.int64)
    if len(starts) > 1 and bool((starts[1:] >= starts[:-1]).all()):
        s, e = starts, ends
    else:
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] >= reach[:-1]  # touching segments stay apart: bucket edges
    idx = np.flatnonzero(new)
    seg_end = np.append(reach[idx[1:] - 1], reach[-1])
    return s[idx], seg_end


def bucket_index(ts: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``searchsorted(starts, ts, "right") - 1``; linear when ``ts`` is sorted."""
    if len(ts) > 4 * len(starts) and len(ts) > 1 and bool((ts[1:] >= ts[:-1]).all()):
        pos = np.searchsorted(ts, starts, side="left")
        counts = np.diff(np.concatenate(([0], pos, [len(ts)])))
        return np.repeat(np.arange(-1, len(starts), dtype=np.int64), counts)
    return np.searchsorted(starts, ts, side="right") - 1


def per_bucket_length(starts: np.ndarray, ends: np.ndarray, bucket_starts: np.ndarray,
                      bucket_ends: np.ndarray) -> np.ndarray:
    """Total covered length of the union of intervals inside each bucket.

    Buckets are disjoint and sorted (steps). Each interval is clipped to the
    bucket holding its start; intervals starting outside every bucket are
    ignored.
    """
    n = len(bucket_starts)
    out = np.zeros(n, dtype=np.int64)
    if len(starts) == 0 or n == 0:
        return out
    b = bucket_index(starts, bucket_starts)
    ok = (b >= 0) & (starts < bucket_ends[np.clip(b, 0, n - 1)])
    b, s, e = b[ok], starts[ok], np.minimum(ends[ok], bucket_ends[b[ok]])
    seg_s, seg_e = union(s, e)
    seg_b = np.searchsorted(bucket_starts, seg_s, side="right") - 1
    np.add.at(out, seg_b, seg_e - seg_s)
    return out


BLOCK = 1 << 20


def covered_per_bucket(ts: np.ndarray, dur: np.ndarray, mask: np.ndarray, bucket_starts: np.ndarray,
                       bucket_ends: np.ndarray) -> np.ndarray:
    """:func:`per_bucket_length` of the rows selected by ``mask``, for ``ts`` sorted.

    Works block by block with a running reach carried across blocks, so its
    memory is a few block-sized arrays however long the table: for sorted
    starts, an interval adds ``max(0, end - max(start, reach))`` where reach
    is the furthest end seen so far (intervals are clipped to their bucket,
    and buckets are disjoint, so reach never crosses into the next bucket).
    """
    n = len(bucket_starts)
    out = np.zeros(n, dtype=np.int64)
    if n == 0 or not len(ts):
        return out
    reach = np.iinfo(np.int64).min
    for lo in range(0, len(ts), BLOCK):
        m = mask[lo:lo + BLOCK]
        s = ts[lo:lo + BLOCK][m]
        if not len(s):
            continue
        e = s + dur[lo:lo + BLOCK][m]
        b = np.searchsorted(bucket_starts, s, side="right") - 1 if len(s) < 4 * n else bucket_index(s, bucket_starts)
        cb = np.clip(b, 0, n - 1)
        ok = (b >= 0) & (s < bucket_ends[cb])
        # outside every bucket: zero length, and (being sorted) no effect on later intervals
        e = np.where(ok, np.minimum(e, bucket_ends[cb]), s)
        r = np.maximum.accumulate(e)
        np.maximum(r, reach, out=r)
        prev = np.empty_like(r)
        prev[0] = reach
        prev[1:] = r[:-1]
        np.maximum(prev, s, out=prev)
        np.subtract(e, prev, out=prev)
        np.maximum(prev, 0, out=prev)
        out += np.bincount(cb[ok], weights=prev[ok], minlength=n).astype(np.int64)
        reach = int(r[-1])
    return out
