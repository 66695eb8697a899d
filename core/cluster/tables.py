"""The driver half of cluster analysis: rank summaries -> cluster tables.

Pure functions of the summaries (sorted by rank), so any executor gives the
same tables. Times in µs like the per-rank files, except where a column name
says ms or ns.

Example::

    tables = cluster_tables(summaries, slow, alignment)
    tables["cluster_step_trace_time"].rows()[:2]
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np

from ..analysis.step_breakdown import STEP_TRACE_COLUMNS
from ..analysis.table import Table
from .job_communication import cluster_communication_matrix

if TYPE_CHECKING:  # pragma: no cover
    from ..analysis.analyzer import RegisteredAnalyzer

CLUSTER_STEP_COLUMNS = ["Step", "Type", "Index"] + STEP_TRACE_COLUMNS[1:]
RANK_SUMMARY_COLUMNS = ["Rank", "Hostname", "Device_id", "Windows", "Steps", "Events", "Step Time Mean(us)",
                        "Step Time Max(us)", "Computing Mean(us)", "Communication(Not Overlapped) Mean(us)",
                        "Free Mean(us)", "Busy Mean(us)", "Slow", "Outlier Steps", "Clock Offset(ns)",
                        "Clock Error Bound(ns)"]
OP_COLUMNS = ["OP Type", "Core Type", "Ranks", "Count", "Total Time(us)", "Avg Time per Rank(us)", "Max Rank",
              "Max Rank Time(us)", "Min Rank Time(us)"]
COMM_COLUMNS = ["Rank", "Step", "OP Type", "Group", "Count", "Total Time(us)", "Wait Time(us)"]
CLUSTER_TABLES = ("cluster_step_trace_time", "cluster_rank_summary", "cluster_op_statistic", "cluster_communication",
                  "cluster_communication_matrix")
MATRIX_COLUMNS = ["Group", "Step", "OP Name", "Src Rank", "Dst Rank", "Transport Type", "Transit Time(ms)",
                  "Transit Size(MB)", "Bandwidth(GB/s)"]


def _r(x: float) -> Optional[float]:
    """Rounded as the tools write it; None (an empty cell) for a number the data did not measure (NaN)."""
    x = float(x)
    return None if math.isnan(x) else round(x, 3)


def busy_times(summaries: list) -> dict:
    """``{rank: {step: Stage - Communication(Not Overlapped)}}`` in µs."""
    out = {}
    for s in summaries:
        st = s.steps
        out[s.rank] = {int(step): float(stage) - float(cno) for step, stage, cno in
                       zip(st["Step"], st["Stage"], st["Communication(Not Overlapped)"])
                       if not (math.isnan(float(stage)) or math.isnan(float(cno)))}
    return out


def step_table(summaries: list) -> Table:
    rows = []
    for s in summaries:
        st = s.steps
        for i, step in enumerate(st["Step"]):
            rows.append([int(step), "rank", s.rank] + [_r(st[c][i]) for c in STEP_TRACE_COLUMNS[1:]])
    rows.sort(key=lambda r: (r[0], r[2]))
    return _table("cluster_step_trace_time", CLUSTER_STEP_COLUMNS, rows)


def rank_table(summaries: list, slow: dict, alignment: dict) -> Table:
    flagged = {r["rank"]: r for r in slow.get("ranks", [])}
    rows = []
    for s in summaries:
        st = s.steps
        stage = np.asarray(st["Stage"], dtype=float)
        cno = np.asarray(st["Communication(Not Overlapped)"], dtype=float)
        mean = (lambda a: _r(a.mean()) if len(a) else 0.0)      # NaN (not measured) stays empty
        info = flagged.get(s.rank, {})
        al = alignment.get("ranks", {}).get(s.rank, {})
        bound = al.get("error_bound_ns")
        rows.append([s.rank, s.hostname, s.device_id, len(s.run_dirs), len(stage), s.events, mean(stage),
                     _r(np.max(stage)) if len(stage) else 0.0, mean(np.asarray(st["Computing"], dtype=float)),
                     mean(cno), mean(np.asarray(st["Free"], dtype=float)), mean(stage - cno),
                     bool(info.get("slow", False)), " ".join(str(x) for x in info.get("outlier_steps", [])),
                     int(al.get("offset_ns", 0)), -1 if bound is None else int(bound)])
    return _table("cluster_rank_summary", RANK_SUMMARY_COLUMNS, rows)


def op_table(summaries: list) -> Table:
    per: dict = defaultdict(dict)
    counts: dict = defaultdict(int)
    for s in summaries:
        for typ, core, count, total in s.ops:
            key = (typ, core)
            per[key][s.rank] = per[key].get(s.rank, 0.0) + total
            counts[key] += count
    rows = []
    for key, by_rank in per.items():
        total = sum(by_rank.values())
        max_rank = max(sorted(by_rank), key=lambda r: by_rank[r])
        rows.append([key[0], key[1], len(by_rank), counts[key], _r(total), _r(total / len(by_rank)), max_rank,
                     _r(by_rank[max_rank]), _r(min(by_rank.values()))])
    rows.sort(key=lambda r: (-r[4], r[0], r[1]))
    return _table("cluster_op_statistic", OP_COLUMNS, rows)


def comm_table(summaries: list) -> Table:
    rows = [[s.rank, int(step), typ, grp, int(n), _r(tot), _r(wait)]
            for s in summaries for step, typ, grp, n, tot, wait in s.comm_ops]
    rows.sort(key=lambda r: (r[0], r[1], r[2], r[3]))
    return _table("cluster_communication", COMM_COLUMNS, rows)


def matrix_table(summaries: list, matrix: Optional[dict] = None) -> Table:
    """Every link of :func:`~.communication.cluster_communication_matrix` (``matrix``, when the caller has
    it), one row each."""
    if matrix is None:
        matrix = cluster_communication_matrix(summaries)
    rows = [[ranks, step, op, int(src), int(dst), info.get("Transport Type") or "", info["Transit Time(ms)"],
             info["Transit Size(MB)"], info["Bandwidth(GB/s)"]]
            for ranks, steps in matrix.items() for step, ops in steps.items()
            for op, links in ops.items() for link, info in links.items() for src, _, dst in [link.partition("-")]]
    rows.sort(key=lambda r: (r[0], r[1], r[2], r[3], r[4]))
    return _table("cluster_communication_matrix", MATRIX_COLUMNS, rows)


def _table(name: str, columns: list, rows: list) -> Table:
    return Table(name, list(columns), {c: [r[i] for r in rows] for i, c in enumerate(columns)})


def cluster_tables(summaries: list, slow: dict, alignment: dict, matrix: Optional[dict] = None) -> dict:
    """Every cluster table by name (``matrix``: :func:`~.communication.cluster_communication_matrix` of the
    summaries, when the caller has it)."""
    summaries = sorted(summaries, key=lambda s: s.rank)
    tables = [step_table(summaries), rank_table(summaries, slow, alignment), op_table(summaries),
              comm_table(summaries), matrix_table(summaries, matrix)]
    return {t.name: t for t in tables}


@dataclass(frozen=True)
class JobAnalyzerTable:
    """A third-party analyzer's table merged over the ranks (:func:`job_analyzer_tables`): the cluster
    table ``merged`` (``cluster_<table>``: ``Rank``, then the rank's table's columns, rank by rank), the
    plugin that registered the analyzer, its title and declared columns, and the ranks whose table is in it.

    Example::

        for t in result.analyzer_tables:
            result.tables[t.merged].records()[:3], t.plugin
    """

    table: str
    merged: str
    plugin: str
    title: str
    columns: tuple[str, ...]
    ranks: tuple[int, ...]


def job_analyzer_tables(summaries: list, analyzers: list["RegisteredAnalyzer"]) -> tuple[dict, list[JobAnalyzerTable],
                                                                                      list[str]]:
    """Each analyzer's tables of the ranks (``RankSummary.analyzer_tables``) as one cluster table: the
    tables by name, what each is, and the warnings (a merged name that a cluster table has: left out).
    An analyzer no rank made a table of (it failed everywhere) has none."""
    summaries = sorted(summaries, key=lambda s: s.rank)
    tables: dict = {}
    made: list[JobAnalyzerTable] = []
    warnings: list[str] = []
    for registered in analyzers:
        a = registered.analyzer
        per_rank = [(s.rank, s.analyzer_tables[a.table]) for s in summaries if a.table in s.analyzer_tables]
        if not per_rank:
            continue
        merged = f"cluster_{a.table}"
        if merged in CLUSTER_TABLES:
            warnings.append(f"analyzer {a.table!r} of plugin {registered.plugin!r}: its job table would be "
                            f"{merged!r}, a cluster table of npuprof's; left out of the cluster tables")
            continue
        columns = list(dict.fromkeys(c for _, t in per_rank for c in t.columns))
        # a rank column of the plugin's own is kept as it is (the plugin's values); else one is added first
        head = [] if "Rank" in columns else ["Rank"]
        rows = [([rank] if head else []) + [t.data[c][i] if c in t.data else None for c in columns]
                for rank, t in per_rank for i in range(len(t))]
        tables[merged] = _table(merged, head + columns, rows)
        made.append(JobAnalyzerTable(a.table, merged, registered.plugin, a.title, tuple(a.columns),
                                     tuple(rank for rank, _ in per_rank)))
    return tables, made, warnings
