"""The per-rank half of cluster analysis: one rank's run directories ->
a small, picklable :class:`RankSummary`.

This function is what runs in a process-pool worker or on a Dask worker; the
driver only ever receives summaries, packed as compact bytes
(:func:`summarise_packed`, :mod:`.packing`), never event tables, except for
the ranks of a merged timeline (:func:`rank_events`).

Example::

    s = summarise_rank(RankTask(rank=0, run_dirs=("prof/host_1_20240101000000000_ascend_ms",)))
    s.steps["Step"], s.steps["Computing"]
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ..analysis.operators import op_statistic
from ..analysis.step_breakdown import STEP_TRACE_COLUMNS, step_trace
from ..analysis.memory import MemoryTimeline, memory_timeline
from ..analysis.pipeline import load_run
from ..analysis.table import Table
from ..quality import DataQuality, QualityIssue
from ..events import EventKind, EventTable
from ..runinfo import OUTPUT_DIR, RunInfo
from ..analysis.rank_communication import (MB, alignment_keys, comm_events, communication_json,
                                      communication_matrix_json, link_owners, op_instance_names, step_key)

log = logging.getLogger("npuprof")


@dataclass(frozen=True)
class RankTask:
    """What a worker needs to summarise one rank (plain data, picklable)."""

    rank: int
    run_dirs: tuple
    host_points: int = 240
    series: bool = True      # the memory timeline and host counter series (the HTML report's; no cluster table's)
    analyzers: tuple = ()    # (table, plugin) of each third-party analyzer to run (analysis.analyzer.job_analyzers)


@dataclass
class RankSummary:
    """Everything cluster analysis needs from one rank."""

    rank: int
    hostname: str
    pid: int
    device_id: int
    world_size: int
    run_dirs: list
    events: int
    steps: dict                  # step_trace_time columns (µs)
    ops: list                    # (OP Type, Core Type, Count, Total Time(us))
    comm_ops: list               # (step, type, group, count, total_us, wait_us)
    links: list                  # (group, type, src, dst, transport, count, time_ms, size_mb)
    communication: dict          # the rank's communication.json contents
    communication_matrix: dict   # the rank's communication_matrix.json contents
    align_keys: list
    align_start: np.ndarray
    align_end: np.ndarray
    host_series: dict            # name -> (t_ns array, values array)
    t0_ns: int
    t1_ns: int
    traces: list
    warnings: list = field(default_factory=list)
    issues: list[QualityIssue] = field(default_factory=list)   # the rank's data-quality issues (npuprof.quality)
    parallel_groups: dict = field(default_factory=dict)   # group id -> its global ranks (profiler_metadata)
    memory: Optional[MemoryTimeline] = None              # None: the rank recorded no memory data
    analyzer_tables: dict[str, Table] = field(default_factory=dict)   # RankTask.analyzers' tables, plain values
    analyzer_warnings: list[str] = field(default_factory=list)        # those analyzers' failures


def load_rank_events(task: RankTask) -> tuple[EventTable, RunInfo, list, list, list[QualityIssue]]:
    """All windows of one rank as one table, parsed in memory (nothing is
    written into the runs). Returns (events, info of the first window,
    warnings, trace files already there, data-quality issues)."""
    tables, warnings, traces, issues = [], [], [], []
    info: Optional[RunInfo] = None
    for d in task.run_dirs:
        run_dir = Path(d)
        loaded = load_run(run_dir)
        info = info or loaded.info
        tables.append(loaded.events)
        warnings.extend(f"{run_dir.name}: {w}" for w in loaded.warnings)
        issues.extend(loaded.quality.issues)
        for name in ("trace_view.json", "trace_view.json.gz"):
            if (run_dir / OUTPUT_DIR / name).exists():
                traces.append(str(run_dir / OUTPUT_DIR / name))
    events = EventTable.concat(tables).sorted()
    return events, info or RunInfo(run_dir=Path(task.run_dirs[0])), warnings, traces, issues


def _downsample(ts: np.ndarray, val: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean per equal-width time bucket, at most ``points`` buckets."""
    if len(ts) <= points:
        return ts.astype(np.int64), val.astype(np.float64)
    edges = np.linspace(ts[0], ts[-1] + 1, points + 1)
    b = np.clip(np.searchsorted(edges, ts, side="right") - 1, 0, points - 1)
    cnt = np.bincount(b, minlength=points)
    tsum = np.bincount(b, weights=ts.astype(np.float64), minlength=points)
    vsum = np.bincount(b, weights=val, minlength=points)
    ok = cnt > 0
    return (tsum[ok] / cnt[ok]).astype(np.int64), vsum[ok] / cnt[ok]


