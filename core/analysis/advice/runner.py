"""Run rules over one analysed run: needs checked first, findings capped at the step time and sorted.

Example::

    from npuprof.analysis.advice import advise
    from npuprof.analysis.advice.rules import BUILTIN_RULES
    advice = advise(result, BUILTIN_RULES, min_ms=1.0)
    for f in advice.findings:
        print(f.rule, f.at_stake_ms, f.title)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from ...errors import ProfilerConfigError
from .messages import MESSAGES
from .model import SEVERITIES, Finding, NotChecked, Rule, RuleContext, RuleOutcome

if TYPE_CHECKING:  # pragma: no cover
    from ..result import AnalysisResult


@dataclass
class Advice:
    """Every rule's outcome on one run, the findings sorted by ``at_stake_ms`` (largest first).

    ``findings`` are those at or above ``min_ms``; ``below_min`` counts the others. ``data_quality``
    is the run's :class:`~npuprof.quality.DataQuality` as JSON.
    """

    run: str
    steps: int
    step_ms: Optional[float]
    outcomes: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    below_min: int = 0
    min_ms: float = 0.0
    data_quality: dict = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        return not self.data_quality.get("complete", True)

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "steps": self.steps,
                "step_ms": None if self.step_ms is None else round(self.step_ms, 6),
                "min_ms": self.min_ms, "findings": [f.to_json() for f in self.findings],
                "below_min_ms": self.below_min, "rules": [o.to_json() for o in self.outcomes],
                "data_quality": self.data_quality}


def step_figures(result: "AnalysisResult") -> tuple[int, Optional[float]]:
    """(steps, mean step time in ms) from the run's step_trace_time (``Stage``); (1, None) without one."""
    table = result.tables.get("step_trace_time")
    if table is None or len(table) == 0 or "Stage" not in table.columns:
        return 1, None
    stages = [float(v) for v in table.column("Stage") if v is not None and not _nan(v)]
    if not stages:
        return max(1, len(table)), None
    return len(stages), sum(stages) / len(stages) / 1000.0


def _nan(v: Any) -> bool:
    try:
        return math.isnan(float(v))
    except (TypeError, ValueError):
        return True


def select_rules(rules: Sequence[Rule], only: Optional[Iterable[str]]) -> list[Rule]:
    """``rules`` restricted to the ids in ``only`` (in its order); an unknown id is a
    :class:`ProfilerConfigError` naming ``--rules`` and the ids there are."""
    if only is None:
        return list(rules)
    by_id = {r.id: r for r in rules}
    wanted = [s.strip() for s in only if s.strip()]
    unknown = [w for w in wanted if w not in by_id]
    if unknown or not wanted:
        raise ProfilerConfigError("--rules", ",".join(unknown) if unknown else "",
                                  f"rule ids among: {', '.join(sorted(by_id))}")
    return [by_id[w] for w in dict.fromkeys(wanted)]


def _quality_notes(result: "AnalysisResult", rule: Rule) -> list[str]:
    """The run's data-quality issues that concern ``rule`` (see :meth:`Needs.affected_by`)."""
    names = set(rule.needs.affected_by())
    notes = []
    for issue in result.quality.issues:
        affects = [a.split(".")[0] for a in issue.affects]
        if not affects or "all tables" in affects or any(a in names for a in affects):
            notes.append(str(issue))
    return notes


