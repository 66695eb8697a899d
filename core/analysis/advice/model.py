"""What a rule is, what it needs and what it answers (pure data; no rule lives here).

A :class:`Rule` is a small pure unit over one analysed run: it declares the
tables and columns (and event kinds) it reads in :class:`Needs`; the runner
(:mod:`npuprof.analysis.advice.runner`) answers "not checked: needs ..." for
it when the run lacks them, so a rule's ``check`` only runs on data that has
what it reads. ``check`` returns the rule's findings (an empty list: checked,
nothing found) or a :class:`NotChecked` naming a finer need the declaration
cannot express (no communication task carries a size, ...).

Example::

    from npuprof.analysis.advice import Finding, Needs, Rule

    def _slow_matmuls(ctx):
        rows = [r for r in ctx.result.tables["op_statistic"].records() if r["OP Type"] == "MatMul"]
        total_ms = sum(float(r["Total Time(us)"]) for r in rows) / 1000
        return [Finding("slow_matmul", "MatMul time", "info", total_ms / ctx.steps, rows, "fuse them", "")] \\
            if rows else []

    RULE = Rule("slow_matmul", "MatMul time", _slow_matmuls,
                Needs(tables={"op_statistic": ("OP Type", "Total Time(us)")}))
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from ...events import EventKind

if TYPE_CHECKING:  # pragma: no cover
    from ..result import AnalysisResult

SEVERITIES = ("high", "medium", "low", "info")


@dataclass(frozen=True)
class Needs:
    """The data a rule reads: tables with (at least) these columns and rows, event kinds present.

    ``reads`` names further inputs the rule reads without requiring them (``"events"``: the event table;
    a table name). :meth:`affected_by` is what a data-quality issue must name to concern the rule: the
    tables it needs or reads, and "events" when it reads events (an issue affecting "all tables", or
    naming nothing, concerns every rule).
    """

    tables: dict = field(default_factory=dict)          # table name -> tuple of column names
    events: tuple = ()                                  # EventKind values that must occur at least once
    description: str = ""                               # said when a need is missing, e.g. "Level1 data"
    reads: tuple = ()                                   # inputs read but not required ("events", table names)

    def affected_by(self) -> tuple[str, ...]:
        names = list(self.tables) + [r for r in self.reads if r not in self.tables]
        if self.events and "events" not in names:
            names.append("events")
        return tuple(names)

    def missing(self, result: "AnalysisResult") -> list[str]:
        """What of these needs ``result`` lacks, each said as a need ("table kernel_details", ...)."""
        lacking: list[str] = []
        for name, columns in self.tables.items():
            table = result.tables.get(name)
            if table is None or len(table) == 0:
                lacking.append(f"table {name}")
                continue
            absent = [c for c in columns if c not in table.columns]
            if absent:
                lacking.append(f"{name} column(s) {', '.join(absent)}")
        if self.events:
            present = {int(k) for k in set(result.events["kind"].tolist())} if len(result.events) else set()
            for kind in self.events:
                if int(kind) not in present:
                    lacking.append(f"{EventKind(kind).name.lower()} events")
        return lacking


@dataclass(frozen=True)
class NotChecked:
    """A rule's answer when the data lacks something its :class:`Needs` cannot express."""

    needs: str


@dataclass
class Finding:
    """One problem, the rows that prove it and the milliseconds per step fixing it could save at most.

    ``at_stake_ms`` is an upper bound per step computed from ``evidence`` (the runner caps it at the
    step time and fills ``share_of_step``). ``evidence`` rows are dicts of the columns that prove it.
    """

    rule: str
    title: str
    severity: str
    at_stake_ms: float
    evidence: list
    advice: str
    docs: str = ""
    share_of_step: Optional[float] = None
    affected_by_quality: list = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = {"rule": self.rule, "title": self.title, "severity": self.severity,
               "at_stake_ms": round(self.at_stake_ms, 6),
               "share_of_step": None if self.share_of_step is None else round(self.share_of_step, 6),
               "evidence": [_plain(r) for r in self.evidence], "advice": self.advice, "docs": self.docs}
        if self.affected_by_quality:
            out["data_quality"] = list(self.affected_by_quality)
        return out


@dataclass
class RuleContext:
    """What a rule's ``check`` gets: the analysed run and its step figures.

    ``steps`` is how many steps the run holds (at least 1); ``step_ms`` the mean step time in ms
    (``None`` when the run measures no step time). Per-step numbers are a total divided by ``steps``.
    ``options`` holds what the user told about the device (``peak_tflops``, ``peak_device``,
    ``ai_cores``, ``device_memory_gb``, ``link_gbps``), ``lang`` (the findings' language: :meth:`say` renders a
    message of :mod:`npuprof.analysis.advice.messages` in it) and, for job rules, ``ranks`` (rank -> AnalysisResult).
    """

    result: "AnalysisResult"
    steps: int
    step_ms: Optional[float]
    options: dict = field(default_factory=dict)

    @property
    def lang(self) -> str:
        return str(self.options.get("lang", "en"))

    def say(self, msg_id: str, **fields: Any) -> str:
        """The catalogue's message ``msg_id`` in the advice's language (see :mod:`~npuprof.analysis.advice.messages`)."""
        from .messages import say

        return say(self.lang, msg_id, **fields)


CheckResult = Union[list, NotChecked]


@dataclass(frozen=True)
class Rule:
    """A rule: a stable ``id``, a title, the function that checks a run, and what it needs.

    ``check(ctx: RuleContext) -> list[Finding] | NotChecked``; it reads ``ctx.result`` and never
    changes it. ``docs`` is where a user reads more.
    """

    id: str
    title: str
    check: Callable[[RuleContext], CheckResult]
    needs: Needs = field(default_factory=Needs)
    docs: str = ""
    scope: str = "run"          # "run": one analysed run; "job": several ranks; "both": each run and the job


@dataclass
class RuleOutcome:
    """One rule's answer on one run: ``status`` "found", "checked" (nothing found) or "not_checked"."""

    rule: str
    title: str
    status: str
    findings: list = field(default_factory=list)
    needs: str = ""
    error: str = ""
    data_quality: list = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "title": self.title, "status": self.status,
                               "findings": len(self.findings)}
        if self.needs:
            out["needs"] = self.needs
        if self.error:
            out["error"] = self.error
        if self.data_quality:
            out["data_quality"] = list(self.data_quality)
        return out


def _plain(value: Any) -> Any:
    """JSON-safe copies of numpy scalars and containers in an evidence row."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value