def summarise_events(rank: int, events: EventTable, info: RunInfo, host_points: int = 240,
                     series: bool = True) -> dict:
    """The data part of a RankSummary from an event table (no file access); ``series=False`` leaves out
    the memory timeline and the host counter series (``memory`` None, ``host_series`` empty)."""
    st = step_trace(events)
    steps = {c: list(st.data[c].tolist() if hasattr(st.data[c], "tolist") else st.data[c])
             for c in STEP_TRACE_COLUMNS}
    ot = op_statistic(events)
    ops = [(t, c, int(n), float(tot)) for t, c, n, tot in zip(
        ot.data["OP Type"], ot.data["Core Type"], ot.data["Count"], np.asarray(ot.data["Total Time(us)"]).tolist())] \
        if len(ot) else []
    c = comm_events(events)
    communication = communication_json(c) if c.details_measured else {}      # Level0: nothing measured
    # an operator's wait as its communication.json says (HCCL tasks' Notify_Wait, or the recorded wait_ns),
    # so the cluster_communication table and the communication files agree (and equal the tool's own)
    wait_ms = {(key, name): info["Communication Time Info"]["Wait Time(ms)"]
               for key, kinds in communication.items() for ops in kinds.values() for name, info in ops.items()}
    comm_ops: dict = {}
    for step, typ, grp, dur, wait, name in zip(c.ops["step"].tolist(), c.ops["type"].tolist(),
                                               c.ops["group"].tolist(), c.ops["dur"].tolist(),
                                               c.ops["wait"].tolist(), op_instance_names(c)):
        a = comm_ops.setdefault((step, typ, grp), [0, 0.0, 0.0])
        a[0] += 1
        a[1] += dur / 1e3
        a[2] += wait_ms.get((step_key(step), name), wait / 1e6) * 1e3 if c.details_measured else math.nan
    links: dict = {}
    if c.has_links:
        owner = link_owners(c)
        ltype = [str(c.ops["type"][o]) if o >= 0 else str(t) for o, t in zip(owner.tolist(), c.links["type"])]
        for i in range(len(c.links["ts"])):
            key = (str(c.links["group"][i]), ltype[i], int(c.links["src"][i]), int(c.links["dst"][i]),
                   str(c.links["transport"][i]))
            a = links.setdefault(key, [0, 0.0, 0.0])
            a[0] += 1
            a[1] += float(c.links["dur"][i]) / 1e6
            a[2] += float(c.links["size"][i]) / MB
    keys, a_start, a_end = alignment_keys(c)
    timeline = memory_timeline(events) if series else None
    has_memory = timeline is not None and (timeline.summary.peak_mb is not None or bool(timeline.live_bytes)
                                           or bool(timeline.series))
    ctr = events.of_kind(EventKind.COUNTER) if series else None
    host_series = {}
    if ctr is not None and len(ctr):
        names = ctr.string_array("name")
        for name in sorted(set(names.tolist())):
            sel = names == name
            host_series[name] = _downsample(ctr["ts"][sel], ctr["value"][sel], host_points)
    return dict(
        rank=rank, hostname=info.hostname, pid=info.pid, device_id=_device_id(info, events),
        world_size=info.world_size, events=len(events), steps=steps, ops=ops,
        comm_ops=[(k[0], k[1], k[2], v[0], round(v[1], 3), round(v[2], 3)) for k, v in sorted(comm_ops.items())],
        links=[(*k, v[0], round(v[1], 6), round(v[2], 6)) for k, v in sorted(links.items())],
        communication=communication, communication_matrix=communication_matrix_json(c),
        align_keys=keys, align_start=a_start, align_end=a_end, host_series=host_series,
        memory=timeline if has_memory else None,
        t0_ns=int(events["ts"].min()) if len(events) else 0,
        t1_ns=int((events["ts"] + events["dur"]).max()) if len(events) else 0)


def _device_id(info: RunInfo, events: EventTable) -> int:
    """The rank's device: as its profiler_info says, else the one its device events ran on."""
    if info.device_id is not None:
        return info.device_id
    dev = events["device"]
    on_device = dev[dev >= 0]
    return int(np.bincount(on_device).argmax()) if len(on_device) else 0


