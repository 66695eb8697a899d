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
        context.flag(f"{RAW_DIR}/", problem, affects=("all tables",))
    if report.aged_out:        # storage_limit did what the user asked: a note, not damage
        context.warn(f"{raw}: {report.aged_out}")
    written = _events_written(context)
    if written is not None and report.events < written and not report.aged_out:
        context.flag(f"{RAW_DIR}/", f"{written} event(s) written by the profiler, {report.events} readable "
                                    "(a segment emptied, cut or removed)", affects=("all tables",))
    return table


def _events_written(context: ParseContext) -> Optional[int]:
    own = context.info.raw.get("npuprof") if context.info is not None else None
    value = own.get("events_written") if isinstance(own, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
