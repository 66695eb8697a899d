"""The host-side statistics family: API timing (``api_statistic``), user ranges
(``range_statistic``, record_function and mstx) and the sampled host series (``host_usage``).

Example::

    >>> ev = EventTable.from_records(ts=[0, 10], dur=[3000, 1000], kind=[EventKind.RANGE] * 2,
    ...     name=["forward", "forward"], type=["", ""])
    >>> range_statistic(ev).rows()
    [['forward', 'default', 2, 4.0, 1.0, 2.0, 3.0]]
"""
from __future__ import annotations

import numpy as np

from ..events import EventKind, EventTable
from .analyzer import Analyzer, AnalyzerNeeds
from .grouping import duration_stats, group_by
from .rows import rows_of
from .table import Table

API_STATISTIC_COLUMNS = ["Device_id", "Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)",
                         "Variance"]
RANGE_STATISTIC_COLUMNS = ["Name", "Domain", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                           "Max Time(us)"]
HOST_USAGE_COLUMNS = ["Series", "Samples", "Min", "Avg", "Max"]


def api_statistic(events: EventTable) -> Table:
    """Per API (level, name): time statistics and variance (api_statistic.csv)."""
    mask = events["kind"] == np.uint8(EventKind.API)
    if not mask.any():
        return Table("api_statistic", API_STATISTIC_COLUMNS, {c: [] for c in API_STATISTIC_COLUMNS})
    uniq, count, total, mn, mx, sq = duration_stats(mask, events, ("type", "name", "device"))
    pool = np.asarray(events.strings, dtype=object)
    mean = total / count
    var = np.maximum(sq / count - mean * mean, 0.0) / 1e6  # us^2
    return Table("api_statistic", API_STATISTIC_COLUMNS, {
        "Device_id": ["host" if d < 0 else str(d) for d in uniq[:, 2].tolist()],
        "Level": pool[uniq[:, 0]].tolist(), "API Name": pool[uniq[:, 1]].tolist(),
        "Time(us)": np.round(total / 1e3, 3), "Count": count.tolist(), "Avg(us)": np.round(mean / 1e3, 3),
        "Min(us)": np.round(mn / 1e3, 3), "Max(us)": np.round(mx / 1e3, 3), "Variance": np.round(var, 3)})



def range_statistic(events: EventTable) -> Table:
    """User ranges (record_function, mstx) grouped by name and domain."""
    mask = events["kind"] == np.uint8(EventKind.RANGE)
    if not mask.any():
        return Table("range_statistic", RANGE_STATISTIC_COLUMNS, {c: [] for c in RANGE_STATISTIC_COLUMNS})
    uniq, count, total, mn, mx, _ = duration_stats(mask, events, ("name", "type"))
    pool = np.asarray(events.strings, dtype=object)
    return Table("range_statistic", RANGE_STATISTIC_COLUMNS, {
        "Name": pool[uniq[:, 0]].tolist(), "Domain": [d or "default" for d in pool[uniq[:, 1]].tolist()],
        "Count": count.tolist(), "Total Time(us)": np.round(total / 1e3, 3), "Min Time(us)": np.round(mn / 1e3, 3),
        "Avg Time(us)": np.round(total / count / 1e3, 3), "Max Time(us)": np.round(mx / 1e3, 3)})


def host_usage(events: EventTable) -> Table:
    """Summary of each sampled host series (CPU %, memory %, disk/network B/s)."""
    rows = rows_of(events, EventKind.COUNTER) if len(events) else np.zeros(0, np.int64)
    if not len(rows):
        return Table("host_usage", HOST_USAGE_COLUMNS, {c: [] for c in HOST_USAGE_COLUMNS})
    g = group_by(events["name"][rows])
    val = events["value"][rows]
    total = g.sum(val)
    pool = np.asarray(events.strings, dtype=object)
    return Table("host_usage", HOST_USAGE_COLUMNS, {
        "Series": pool[g.keys[:, 0]].tolist(), "Samples": g.count.tolist(), "Min": np.round(g.min(val), 3),
        "Avg": np.round(total / g.count, 3), "Max": np.round(g.max(val), 3)})


API_STATISTIC = Analyzer(
    "api_statistic", tuple(API_STATISTIC_COLUMNS), api_statistic,
    AnalyzerNeeds(events=(EventKind.API,), columns=("dur", "kind", "type", "name", "device")),
    summary=True, csv="always", title="per API: time statistics and variance")
RANGE_STATISTIC = Analyzer(
    "range_statistic", tuple(RANGE_STATISTIC_COLUMNS), range_statistic,
    AnalyzerNeeds(events=(EventKind.RANGE,), columns=("dur", "kind", "name", "type")),
    summary=True, csv="always", title="user ranges (record_function, mstx) by name and domain")
HOST_USAGE = Analyzer(
    "host_usage", tuple(HOST_USAGE_COLUMNS), host_usage,
    AnalyzerNeeds(events=(EventKind.COUNTER,), columns=("kind", "name", "value"), collected=("host_sys",)),
    summary=True, csv="always", title="each sampled host series: min, mean, max")
