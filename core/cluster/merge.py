"""The driver's running merge of rank summaries, fed one rank at a time as the workers finish them.

What can be folded per rank is folded when the rank arrives (its busy time per step, for slow-rank
detection), so that after the last rank only what needs every rank is left: the order of the rows, the
clock alignment, the cross-rank communication files.

Example::

    merge = ClusterMerge()
    for _, blob in executor.as_completed(summarise_packed, tasks):
        merge.add(unpack_summary(blob))
    slow = detect_slow_ranks(merge.busy)
    tables = cluster_tables(merge.summaries(), slow, align_ranks(merge.summaries()))
"""
from __future__ import annotations

from typing import Any

from .tables import busy_times


class ClusterMerge:
    """Summaries received so far, and the per-rank parts already folded."""

    def __init__(self) -> None:
        self._by_rank: dict[int, Any] = {}
        self.busy: dict[int, dict[int, float]] = {}     # rank -> step -> Stage - Communication(Not Overlapped)
        self.last_rank: int = -1

    def add(self, summary: Any) -> None:
        """Fold one rank's summary in (a rank arrives once)."""
        if summary.rank in self._by_rank:
            raise ValueError(f"rank {summary.rank} summarised twice")
        self._by_rank[summary.rank] = summary
        self.busy.update(busy_times([summary]))
        self.last_rank = summary.rank

    def summaries(self) -> list:
        """Every summary received, by rank."""
        return [self._by_rank[r] for r in sorted(self._by_rank)]
