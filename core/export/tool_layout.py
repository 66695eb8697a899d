"""Another tool's export layout, written by the plugin that knows it (``npuprof_tool_layout``).

``npuprof export timeline|summary`` asks each run's plugins for one: an SS928/SS927
JOB gets msprof.pyc's ``timeline/`` and ``summary/`` files (the pyACL plugin), any
other run npuprof's own ``msprof_timeline.json`` and summary tables.

Example::

    layout = tool_layout(Path("JOBABCDEFGH"))
    if layout is not None:
        layout.write(result, "summary", "csv", Path("out/JOBABCDEFGH"))
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Protocol

from ..analysis.result import AnalysisResult
from ..plugins.manager import get_plugin_host


class ToolLayout(Protocol):
    """How a tool lays out a run's exports (what a ``npuprof_tool_layout`` hook returns)."""

    tool: str                     # the tool whose layout it is, for messages
    collected_by_npuprof: bool    # npuprof's own collection: its exports go into the run, as the tool's would

    def write(self, result: AnalysisResult, what: str, fmt: str, place: Path) -> list[Path]:
        """Write ``what`` (``timeline`` or ``summary``, ``fmt`` csv or json) under ``place``; the paths."""
        ...


def tool_layout(run_dir: Path) -> Optional[ToolLayout]:
    """The first plugin's layout for ``run_dir``, or None (npuprof's own files)."""
    for _, layout in get_plugin_host().call("npuprof_tool_layout", run_dir=Path(run_dir)):
        return layout
    return None
