"""What an analyzer is, and the registry of the analyzers every plugin adds.

An analyzer is a pure function from the event table to one output table,
declared with what it needs (event kinds, event columns, what must be
collected) and what table it makes (name, columns, whether ``npuprof show``
prints it, when ``npuprof analyse`` writes its CSV). Plugins return them from
the ``npuprof_analyzers`` hook (the built-in ones from
:mod:`npuprof.plugins.analyzers`); the pipeline runs every registered
analyzer, and ``show``, ``export summary``, ``npuprof plugins`` and the text
export list what the registry has, so an analyzer added by a plugin appears
everywhere without a core edit. Cluster analysis (``npuprof cluster``,
``npuprof report``) runs each third-party summary analyzer on every rank
(:func:`job_analyzers`) and merges its tables across ranks.

Example::

    >>> from npuprof.events import EventKind, EventTable
    >>> from npuprof.analysis.table import Table
    >>> def range_names(events):
    ...     ranges = events.of_kind(EventKind.RANGE)
    ...     return Table("range_names", ["Name"], {"Name": ranges.column_strings("name")})
    >>> a = Analyzer("range_names", ("Name",), range_names, AnalyzerNeeds(events=(EventKind.RANGE,)))
    >>> a.compute(EventTable.from_records(ts=[0], kind=[EventKind.RANGE], name=["fwd"])).rows(), a.needs.describe()
    ([['fwd']], 'range events')
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Optional

from ..events import EventKind

if TYPE_CHECKING:  # pragma: no cover
    from ..events import EventTable
    from ..plugins.manager import PluginHost
    from .table import Table

CSV_WRITTEN = ("always", "with_rows", "never")    # when `npuprof analyse` writes <table>.csv


@dataclass(frozen=True)
class AnalyzerNeeds:
    """The data an analyzer reads.

    ``events``: the event kinds whose rows it reads (none of them in a run: its
    table has no rows); ``columns``: the event-table columns it reads;
    ``collected``: what must have been collected for those rows to exist
    (a profiler level or option, e.g. ``"record_shapes=True"``; empty: any run).
    """

    events: tuple[EventKind, ...] = ()
    columns: tuple[str, ...] = ()
    collected: tuple[str, ...] = ()

    def describe(self) -> str:
        """The needs in words (``npuprof plugins``)."""
        parts = [" or ".join(EventKind(k).name.lower() for k in self.events) + " events"] if self.events else []
        if self.collected:
            parts.append("collected with " + " or ".join(self.collected))
        return "; ".join(parts) or "any run"


@dataclass(frozen=True)
class Analyzer:
    """One analyzer: ``compute(events) -> Table`` named ``table`` with (at least) ``columns``.

    ``summary``: ``npuprof show`` prints it; ``csv``: when ``npuprof analyse``
    writes ``<table>.csv`` beside the others (``"always"``, ``"with_rows"``:
    only when it has rows, ``"never"``); ``title``: one line for listings.
    """

    table: str
    columns: tuple[str, ...]
    compute: Callable[["EventTable"], "Table"]
    needs: AnalyzerNeeds = AnalyzerNeeds()
    summary: bool = False
    csv: str = "with_rows"
    title: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.table, str) or not self.table:
            raise ValueError(f"Analyzer.table: a non-empty table name, got {self.table!r}")
        if self.csv not in CSV_WRITTEN:
            raise ValueError(f"Analyzer.csv: one of {', '.join(CSV_WRITTEN)}, got {self.csv!r}")
        if not callable(self.compute):
            raise ValueError(f"Analyzer.compute of {self.table!r}: a function of the event table")


@dataclass(frozen=True)
class RegisteredAnalyzer:
    """An analyzer, the plugin that registered it and whether that plugin is built in."""

    analyzer: Analyzer
    plugin: str
    builtin: bool

    def run(self, events: "EventTable", warnings: list[str]) -> Optional["Table"]:
        """The analyzer's table of ``events``. A third-party analyzer that raises or returns no
        :class:`~npuprof.analysis.table.Table` is reported in ``warnings`` by plugin name and its
        table left out (the other tables are still made); a built-in one's error propagates."""
        from .table import Table

        if self.builtin:
            return self.analyzer.compute(events)
        try:
            table = self.analyzer.compute(events)
        except Exception as e:
            warnings.append(f"analyzer {self.analyzer.table!r} of plugin {self.plugin!r} failed "
                            f"({type(e).__name__}: {e}); its table is left out")
            return None
        if not isinstance(table, Table):
            warnings.append(f"analyzer {self.analyzer.table!r} of plugin {self.plugin!r} returned "
                            f"{type(table).__name__}, not a Table; left out")
            return None
        return table


def registered_analyzers(host: Optional["PluginHost"] = None) -> list[RegisteredAnalyzer]:
    """Every analyzer the plugins register (``npuprof_analyzers``), in the order they run.

    The built-in plugins' first (in the order they list them), then the
    others in the order they were loaded. An analyzer whose table name is taken
    is left out with a warning naming both plugins (a third-party analyzer
    never replaces a built-in table), as is anything that is not an
    :class:`Analyzer`.
    """
    from ..plugins.manager import get_plugin_host

    host = host or get_plugin_host()
    return [RegisteredAnalyzer(analyzer, plugin, builtin) for analyzer, plugin, builtin in
            host.contributions("npuprof_analyzers", Analyzer, lambda a: a.table, "table", "an Analyzer")]


def job_analyzers(host: Optional["PluginHost"] = None) -> list[RegisteredAnalyzer]:
    """The analyzers whose tables cluster analysis carries from every rank and merges (``npuprof cluster``
    writes them, ``npuprof report`` shows them): each third-party analyzer declared ``summary=True``. The
    built-in ones' tables are the cluster's own (steps, operators, memory, host series).

    Example::

        [r.analyzer.table for r in job_analyzers()]     # [] without third-party plugins
    """
    return [r for r in registered_analyzers(host) if not r.builtin and r.analyzer.summary]


def csv_tables(tables: dict) -> Iterator[tuple[str, "Table", bool]]:
    """``(name, table, only_with_rows)`` of each analyzer table in ``tables`` that ``npuprof analyse``
    writes as ``<name>.csv`` (``only_with_rows``: declared ``csv="with_rows"``, no header-only file):
    those written always first, then the others, each in the order the analyzers run. Tables still
    being made (:class:`~npuprof.analysis.pipeline.PendingTables`) come as each is final, while the
    later analyzers run.

    Example::

        for name, table, only_with_rows in csv_tables(result.tables):
            print(name, len(table), only_with_rows)
    """
    written = [r.analyzer for r in registered_analyzers() if r.analyzer.csv != "never"]
    table_of = getattr(tables, "wait_for", tables.get)
    for analyzer in [a for a in written if a.csv != "with_rows"] + [a for a in written if a.csv == "with_rows"]:
        table = table_of(analyzer.table)
        if table is not None:
            yield analyzer.table, table, analyzer.csv == "with_rows"


def only_with_rows(name: str) -> bool:
    """True for a table whose file is written only when it has rows (no header-only file)."""
    return any(r.analyzer.table == name and r.analyzer.csv == "with_rows" for r in registered_analyzers())
