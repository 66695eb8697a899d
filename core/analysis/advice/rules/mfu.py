"""The ``mfu`` rule: FLOPs from shapes, achieved TFLOP/s per operator type and per step, MFU."""
from __future__ import annotations

import math

import numpy as np

from ....events import EventKind
from ..flops import PEAK_TFLOPS, kernel_flops, peak_of
from ..model import Finding, Needs, NotChecked, Rule, RuleContext

SHAPE_COLUMNS = ("Type", "Name", "Duration(us)", "Input Shapes", "Output Shapes", "Input Data Types")


def op_flops_rows(result) -> list:
    """Every kernel_details row's :class:`~npuprof.analysis.advice.flops.OpFlops` where kernel_details has the
    shape columns (torch_npu, MindSpore), else those of the events whose args carry ``Input Shapes`` and
    ``Output Shapes``: device kernels, or on a run without any (TensorFlow on CPU, record_shapes) its
    operators, which are then the computation itself."""
    table = result.tables.get("kernel_details")
    if table is None or not len(table) or any(c not in table.columns for c in SHAPE_COLUMNS):
        return _event_rows(result.events)
    cols = {c: table.column(c) for c in SHAPE_COLUMNS}
    formats = table.column("Input Formats") if "Input Formats" in table.columns else [""] * len(table)
    return [kernel_flops(str(t), str(n), float(d or 0), str(i), str(o), str(dt), str(fm))
            for t, n, d, i, o, dt, fm in zip(*(cols[c] for c in SHAPE_COLUMNS), formats)]


def _event_rows(ev) -> list:
    kernels = np.flatnonzero((ev["kind"] == np.uint8(EventKind.KERNEL)) & (ev["device"] >= 0))
    rows = kernels if len(kernels) else np.flatnonzero(ev["kind"] == np.uint8(EventKind.OP))
    codes = ev["args"][rows]   # args texts repeat: each distinct one is looked at once
    # the distinct codes in order, counted into the pool's slots: np.unique would sort them (and load numpy.ma)
    distinct = np.flatnonzero(np.bincount(codes, minlength=len(ev.strings))).tolist()
    shaped = [c for c in distinct if _has_shapes(ev.args_object(c))]
    if not shaped:
        return []
    keep = np.isin(codes, shaped)
    rows, codes = rows[keep], codes[keep]
    out = []
    names, types = ev.string_array("name"), ev.string_array("type")
    for r, a in zip(rows.tolist(), ev.args_objects(codes)):
        out.append(kernel_flops(str(types[r]), str(names[r]), int(ev["dur"][r]) / 1000.0, str(a["Input Shapes"]),
                                str(a["Output Shapes"]), str(a.get("Input Data Types", "")),
                                str(a.get("Input Formats", ""))))
    return out


def _has_shapes(args: dict) -> bool:
    return "Input Shapes" in args and "Output Shapes" in args


OP_FLOPS_COLUMNS = ["Name", "Type", "Input Shapes", "Input Data Types", "Duration(us)", "FLOPs", "TFLOP/s",
                    "Not Counted"]


def op_flops_table(result):
    """op_flops: each row of :func:`op_flops_rows` (kernel_details, or the shaped events) with its FLOPs and
    achieved TFLOP/s (empty cells: not counted, the reason in ``Not Counted``); None when the run has no shapes
    or no kernel is counted."""
    from ...table import Table

    rows = op_flops_rows(result)
    if not any(r.flops is not None for r in rows):
        return None
    tflops = [r.flops / (r.duration_us * 1e-6) / 1e12 if r.flops is not None and r.duration_us > 0 else None
              for r in rows]
    return Table("op_flops", list(OP_FLOPS_COLUMNS), {
        "Name": [r.name for r in rows], "Type": [r.op_type for r in rows],
        "Input Shapes": [r.input_shapes for r in rows], "Input Data Types": [r.dtype for r in rows],
        "Duration(us)": [r.duration_us for r in rows], "FLOPs": [r.flops for r in rows],
        "TFLOP/s": [None if t is None else round(t, 6) for t in tflops], "Not Counted": [r.why for r in rows]})


def mfu(ctx: RuleContext):
    """Model FLOPs utilisation of the counted kernels: their FLOPs per step over the step time and the
    device's peak (``--peak-tflops``, or ``--peak DEVICE`` from the documented table for the kernels' data
    type). At stake per step: the counted kernels' time less what they would take at the peak."""
    every = op_flops_rows(ctx.result)
    rows = [r for r in every if r.flops is not None]
    uncounted = [r for r in every if r.flops is None]
    if not rows:
        return NotChecked("kernels with input and output shapes of a counted type (record_shapes)")
    flops = sum(r.flops for r in rows)
    dtype = max({r.dtype for r in rows}, key=lambda d: sum(r.flops for r in rows if r.dtype == d))
    peak = ctx.options.get("peak_tflops")
    device = ctx.options.get("peak_device")
    if peak is None and device:
        peak = peak_of(device, dtype)
        if peak is None:
            return NotChecked(f"the peak of {device} for {dtype} (the table lists "
                              f"{PEAK_TFLOPS.get(device.lower(), {}) or 'nothing for it'}): --peak-tflops X")
    if peak is None:
        return NotChecked("the device's peak TFLOP/s: --peak-tflops X, or --peak with one of "
                          f"{', '.join(sorted(PEAK_TFLOPS))}")
    by_type: dict = {}
    for r in rows:
        agg = by_type.setdefault(r.op_type, [0, 0, 0.0])
        agg[0] += 1
        agg[1] += r.flops
        agg[2] += r.duration_us
    time_us = sum(r.duration_us for r in rows)
    ideal_us = flops / (peak * 1e12) * 1e6
    step_ms = ctx.step_ms
    per_step_flops = flops / ctx.steps
    evidence = [{"steps": ctx.steps, "TFLOP per step": round(per_step_flops / 1e12, 6), "data type": dtype,
                 "peak TFLOP/s": peak,
                 "achieved TFLOP/s (step)": round(per_step_flops / (step_ms / 1e3) / 1e12, 4) if step_ms else None,
                 "MFU(%)": round(per_step_flops / (step_ms / 1e3) / (peak * 1e12) * 100, 3) if step_ms else None,
                 "kernels counted": len(rows), "kernels not counted": len(uncounted),
                 "time not counted(us)": round(sum(r.duration_us for r in uncounted), 3)}]
    for t, (n, f, d) in sorted(by_type.items(), key=lambda kv: -kv[1][1]):
        achieved = f / (d / 1e6) / 1e12 if d > 0 else math.nan
        evidence.append({"OP Type": t, "kernels": n, "GFLOP": round(f / 1e9, 4), "time(us)": round(d, 3),
                         "achieved TFLOP/s": round(achieved, 4), "of peak(%)": round(achieved / peak * 100, 3)})
    stake = max(0.0, (time_us - ideal_us) / 1000.0 / ctx.steps)
    share = evidence[0]["MFU(%)"]
    title = ctx.say("mfu.title", mfu=share, peak=peak, dtype=dtype, uncounted=len(uncounted)) if share is not None \
        else ctx.say("mfu.title.rate", tflops=flops / (time_us / 1e6) / 1e12)
    return [Finding("mfu", title, "info", stake, evidence, ctx.say("mfu.advice"))]


RULES = [
    Rule("mfu", "Model FLOPs utilisation", mfu, Needs(reads=("kernel_details", "events"),
                                                      description="shapes: record_shapes"),
         docs="docs/advise.md#mfu"),
]
