"""Built-in exporter plugin: ``trace_view.json`` (Kineto object form, :mod:`npuprof.export.trace_json`).

It reads only the events, so it writes while the analyzers still run: a
large trace is rendered by a forked child where forking is safe
(:func:`~npuprof.export.writer.fork_is_safe`), and this thread renders a
share of what is left once the analyzers are done and no CSV's own child
still writes (:func:`~npuprof.export.trace_json.write_trace_beside`).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from ..analysis.result import AnalysisResult
    from ..export.writer import ExportTarget


@hookimpl
def npuprof_export(result: AnalysisResult, target: ExportTarget) -> Optional[list[Path]]:
    if not target.text:
        return None
    # the trace writer is imported by the export: every npuprof command loads this plugin
    from ..export.trace_json import trace_settings, write_trace_beside
    from ..export.writer import fork_is_safe

    # reading the tables waits for the analyzers: then this thread takes its share of the trace
    return [write_trace_beside(result.events, target.output_dir / "trace_view.json", fork_is_safe(),
                               help_after=lambda: len(result.tables), **trace_settings(result))]