def run_rule(rule: Rule, ctx: RuleContext) -> RuleOutcome:
    """One rule on one run: not checked (its needs missing), its findings, or the error it raised."""
    quality = _quality_notes(ctx.result, rule)
    title = rule.title if ctx.lang == "en" or f"rule.{rule.id}" not in MESSAGES else ctx.say(f"rule.{rule.id}")
    missing = rule.needs.missing(ctx.result)
    if missing:
        need = "; ".join(missing) + (f" ({rule.needs.description})" if rule.needs.description else "")
        return RuleOutcome(rule.id, title, "not_checked", needs=need, data_quality=quality)
    try:
        answer = rule.check(ctx)
    except Exception as e:   # a third-party rule's bug is reported by id, the other rules go on
        return RuleOutcome(rule.id, title, "error", error=f"{type(e).__name__}: {e}", data_quality=quality)
    if isinstance(answer, NotChecked):
        return RuleOutcome(rule.id, title, "not_checked", needs=answer.needs, data_quality=quality)
    findings = []
    for f in answer or []:
        if not isinstance(f, Finding):
            return RuleOutcome(rule.id, title, "error", error=f"check returned {type(f).__name__}, "
                                                             f"not a Finding", data_quality=quality)
        f.rule = rule.id
        f.docs = f.docs or rule.docs
        if f.severity not in SEVERITIES:
            f.severity = "info"
        f.at_stake_ms = max(0.0, float(f.at_stake_ms))
        if ctx.step_ms is not None:
            f.at_stake_ms = min(f.at_stake_ms, ctx.step_ms)
            f.share_of_step = f.at_stake_ms / ctx.step_ms if ctx.step_ms > 0 else None
        f.affected_by_quality = list(quality)
        findings.append(f)
    return RuleOutcome(rule.id, title, "found" if findings else "checked", findings=findings,
                       data_quality=quality)


def advise(result: "AnalysisResult", rules: Sequence[Rule], *, only: Optional[Iterable[str]] = None,
           min_ms: float = 0.0, options: Optional[dict] = None) -> Advice:
    """Every run rule (or those in ``only``) on ``result``; findings below ``min_ms`` per step counted, not
    listed. Job rules (``scope="job"``) are :func:`advise_job`'s; ``scope="both"`` rules run here and there."""
    chosen = [r for r in select_rules(rules, only) if r.scope in ("run", "both")]
    steps, step_ms = step_figures(result)
    ctx = RuleContext(result, steps, step_ms, dict(options or {}))
    return _advice(str(result.run_dir), ctx, chosen, min_ms, result.quality.to_json())


def _advice(name: str, ctx: RuleContext, chosen: list, min_ms: float, quality: dict) -> Advice:
    outcomes = [run_rule(r, ctx) for r in chosen]
    found = sorted((f for o in outcomes for f in o.findings), key=lambda f: -f.at_stake_ms)
    kept = [f for f in found if f.at_stake_ms >= min_ms]
    return Advice(name, ctx.steps, ctx.step_ms, outcomes, kept, len(found) - len(kept), min_ms, quality)


def advise_job(name: str, ranks: dict, rules: Sequence[Rule], *, only: Optional[Iterable[str]] = None,
               min_ms: float = 0.0, options: Optional[dict] = None) -> Advice:
    """The job rules (``scope="job"`` or ``"both"``, or those in ``only``) over ``ranks`` (rank -> AnalysisResult).

    A job rule reads ``ctx.options["ranks"]``; ``ctx.result`` is the lowest rank's run, ``ctx.step_ms``
    the median rank's mean step time (findings are capped at it). The advice's data quality is every
    rank's issues together.
    """
    from ...quality import DataQuality

    chosen = [r for r in select_rules(rules, only) if r.scope in ("job", "both")]
    figures = sorted((step_figures(res) for res in ranks.values()), key=lambda f: (f[1] is None, f[1] or 0.0))
    measured = [f for f in figures if f[1] is not None]
    steps, step_ms = measured[len(measured) // 2] if measured else (1, None)
    first = ranks[min(ranks)]
    ctx = RuleContext(first, steps, step_ms, {**(options or {}), "ranks": dict(ranks)})
    quality = DataQuality(usable=any(res.quality.usable for res in ranks.values()))
    for res in ranks.values():
        quality.extend(res.quality.issues)
    return _advice(name, ctx, chosen, min_ms, quality.to_json())