def summarise_rank(task: RankTask) -> RankSummary:
    """Read, (analyse if needed) and summarise one rank. Runs on any worker."""
    events, info, warnings, traces, issues = load_rank_events(task)
    data = summarise_events(task.rank, events, info, task.host_points, task.series)
    data["analyzer_tables"], data["analyzer_warnings"] = rank_analyzer_tables(events, task.analyzers)
    for target in DataQuality(issues=list(issues)).not_measured:    # NaN: an empty cell, "not measured"
        table, _, column = target.partition(".")
        if table == "step_trace_time" and column in data["steps"]:
            data["steps"][column] = [math.nan] * len(data["steps"][column])
    return RankSummary(run_dirs=[str(d) for d in task.run_dirs], traces=traces, warnings=warnings, issues=issues,
                       parallel_groups=parallel_groups_of(task.run_dirs), **data)


def rank_analyzer_tables(events: EventTable, wanted: Sequence[tuple[str, str]]) -> tuple[dict[str, Table], list[str]]:
    """The tables of the analyzers ``wanted`` (``(table, plugin)`` pairs the driver has registered) over one
    rank's events, each cell a plain value (text, number, bool or None) that packs as JSON; and the
    warnings: an analyzer that fails or returns no readable table, or that this process has not registered
    (a plugin registered in the driver only, and workers that did not fork from it), is named and its table
    left out.

    Example::

        tables, warnings = rank_analyzer_tables(events, [("marks_per_step", "marks")])
    """
    from ..analysis.analyzer import registered_analyzers

    if not wanted:
        return {}, []
    here = {(r.analyzer.table, r.plugin): r for r in registered_analyzers()}
    tables: dict[str, Table] = {}
    warnings: list[str] = []
    for name, plugin in wanted:
        registered = here.get((name, plugin))
        if registered is None:
            warnings.append(f"analyzer {name!r} of plugin {plugin!r} is not registered in the worker process; its "
                            "table is left out (register the plugin under the 'npuprof' entry-point group, or "
                            "use the serial backend)")
            continue
        made = registered.run(events, warnings)
        if made is None:
            continue
        try:
            columns = [str(c) for c in made.columns]
            rows = made.rows()
        except Exception as e:      # a Table whose columns and data disagree
            warnings.append(f"analyzer {name!r} of plugin {plugin!r} returned a table that cannot be read "
                            f"({type(e).__name__}: {e}); left out")
            continue
        tables[name] = Table(name, columns, {c: [_plain(r[i]) for r in rows] for i, c in enumerate(columns)})
    return tables, warnings


def _plain(value: object) -> object:
    """A cell as text, a number, a bool or None (NaN: not measured)."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value if math.isfinite(value) else str(value)
    return str(value)


def parallel_groups_of(run_dirs: Sequence[str]) -> dict[str, list[int]]:
    """Group id -> sorted global ranks, from torch_npu's ``profiler_metadata.json`` (``parallel_group_info``)."""
    from ..readers.ascend_db import group_id

    out: dict[str, list[int]] = {}
    for d in run_dirs:
        meta = Path(d) / "profiler_metadata.json"
        try:
            doc = json.loads(meta.read_text(encoding="utf-8")) if meta.is_file() else {}
        except (OSError, ValueError):
            continue
        groups = doc.get("parallel_group_info") if isinstance(doc, dict) else None
        for name, info in (groups or {}).items():
            ranks = info.get("global_ranks") if isinstance(info, dict) else None
            if isinstance(ranks, list) and ranks and all(isinstance(r, int) for r in ranks):
                out.setdefault(group_id(str(name)), sorted(ranks))
    return out


def rank_events(task: RankTask, steps: Optional[list] = None, min_dur_ns: int = 0) -> tuple:
    """(rank, filtered events, hostname, data-quality issues) of one rank, for a merged timeline."""
    from ..export.filters import filter_events

    events, info, _, _, issues = load_rank_events(task)
    return task.rank, filter_events(events, steps=steps, min_dur_ns=min_dur_ns), info.hostname, issues


def summarise_packed(task: RankTask) -> bytes:
    """:func:`summarise_rank` as the compact bytes that travel to the driver (:mod:`.packing`)."""
    from .packing import pack

    return pack(summarise_rank(task))


def unpack_summary(blob: bytes) -> RankSummary:
    """The driver's side of :func:`summarise_packed`."""
    from .packing import unpack

    return unpack(blob, RankSummary)
