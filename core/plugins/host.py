"""Built-in plugin: parses npuprof's own raw data (host events, steps,
annotations, API timing, host usage) written by the core recorder."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..events import EventTable
from ..hookspecs import hookimpl
from ..rawstore import RAW_DIR, read_raw_dir
from ..session import ParseContext


@hookimpl
def npuprof_recognise_run(path: Path) -> Optional[bool]:
    return True if (path / RAW_DIR).is_dir() else None


@hookimpl
def npuprof_parse_run(run_dir: Path, context: ParseContext) -> Optional[EventTable]:
    raw = run_dir / RAW_DIR
    if not raw.is_dir():
        return None
    table, report = read_raw_dir(raw)
    for problem in report.problems:
        context.warn(f"{raw}: {problem}")
    return table
