"""The fast path of cluster analysis: a rank's summary from the summary files another tool wrote.

torch_npu (``*_ascend_pt``) and MindSpore (``*_ascend_ms``) write, beside their events, the per-rank
summaries cluster analysis needs into ``ASCEND_PROFILER_OUTPUT/`` (read by
:mod:`npuprof.readers.tool_summary_files`). Those files are the tool's own
numbers (the project's ground truth for another tool's run), and reading them takes milliseconds where
parsing the rank's events (``trace_view.json``, ``kernel_details.csv``, the memory CSVs) takes seconds.
This is also all msprof-analyze ``cluster`` reads of such a job.

A rank's :class:`~.worker.RankSummary` is built from these files when *every* one of its run
directories is another tool's (read-only) run holding all four, each parsing:

==============================  =================================================================
``step_trace_time.csv``          ``steps`` (cluster_step_trace_time, cluster_rank_summary, slow ranks)
``op_statistic.csv``             ``ops`` (cluster_op_statistic)
``communication.json``           ``communication``, ``comm_ops`` (cluster_communication), the
                                 alignment keys (each operator's start and elapse time)
``communication_matrix.json``    ``communication_matrix`` (cluster_communication_matrix)
==============================  =================================================================

Otherwise (npuprof's own runs, a trace file, a file missing or damaged, windows sharing a step) the
rank's events are parsed as before (:func:`~.worker.summarise_rank`); :func:`tool_summary` says why.
What such a summary does not carry (nothing the cluster tables read): the event count (``events`` is
-1: "Events" in cluster_rank_summary), link transfers (``links``), host counter series, the memory
timeline, the time span (``t0_ns``/``t1_ns`` 0) - the HTML report, which shows those, parses events.
Nothing is written into the runs.

Example::

    summary, why = tool_summary(RankTask(rank=0, run_dirs=("prof/rank0_ascend_pt",)))
    summary.steps["Stage"] if summary else why
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np

from ..analysis.step_breakdown import STEP_TRACE_COLUMNS
from ..analysis.rank_communication import TOTAL_OP, ordinal_keys
from ..errors import ProfilerDataError
from ..quality import QualityIssue
from ..readers.tool_summary_files import (COMMUNICATION, COMMUNICATION_MATRIX, OP_STATISTIC, STEP_CORE_COLUMNS,
                                          STEP_TRACE, Unusable, checked_matrix, csv_rows, device_of, json_closed,
                                          json_object, number, op_statistic_rows, operators, step_of)
from ..runinfo import OUTPUT_DIR, read_run_info
from .worker import RankSummary, RankTask, parallel_groups_of

OWN_RUN = "npuprof's own run: its events are the data"


def _steps(path: Path) -> tuple[list[list], list[str]]:
    """Rows of step_trace_time.csv as [step, col1, ...] in STEP_TRACE_COLUMNS order (NaN for a column the
    file does not have), and the columns it does not have."""
    out = []
    rows = csv_rows(path, STEP_CORE_COLUMNS)
    absent = [c for c in STEP_TRACE_COLUMNS if rows and c not in rows[0]]
    for i, row in enumerate(rows, 2):
        step = number(row["Step"], f"{path.name} line {i} Step")
        if step != int(step):
            raise Unusable(f"{path.name} line {i}: Step {row['Step']!r} is not a step number")
        out.append([int(step)] + [math.nan if c in absent else number(row[c], f"{path.name} line {i} {c}")
                                  for c in STEP_TRACE_COLUMNS[1:]])
    return out, absent


def _comm_ops(comm: dict) -> tuple[list, list]:
    """comm_ops rows and the operators' (start ns, end ns, step, op type, group) from a communication.json
    (the alignment keys are made of the latter: :func:`npuprof.analysis.rank_communication.ordinal_keys`)."""
    from ..readers.ascend_ops import comm_op_type

    agg: dict = {}
    spans = []
    for step_key, _kind, op, info in operators(comm, COMMUNICATION):
        if op == TOTAL_OP:
            continue
        t = info.get("Communication Time Info")
        if not isinstance(t, dict):
            raise Unusable(f"{COMMUNICATION}: {step_key} > {op[:60]} has no Communication Time Info")
        name, _, group = op.rpartition("@")
        if not name:
            raise Unusable(f"{COMMUNICATION}: operator {op[:60]!r} names no group")
        elapse = number(t.get("Elapse Time(ms)"), f"{COMMUNICATION} {op[:60]} Elapse Time(ms)")
        wait = number(t.get("Wait Time(ms)"), f"{COMMUNICATION} {op[:60]} Wait Time(ms)")
        start = number(t.get("Start Timestamp(us)"), f"{COMMUNICATION} {op[:60]} Start Timestamp(us)")
        step, typ = step_of(step_key), comm_op_type(name)
        a = agg.setdefault((step, typ, group), [0, 0.0, 0.0])
        a[0] += 1
        a[1] += elapse * 1e3
        a[2] += wait * 1e3
        ts = int(round(start * 1e3))
        spans.append((ts, ts + int(round(elapse * 1e6)), step, typ, group))
    rows = [(k[0], k[1], k[2], v[0], round(v[1], 3), round(v[2], 3)) for k, v in sorted(agg.items())]
    return rows, spans


def _window(run_dir: Path) -> dict:
    """One run directory's part of a summary from its tool tables (raises Unusable)."""
    if not run_dir.is_dir():
        raise Unusable("a trace file, no tool tables")
    try:
        info = read_run_info(run_dir)
    except ProfilerDataError as e:
        raise Unusable(f"profiler_info unreadable: {e}") from None
    if info.writable:
        raise Unusable(OWN_RUN)
    out_dir = run_dir / OUTPUT_DIR
    steps, absent = _steps(out_dir / STEP_TRACE)
    ops = op_statistic_rows(out_dir / OP_STATISTIC)
    comm = json_object(out_dir / COMMUNICATION)
    comm_ops, spans = _comm_ops(comm)
    matrix = checked_matrix(json_object(out_dir / COMMUNICATION_MATRIX))
    traces = [str(out_dir / n) for n in ("trace_view.json", "trace_view.json.gz") if (out_dir / n).exists()]
    issues = [QualityIssue(f"{run_dir.name}/{OUTPUT_DIR}/{STEP_TRACE}",
                           f"has no {', '.join(absent)} column(s) (an older {info.origin} writes none): not measured",
                           tuple(f"cluster_step_trace_time.{c}" for c in absent))] if absent else []
    issues += [QualityIssue(f"{run_dir.name}/{OUTPUT_DIR}/{Path(t).name}", "cut short (its JSON is not closed)",
                            ("merged timeline", "per-rank traces", "report"))
               for t in traces if not json_closed(Path(t))]
    return dict(info=info, out_dir=out_dir, steps=steps, ops=ops, communication=comm, comm_ops=comm_ops,
                spans=spans, matrix=matrix, traces=traces, issues=issues)


