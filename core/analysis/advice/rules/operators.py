"""Operator rules: ``ai_cpu``, ``dynamic_shape``."""
from __future__ import annotations

import re

import numpy as np

from ....events import EventKind
from ..model import Finding, Needs, NotChecked, Rule, RuleContext

COMPILE = re.compile(r"Compile|aclopCompile|OpCompile|BuildOp", re.IGNORECASE)


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def ai_cpu(ctx: RuleContext) -> list:
    """Operators that fell back to the AI CPU (slow: no AI Core kernel for their type, shape or data
    type). At stake per step: their device time (an AI Core kernel would still take some)."""
    table = ctx.result.tables["op_statistic"]
    rows = [r for r in table.records() if str(r.get("Core Type", "")).upper() in ("AI_CPU", "AICPU")]
    if not rows:
        return []
    total_us = sum(_num(r["Total Time(us)"]) for r in rows)
    evidence = [{"OP Type": r["OP Type"], "Count": r["Count"], "Total Time(us)": r["Total Time(us)"],
                 "Avg Time(us)": r["Avg Time(us)"]} for r in sorted(rows, key=lambda r: -_num(r["Total Time(us)"]))]
    return [Finding("ai_cpu", f"{len(rows)} operator type(s) run on the AI CPU", "medium",
                    total_us / 1000.0 / ctx.steps, evidence,
                    "Replace these operators or their inputs' data types (int64 -> int32, double -> float) "
                    "with ones the AI Core supports; check the operator's supported shapes.")]


def dynamic_shape(ctx: RuleContext):
    """Operators compiled per shape (kernel_details ``OP State`` dynamic): each new shape compiles on the
    host. At stake per step: the host's operator-compilation calls, when the data records them (else 0: the
    cost is not measured)."""
    table = ctx.result.tables["kernel_details"]
    if "OP State" not in table.columns:
        return NotChecked("kernel_details column OP State (torch_npu / MindSpore Level1)")
    states = [str(s).lower() for s in table.column("OP State")]
    types = list(table.column("Type"))
    dynamic = [t for s, t in zip(states, types) if s == "dynamic"]
    judged = [s for s in states if s in ("dynamic", "static")]
    if not dynamic:
        return []
    ev = ctx.result.events
    api = np.flatnonzero((ev["kind"] == np.uint8(EventKind.API)) & (ev["device"] < 0))
    names = ev.string_array("name")[api]
    compile_rows = api[np.array([bool(COMPILE.search(str(n))) for n in names], bool)] if len(api) else api
    compile_ms = int(ev["dur"][compile_rows].sum()) / 1e6
    counts: dict = {}
    for t in dynamic:
        counts[t] = counts.get(t, 0) + 1
    evidence = [{"OP Type": t, "dynamic kernels": n} for t, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    evidence.insert(0, {"dynamic": len(dynamic), "judged": len(judged), "compile_calls": int(len(compile_rows)),
                        "compile_ms": round(compile_ms, 3)})
    what = "all operators are" if len(dynamic) == len(judged) else f"{len(dynamic)} of {len(judged)} kernels are"
    return [Finding("dynamic_shape", f"Dynamic shape: {what} compiled per shape", "low", compile_ms / ctx.steps,
                    evidence,
                    "Disable per-shape compilation where shapes are few and fixed: "
                    "torch_npu.npu.set_compile_mode(jit_compile=False) and "
                    "torch_npu.npu.config.allow_internal_format = False at the start of the script; pad inputs to "
                    "a few fixed shapes (buckets).")]


RULES = [
    Rule("ai_cpu", "Operators on the AI CPU", ai_cpu,
         Needs(tables={"op_statistic": ("OP Type", "Core Type", "Total Time(us)")}, events=(EventKind.KERNEL,),
               description="device data"), docs="docs/advise.md#ai_cpu"),
    Rule("dynamic_shape", "Operators compiled per shape", dynamic_shape,
         Needs(tables={"kernel_details": ("Type",)}, description="device data", reads=("events",)),
         docs="docs/advise.md#dynamic_shape"),
]
