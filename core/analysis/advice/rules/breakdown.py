"""The ``breakdown`` rule: where the step goes (computing by family, uncovered communication, free, preparing)."""
from __future__ import annotations

import math

from ....events import EventKind
from ..families import FAMILIES, compute_families
from ..messages import joiner
from ..model import Finding, Needs, Rule, RuleContext

STEP_COLUMNS = ("Computing", "Communication(Not Overlapped)", "Free", "Stage")


def _total_ms(table, column: str) -> float:
    if column not in table.columns:
        return math.nan
    values = [float(v) for v in table.column(column) if v is not None and not _nan(v)]
    return sum(values) / 1000.0 if values else math.nan


def _nan(v) -> bool:
    try:
        return math.isnan(float(v))
    except (TypeError, ValueError):
        return True


def _row(index: str, ms: float, e2e: float) -> dict:
    return {"Performance Index": index, "Duration(ms)": None if math.isnan(ms) else round(ms, 3),
            "Duration Ratio": None if math.isnan(ms) or not e2e else f"{ms / e2e * 100:.2f}%"}


def breakdown(ctx: RuleContext) -> list:
    """The step time split as msprof-analyze's overall summary does, summed over the run's steps: Computing
    (and its families), Uncovered Communication, Free, Preparing, E2E. At stake per step: what is not
    computing (uncovered communication + free), the most that overlapping and removing idle time can save.
    """
    table = ctx.result.tables["step_trace_time"]
    computing, uncovered = _total_ms(table, "Computing"), _total_ms(table, "Communication(Not Overlapped)")
    free, e2e = _total_ms(table, "Free"), _total_ms(table, "Stage")
    preparing = _total_ms(table, "Preparing")
    families = compute_families(ctx.result.events)
    rows = [_row("Computing Time", computing, e2e)]
    rows += [_row(f"    -- {fam}", families.ms[fam], e2e) for fam in FAMILIES
             if families.count[fam] or fam in ("Flash Attention", "Conv", "Matmul", "Vector", "SDMA(Tensor Move)")]
    rows += [_row("Uncovered Communication Time", uncovered, e2e), _row("Free Time", free, e2e),
             _row("Preparing Time", preparing, e2e), _row("E2E Time", e2e, e2e)]
    idle = (0.0 if math.isnan(uncovered) else uncovered) + (0.0 if math.isnan(free) else free)
    if idle <= 0 or math.isnan(e2e) or e2e <= 0:
        return []
    share = idle / e2e
    parts = [ctx.say("breakdown.part.uncovered", ms=uncovered / ctx.steps) if not math.isnan(uncovered) else "",
             ctx.say("breakdown.part.free", ms=free / ctx.steps) if not math.isnan(free) else ""]
    top = max(((fam, families.ms[fam]) for fam in FAMILIES), key=lambda kv: kv[1])
    advice = ctx.say("breakdown.advice")
    if top[1] > 0:
        advice += ctx.say("breakdown.advice.top", family=top[0], ms=top[1] / ctx.steps)
    return [Finding("breakdown", ctx.say("breakdown.title", share=share * 100,
                                         parts=joiner(ctx.lang).join(p for p in parts if p)),
                    "high" if share >= 0.5 else "medium" if share >= 0.2 else "low", idle / ctx.steps, rows,
                    advice)]


RULES = [
    Rule("breakdown", "Step time breakdown", breakdown,
         Needs(tables={"step_trace_time": STEP_COLUMNS}, events=(EventKind.KERNEL,),
               description="device data: the breakdown is of the device's time",
               reads=("events",)),
         docs="docs/advise.md#breakdown"),
]