def _merge_steps(dicts: list[dict], what: str) -> dict:
    out: dict = {}
    for d in dicts:
        shared = set(out) & set(d)
        if shared:
            raise Unusable(f"windows share {what} {sorted(shared)[:3]}")
        out.update(d)
    return out


def tool_summary(task: RankTask) -> tuple[Optional[RankSummary], str]:
    """``(summary, "")`` from the rank's tool tables (see the module doc), or ``(None, why not)``."""
    try:
        windows = [_window(Path(d)) for d in task.run_dirs]
        rows = sorted((r for w in windows for r in w["steps"]), key=lambda r: r[0])
        steps_seen = [r[0] for r in rows]
        if len(set(steps_seen)) != len(steps_seen):
            raise Unusable("windows share a step")
        communication = _merge_steps([w["communication"] for w in windows], "communication steps")
        matrix = _merge_steps([w["matrix"] for w in windows], "matrix steps")
        first = windows[0]
        device = device_of(first["info"], first["out_dir"])
    except Unusable as e:
        return None, str(e)
    ops: dict = {}
    for w in windows:
        for typ, core, count, total in w["ops"]:
            a = ops.setdefault((typ, core), [0, 0.0])
            a[0] += count
            a[1] += total
    # windows share no step (checked above): ordinals over all of them are each window's own
    spans = sorted((s for w in windows for s in w["spans"]), key=lambda s: s[0])
    info = first["info"]
    return RankSummary(
        rank=task.rank, hostname=info.hostname, pid=info.pid, device_id=device, world_size=info.world_size,
        run_dirs=[str(d) for d in task.run_dirs], events=-1,
        steps={c: [r[i] for r in rows] for i, c in enumerate(STEP_TRACE_COLUMNS)},
        ops=[(t, c, n, round(tot, 3)) for (t, c), (n, tot) in ops.items()],
        comm_ops=sorted(r for w in windows for r in w["comm_ops"]), links=[],
        communication=communication, communication_matrix=matrix,
        align_keys=ordinal_keys(s[2:] for s in spans),
        align_start=np.array([s[0] for s in spans], dtype=np.int64),
        align_end=np.array([s[1] for s in spans], dtype=np.int64),
        host_series={}, t0_ns=0, t1_ns=0, traces=[t for w in windows for t in w["traces"]],
        issues=[i for w in windows for i in w["issues"]],
        parallel_groups=parallel_groups_of(task.run_dirs)), ""

