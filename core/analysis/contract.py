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

STEP_TABLES = ("step_trace_time", "op_statistic", "kernel_details")


def recorded_steps(events: EventTable) -> list[int]:
    """The step numbers of the data's own step ranges (none: the data marks no step)."""
    if not len(events) or not (events["kind"] == np.uint8(EventKind.STEP)).any():
        return []
    numbers, _, _ = step_spans(events)
    return sorted({int(n) for n in numbers.tolist() if n >= 0})


def check_run_contract(events: EventTable, info: RunInfo, quality: DataQuality) -> None:
    """Add an issue for each promise of ``info`` the ``events`` do not keep (npuprof's own runs)."""
    if info.origin is not RunOrigin.NPUPROF:
        return
    own: dict[str, Any] = info.raw.get("npuprof", {}) if isinstance(info.raw.get("npuprof"), dict) else {}
    steps = recorded_steps(events)
    quality.expected.update({"steps": list(info.steps), "state": "stopped"})
    quality.found.update({"steps": steps, "state": info.state, "events": len(events)})
    subject = f"{info.run_dir.name}/profiler_info"
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
    dropped = own.get("events_dropped")
    if isinstance(dropped, int) and dropped > 0:
        quality.add(QualityIssue(subject, f"{dropped} event(s) dropped during collection", affects=("all tables",)))
