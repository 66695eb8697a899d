"""Write a memory timeline (``Profiler.export_memory_timeline``, ``npuprof memory -o``).

The file's suffix picks the form, as torch.profiler's ``export_memory_timeline`` does: ``.html`` the
self-contained page (:mod:`.memory_page`), ``.json`` / ``.json.gz`` the data
(:meth:`~npuprof.analysis.memory.MemoryTimeline.to_json`). Written to a temporary name and renamed.

Example::

    write_memory_timeline(memory_timeline(result.events), Path("mem.html"), "npuprof memory: my run")
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Optional

from ..analysis.memory import MemoryTimeline
from ..fileio import atomic_write
from .memory_page import render_memory_page

TIMELINE_SUFFIXES = (".html", ".json", ".json.gz")


def timeline_form(path: Path) -> str:
    """The suffix of ``path`` that picks the form, or "" when none of :data:`TIMELINE_SUFFIXES` ends it."""
    return next((s for s in TIMELINE_SUFFIXES if path.name.endswith(s)), "")


def write_memory_timeline(timeline: MemoryTimeline, path: Path, title: str, start_ns: Optional[int] = None) -> Path:
    """Write ``timeline`` to ``path`` in the form its suffix names; returns the path. The page shows
    times since ``start_ns`` (the run's start); the JSON forms keep absolute (epoch) times."""
    form = timeline_form(path)
    if form == ".html":
        return atomic_write(path, render_memory_page(timeline, title, start_ns))
    data = json.dumps(timeline.to_json()).encode()
    return atomic_write(path, gzip.compress(data) if form == ".json.gz" else data)
