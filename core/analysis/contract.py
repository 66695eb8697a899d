"""What a run's own metadata promises against what its data holds (the run-level part of the
data-quality contract, :mod:`npuprof.quality`; readers flag the files they read themselves).

For npuprof's own runs profiler_info records the window's state, the steps it saw and, once the
window stopped, how many events reached the raw data. A window whose process was killed still
says ``"state": "running"``: every summary then says the window was cut and at which step. Steps
promised but absent from the data, and a collection error or dropped events, are issues too.

Example::

    quality = DataQuality()
    check_run_contract(events, info, quality)
    quality.lines()     # ['data quality: partial', '  - ...: window cut at step 3 ...']
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..events import EventKind, EventTable
from ..quality import DataQuality, QualityIssue
from ..runinfo import RunInfo, RunOrigin
from .steps import step_spans
from .table import Table

STEP_TABLES = ("step_trace_time", "op_statistic", "kernel_details")


def _data_steps(events: EventTable) -> list[int]:
    """The step numbers of the data's own step ranges (none: the data marks no step)."""
    if not len(events) or not (events["kind"] == np.uint8(EventKind.STEP)).any():
        return []
    numbers, _, _ = step_spans(events)
    return sorted({int(n) for n in numbers.tolist() if n >= 0})


def check_run_contract(events: EventTable, info: RunInfo, quality: DataQuality) -> None:
    """Add an issue for each promise of ``info`` the ``events`` do not keep (npuprof's own runs, with their raw
    data: a copy ``export ascend`` made carries their profiler_info but not their raw or framework files)."""
    if info.origin is not RunOrigin.NPUPROF or not info.writable:
        return
    own: dict[str, Any] = info.raw.get("npuprof", {}) if isinstance(info.raw.get("npuprof"), dict) else {}
    steps = _data_steps(events)
    quality.expected.update({"steps": list(info.steps), "state": "stopped"})
    quality.found.update({"steps": steps, "state": info.state, "events": len(events)})
    subject = f"{info.run_dir.name}/profiler_info"
    if not own:
        if not any(info.run_dir.glob("profiler_info*.json")):     # a damaged one is flagged where it is read
            quality.add(QualityIssue(subject, "missing: the window's clock, steps and state are unknown; times and "
                                              "steps are as the raw data alone says", affects=("all tables",)))
        return
    if info.state == "running":
        last = f"step {steps[-1]}" if steps else ("step " + str(info.steps[-1]) if info.steps else "its start")
        quality.add(QualityIssue(subject, f"window cut at {last}: the process ended before the window was "
                                          "stopped (killed?); device data not flushed, the last step may be short",
                                 affects=STEP_TABLES))
    missing = sorted(set(info.steps) - set(steps))
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        problem = (f"records steps {list(info.steps)[:10]}, the data has none of them: step tables show the whole "
                   "window as one step 0") if not steps else f"records step(s) {shown} the data does not hold"
        quality.add(QualityIssue(subject, problem, affects=STEP_TABLES))
    if own.get("collection_error"):
        quality.add(QualityIssue(subject, f"collection failed: {own['collection_error']}; the data stops there",
                                 affects=("all tables",)))
    recorded = own.get("native_files")
    if isinstance(recorded, dict):
        _check_native_files(info, recorded, quality)
    dropped = own.get("events_dropped")
    if isinstance(dropped, int) and dropped > 0:
        quality.add(QualityIssue(subject, f"{dropped} event(s) dropped during collection", affects=("all tables",)))


def _check_native_files(info: RunInfo, recorded: dict, quality: DataQuality) -> None:
    """The framework profilers' files the window recorded when it stopped, against the disk now."""
    gone, cut = [], []
    for rel, size in recorded.items():
        if not isinstance(size, int):
            continue
        try:
            now = (info.run_dir / rel).stat().st_size
        except OSError:
            gone.append(rel)
            continue
        if now < size:
            cut.append(f"{rel} ({now} of {size} bytes)")
    quality.expected["native_files"] = len(recorded)
    for what, files in (("removed since the window stopped", gone), ("cut short since the window stopped", cut)):
        if files:
            shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
            quality.add(QualityIssue(f"{info.run_dir.name}", f"{len(files)} framework profiler file(s) {what}: "
                                                             f"{shown}", affects=("all tables",)))


def leave_unmeasured_empty(tables: dict[str, Table], quality: DataQuality) -> None:
    """Empty (None) every ``table.column`` an issue says the data cannot measure: a host-only trace's
    Computing is not filled from host operators, it is "not measured".

    Example::

        leave_unmeasured_empty(result.tables, result.quality)
        result.tables["step_trace_time"].column("Computing")     # [None, None]
    """
    for target in quality.not_measured:
        name, _, column = target.partition(".")
        table = tables.get(name)
        if table is not None and column in table.columns:
            table.data[column] = [None] * len(table)


def check_against_tool(ours: Table, tool: dict[int, dict[str, float]], quality: DataQuality,
                       source: str = "the tool's own step_trace_time.csv") -> None:
    """Name each step_trace_time column where npuprof's recomputation differs from the table the tool wrote
    for the same run (beyond the writers' rounding): on complete data they are equal, so a difference says
    the recomputation lacks what the tool had. The tool's table stays what ``show`` and ``cluster`` print."""
    if not tool or not len(ours):
        return
    records = ours.records()
    differing: dict[str, list[str]] = {}
    for row in records:
        theirs = tool.get(int(row["Step"]))
        if theirs is None:
            continue
        for column, value in row.items():
            if column == "Step" or value is None or column not in theirs:
                continue
            if abs(float(value) - theirs[column]) > max(0.5, 1e-5 * abs(theirs[column])):
                differing.setdefault(column, []).append(f"step {row['Step']}: {float(value):,.3f} us against "
                                                        f"{theirs[column]:,.3f}")
    for column, where in differing.items():
        why = "; ".join(str(i.subject) for i in quality.issues) or "no input flagged"
        quality.add(QualityIssue(f"step_trace_time.{column}", f"npuprof's recomputation differs from {source} "
                                                              f"({'; '.join(where[:3])}); inputs missing or damaged: "
                                                              f"{why}", (f"step_trace_time.{column}",)))
