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
    return [Finding("ai_cpu", ctx.say("ai_cpu.title", count=len(rows)), "medium", total_us / 1000.0 / ctx.steps,
                    evidence, ctx.say("ai_cpu.advice"))]


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
    title = ctx.say("dynamic_shape.title.all") if len(dynamic) == len(judged) else \
        ctx.say("dynamic_shape.title.some", dynamic=len(dynamic), judged=len(judged))
    return [Finding("dynamic_shape", title, "low", compile_ms / ctx.steps, evidence, ctx.say("dynamic_shape.advice"))]


RULES = [
    Rule("ai_cpu", "Operators on the AI CPU", ai_cpu,
         Needs(tables={"op_statistic": ("OP Type", "Core Type", "Total Time(us)")}, events=(EventKind.KERNEL,),
               description="device data"), docs="docs/advise.md#ai_cpu"),
    Rule("dynamic_shape", "Operators compiled per shape", dynamic_shape,
         Needs(tables={"kernel_details": ("Type",)}, description="device data", reads=("events",)),
         docs="docs/advise.md#dynamic_shape"),
]


CORE_KINDS = {"AI_CORE": "cube", "AI_CUBE_CORE": "cube", "MIX_AIC": "cube", "AI_VECTOR_CORE": "vector",
              "MIX_AIV": "vector"}


def block_dim(ctx: RuleContext):
    """AI Core kernels that leave cores idle: ``Block Dim`` below the device's core count, or a last wave
    of blocks that fills only part of the cores (``--ai-cores CUBE[,VECTOR]``, e.g. ``24,48`` on an Ascend
    910B2). Per kernel the cores used on average are ``bd / (ceil(bd / cores) * cores)``; at stake per step:
    each kernel's time times the share of cores left idle (an upper bound: it assumes the kernel scales)."""
    cores = ctx.options.get("ai_cores")
    if not cores:
        return NotChecked("the device's AI Core count: --ai-cores CUBE[,VECTOR] (e.g. 24,48)")
    table = ctx.result.tables["kernel_details"]
    if not any(str(c).upper() in CORE_KINDS for c in table.column("Accelerator Core")):
        return NotChecked("Ascend AI Core kernels (Accelerator Core AI_CORE, AI_VECTOR_CORE, MIX_*)")
    per_type: dict = {}
    total_us = 0.0
    for core, bd, dur, op_type in zip(table.column("Accelerator Core"), table.column("Block Dim"),
                                      table.column("Duration(us)"), table.column("Type")):
        kind = CORE_KINDS.get(str(core).upper())
        n = cores.get(kind) if kind else None
        try:
            blocks = int(float(bd))
        except (TypeError, ValueError):
            continue
        if not n or blocks <= 0:
            continue
        waves = -(-blocks // n)
        used = blocks / (waves * n)
        if used >= 1.0:
            continue
        lost = _num(dur) * (1.0 - used)
        total_us += lost
        agg = per_type.setdefault((str(op_type), str(core)), [0, blocks, blocks, 0.0, 0.0, n])
        agg[0] += 1
        agg[1], agg[2] = min(agg[1], blocks), max(agg[2], blocks)
        agg[3] += _num(dur)
        agg[4] += lost
    if total_us <= 0:
        return []
    evidence = [{"OP Type": t, "Accelerator Core": c, "kernels": n, "Block Dim": f"{lo}-{hi}" if lo != hi else lo,
                 "cores": cores_n, "time(us)": round(d, 3), "idle-core time(us)": round(lost, 3)}
                for (t, c), (n, lo, hi, d, lost, cores_n) in sorted(per_type.items(), key=lambda kv: -kv[1][4])]
    return [Finding("block_dim", ctx.say("block_dim.title", types=len(per_type)), "low", total_us / 1000.0 / ctx.steps,
                    evidence[:20], ctx.say("block_dim.advice"))]


RULES.append(Rule("block_dim", "AI Core kernels using fewer cores than the device has", block_dim,
                  Needs(tables={"kernel_details": ("Accelerator Core", "Block Dim", "Duration(us)", "Type")},
                        description="Level1 device data"), docs="docs/advise.md#block_dim"))
