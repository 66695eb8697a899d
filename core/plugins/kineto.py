"""Built-in plugin: PyTorch Kineto / Chrome trace files (``*.pt.trace.json[.gz]``) read with
:mod:`npuprof.readers.kineto`. A trace file is a run on its own (``npuprof show rank-0.pt.trace.json.gz``);
a folder of them is a job whose ranks are the files' ``distributedInfo``.

Example::

    npuprof show -dir ./traces/rank-0.pt.trace.json.gz
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..events import EventTable
from ..hookspecs import hookimpl

# the reader (and its trace decoder) is imported for a file only: ``npuprof analyse`` of a run folder asks
# every plugin whether the folder is its kind of run


@hookimpl
def npuprof_recognise_run(path: Path) -> Optional[bool]:
    path = Path(path)
    if not path.is_file():
        return None
    from ..readers.kineto import is_kineto_trace

    return True if is_kineto_trace(path) else None


@hookimpl
def npuprof_parse_run(run_dir: Path, context: Any) -> Optional[EventTable]:
    path = Path(run_dir)
    if not path.is_file():
        return None
    from ..readers.kineto import is_kineto_trace, read_kineto

    if not is_kineto_trace(path):
        return None
    read = read_kineto(path, context.warn)
    for issue in read.issues:
        context.flag_issue(issue)
    info = getattr(context, "info", None)
    if read.rank is not None and info is not None and info.rank not in (0, read.rank):
        context.warn(f"{path}: the trace records rank {read.rank}, the run's info says {info.rank}")
    return read.events
