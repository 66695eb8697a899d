"""The MindSpore plugin: a backend (drives ``mindspore.profiler`` in npuprof
windows) and a parser (reads MindSpore's files into the event table).

Registered under the ``npuprof`` entry-point group as ``mindspore``. Importing
this module does not import MindSpore; the backend only takes part when the
user's program has imported it (see :meth:`MindSporeBackend.configure`).

Example::

    import mindspore, npuprof
    with npuprof.Profiler(activities=["CPU"]) as prof:   # the plugin joins in
        net(x)
    npuprof.analyse(prof.saved_runs[0])                  # MatMul, BiasAdd ... rows
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from npuprof.hookspecs import hookimpl

from . import parser
from .backend import MindSporeBackend

backend = MindSporeBackend()


@hookimpl
def npuprof_configure(config: Any) -> None:
    backend.configure(config)


@hookimpl
def npuprof_start(session: Any) -> None:
    backend.start(session)


@hookimpl
def npuprof_step(session: Any, step_num: int) -> None:
    backend.step(session, step_num)


@hookimpl
def npuprof_stop(session: Any) -> None:
    backend.stop(session)


@hookimpl
def npuprof_recognise_run(path: Path) -> Optional[bool]:
    return True if parser.recognise(Path(path)) else None


@hookimpl
def npuprof_parse_run(run_dir: Path, context: Any) -> Optional[Any]:
    return parser.parse_run(Path(run_dir), context)
