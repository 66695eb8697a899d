"""Built-in plugin: reads the profiler database of a torch_npu / MindSpore run
written with ``export_type=db`` (``ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{rank}.db``
or ``ascend_mindspore_profiler_{rank}.db``) with :mod:`npuprof.readers.ascend_db`.

One source per run, never two: a run whose ``ASCEND_PROFILER_OUTPUT`` also
holds the text outputs (``trace_view.json`` or ``kernel_details.csv``, i.e.
``export_type=[text, db]``) is read from the text by the ``ascend`` /
``mindspore`` plugins, and its database is left alone. npuprof's own runs
(raw data in ``npuprof_raw/``) are read from their raw data. ``analysis.db``
holds the tool's summaries, not events, and is not read.

The device of every event is the one the database records; the rank the
database records (``RANK_DEVICE_MAP``) is checked against the run's
``profiler_info``, and a disagreement is reported.

Example::

    from npuprof.analysis.pipeline import load_events
    events, info, warnings = load_events("rank1_ascend_pt")     # a db-only torch_npu run
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..events import EventTable
from ..hookspecs import hookimpl
from ..rawstore import RAW_DIR
from ..readers.ascend_output import KERNEL_DETAILS, OUTPUT_DIR, TRACE_VIEW

TEXT_OUTPUTS = (TRACE_VIEW, KERNEL_DETAILS)


def run_database(run_dir: Path, rank: Optional[int] = None) -> Optional[Path]:
    """The profiler database npuprof reads for ``run_dir``, or None (see module doc).

    With several databases in the folder, the one named with ``rank`` (else the first).

    Example::

        >>> run_database(Path("/nonexistent/rank0_ascend_pt")) is None
        True
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or (run_dir / RAW_DIR).is_dir():
        return None
    # the reader (sqlite3, the schemas) is imported once the folder is not one of npuprof's own runs
    from ..readers.ascend_db import framework_dbs, rank_in_name

    out = run_dir / OUTPUT_DIR
    dbs = framework_dbs(out)
    if not dbs or any((out / name).is_file() for name in TEXT_OUTPUTS):
        return None
    named = [p for p in dbs if rank is not None and rank_in_name(p) == rank]
    return (named or dbs)[0]


@hookimpl
def npuprof_recognise_run(path: Path) -> Optional[bool]:
    return True if run_database(Path(path)) is not None else None


@hookimpl
def npuprof_parse_run(run_dir: Path, context: Any) -> Optional[EventTable]:
    info = getattr(context, "info", None)
    rank = getattr(info, "rank", None)
    db = run_database(Path(run_dir), rank)
    if db is None:
        return None
    from ..readers.ascend_db import framework_dbs, read_ascend_db

    others = [p.name for p in framework_dbs(db.parent) if p != db]
    if others:
        context.warn(f"{db.parent}: several profiler databases; read {db.name}, not {', '.join(others)}")
    read = read_ascend_db(db, context.warn)
    if read.facts.rank is not None and rank is not None and read.facts.rank != rank:
        context.warn(f"{db}: records rank {read.facts.rank} but the run's profiler_info says rank {rank}")
    return read.events
