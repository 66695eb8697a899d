"""Data quality: what a run should hold, what it holds, and which numbers the difference changes.

Every analysis carries a :class:`DataQuality`. Readers and the analysis add a
:class:`QualityIssue` for each input that is missing, cut short, unreadable,
unknown or not measured, naming the tables and numbers it affects. The rule
the command line keeps: a run with an issue is never reported as complete
(exit 3, "partial"); a run with nothing usable is an error (exit 1). A
number an issue affects is either left empty ("not measured") or named in
the issue; it is never a confident zero.

Informational notes that change no number (a derived lane npuprof recomputes,
a second database it did not need) stay warnings, not issues.

Example::

    quality = DataQuality()
    quality.add(QualityIssue("ASCEND_PROFILER_OUTPUT/trace_view.json", "missing",
                             affects=("api_statistic", "communication")))
    quality.exit_code          # 3
    quality.to_json()["complete"]    # False
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

EXIT_COMPLETE, EXIT_UNUSABLE, EXIT_PARTIAL = 0, 1, 3


@dataclass(frozen=True)
class QualityIssue:
    """One thing the data lacks or got wrong.

    ``subject`` is what (a file, a column, a device, the raw data),
    ``problem`` what is wrong with it, ``affects`` the tables or numbers
    (``table`` or ``table.column``) it changes or leaves unmeasured.
    ``not_measured``: the data cannot give the ``table.column`` numbers it
    affects at all, so the analysis leaves them empty instead of filling them
    from something else.
    """

    subject: str
    problem: str
    affects: tuple[str, ...] = ()
    not_measured: bool = False

    def __str__(self) -> str:
        tail = f" (affects {', '.join(self.affects)})" if self.affects else ""
        return f"{self.subject}: {self.problem}{tail}"

    def to_json(self) -> dict[str, Any]:
        return {"subject": self.subject, "problem": self.problem, "affects": list(self.affects),
                "not_measured": self.not_measured}

    @classmethod
    def from_message(cls, message: str, affects: tuple[str, ...] = ()) -> "QualityIssue":
        """A reader's ``"<subject>: <problem>"`` message as an issue.

        Example::

            >>> QualityIssue.from_message("run/a.csv:7: unreadable time, row skipped").subject
            'run/a.csv:7'
        """
        subject, sep, problem = message.partition(": ")
        return cls(subject, problem, affects) if sep else cls("input", message, affects)


@dataclass
class DataQuality:
    """The data-quality contract of one analysed run (or job).

    ``expected`` is what the run should hold (files, events, steps, as far
    as its own metadata says), ``found`` what it holds; ``issues`` every
    difference that changes a number; ``usable`` False when nothing
    analysable remains.
    """

    issues: list[QualityIssue] = field(default_factory=list)
    expected: dict[str, Any] = field(default_factory=dict)
    found: dict[str, Any] = field(default_factory=dict)
    usable: bool = True

    def add(self, issue: QualityIssue) -> None:
        if issue not in self.issues:
            self.issues.append(issue)

    def extend(self, issues: Iterable[QualityIssue]) -> None:
        for issue in issues:
            self.add(issue)

    @property
    def complete(self) -> bool:
        return self.usable and not self.issues

    @property
    def affected(self) -> list[str]:
        """Every table or number some issue affects, once, in the order first named."""
        return list(dict.fromkeys(a for i in self.issues for a in i.affects))

    @property
    def not_measured(self) -> list[str]:
        """The ``table.column`` numbers some issue says the data cannot give (left empty)."""
        return list(dict.fromkeys(a for i in self.issues if i.not_measured for a in i.affects if "." in a))

    @property
    def exit_code(self) -> int:
        """0 complete, 3 partial, 1 nothing usable."""
        if not self.usable:
            return EXIT_UNUSABLE
        return EXIT_PARTIAL if self.issues else EXIT_COMPLETE

    @property
    def verdict(self) -> str:
        return {EXIT_COMPLETE: "complete", EXIT_PARTIAL: "partial", EXIT_UNUSABLE: "unusable"}[self.exit_code]

    def lines(self) -> list[str]:
        """The ``data quality`` section as text lines (empty for a complete run)."""
        if self.complete:
            return []
        return [f"data quality: {self.verdict}"] + [f"  - {i}" for i in self.issues]

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "complete": self.complete, "usable": self.usable,
                "issues": [i.to_json() for i in self.issues], "affects": self.affected,
                "expected": dict(self.expected), "found": dict(self.found)}
