"""Analyzer plugins written by the tests, registered through the real plugin host.

``KindsPlugin`` makes ``events_per_kind`` (a summary table every run has rows of), ``FailingPlugin`` an
analyzer that raises; :func:`registered_plugins` registers them for a ``with`` block and unregisters them after.

Example::

    with registered_plugins(kinds=KindsPlugin()):
        analyse_run(run).tables["events_per_kind"]
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np

from npuprof import hookimpl
from npuprof.analysis.analyzer import Analyzer, AnalyzerNeeds
from npuprof.analysis.table import Table
from npuprof.events import EventKind, EventTable
from npuprof.plugins.manager import get_plugin_host

KINDS_TABLE = "events_per_kind"
KINDS_TITLE = "events of each kind"


def events_per_kind(events: EventTable) -> Table:
    kinds, counts = np.unique(events["kind"], return_counts=True)
    return Table(KINDS_TABLE, ["Kind", "Events"], {"Kind": [EventKind(int(k)).name for k in kinds], "Events": counts})


class KindsPlugin:
    @hookimpl
    def npuprof_analyzers(self) -> list[Analyzer]:
        return [Analyzer(KINDS_TABLE, ("Kind", "Events"), events_per_kind, AnalyzerNeeds(columns=("kind",)),
                         summary=True, title=KINDS_TITLE)]


class FailingPlugin:
    @hookimpl
    def npuprof_analyzers(self) -> list[Analyzer]:
        def broken(events: EventTable) -> Table:
            raise RuntimeError("boom")
        return [Analyzer("broken_summary", ("X",), broken, summary=True)]


@contextmanager
def registered_plugins(**plugins: object) -> Iterator[None]:
    """Each plugin registered under its keyword's name while the block runs."""
    host = get_plugin_host()
    done = []
    try:
        for name, plugin in plugins.items():
            host.register(plugin, name=name)
            done.append(name)
        yield
    finally:
        for name in done:
            host.unregister(name)
