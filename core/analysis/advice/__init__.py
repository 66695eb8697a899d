"""Advice: rules over an analysed run, each finding with its evidence and the time at stake.

Rules are plain data (:class:`Rule`) registered through the plugin host's
``npuprof_advice_rules`` hook; :func:`advise` runs them over one
:class:`~npuprof.analysis.result.AnalysisResult`. Writes nothing.

Example::

    from npuprof.analysis.advice import advise
    from npuprof.analysis.advice.rules import BUILTIN_RULES
    print(advise(result, BUILTIN_RULES, min_ms=1).to_json()["findings"][:1])
"""
from .model import Finding, Needs, NotChecked, Rule, RuleContext, RuleOutcome
from .runner import Advice, advise, advise_job, run_rule, select_rules, step_figures

__all__ = ["Advice", "Finding", "Needs", "NotChecked", "Rule", "RuleContext", "RuleOutcome", "advise", "advise_job", "run_rule",
           "select_rules", "step_figures"]
