"""Trace handlers for ``on_trace_ready``: small factories returning callables
that take the profiler.

Example::

    Profiler(schedule=schedule(wait=1, active=2),
             on_trace_ready=tensorboard_trace_handler("./prof"))
"""
from __future__ import annotations

import atexit
import functools
import logging
import os
import shutil
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Union

from .validate import check_bool, check_output_path, check_str

log = logging.getLogger("npuprof")
_children: list = []


def _wait_children() -> None:
    for proc in _children:
        proc.wait()


atexit.register(_wait_children)


def tensorboard_trace_handler(dir_name: Optional[Union[str, "os.PathLike[str]"]] = None,
                              worker_name: Optional[str] = None, analyse_flag: bool = True,
                              async_mode: bool = False) -> Callable[[Any], None]:
    """Save each window under ``dir_name`` and analyse it (mindspore.profiler's handler).

    ``dir_name`` replaces the profiler's ``output_path``; ``analyse_flag=False``
    leaves raw data for ``npuprof analyse``; ``async_mode=True`` analyses in a
    child process so training goes on at once (joined at interpreter exit).

    Example::

        prof = Profiler(schedule=schedule(wait=0, active=2),
                        on_trace_ready=tensorboard_trace_handler("./tb", async_mode=True))
    """
    path = check_output_path("dir_name", "./npuprof_data" if dir_name is None else dir_name)
    worker = None if worker_name is None else check_str(
        "worker_name", worker_name, max_len=225, pattern=r"[0-9A-Za-z_.\-]+",
        allowed="a name of letters, digits, '_', '-', '.' (at most 225 characters)")
    analyse = check_bool("analyse_flag", analyse_flag)
    run_async = check_bool("async_mode", async_mode)

    settings = HandlerSettings(dir_name=str(path), worker_name=worker)

    def handler(prof: Any) -> None:
        run_dir = _into_own_dir(prof, Path(settings.dir_name))
        if not analyse:
            return
        if run_async:
            import subprocess     # imported for an async analysis only: `import npuprof` (every command) needs none

            proc = subprocess.Popen([sys.executable, "-m", "npuprof", "analyse", str(run_dir), "--quiet"])
            _children.append(proc)
            prof._async_exports.append(proc)
            return
        prof._export_window(run_dir)

    handler.npuprof_handler = settings  # type: ignore[attr-defined]
    return handler


@dataclass(frozen=True)
class HandlerSettings:
    """What a :func:`tensorboard_trace_handler` asks of the Profiler it is given to."""

    dir_name: str
    worker_name: Optional[str] = None


def handler_settings(on_trace_ready: Any) -> Optional[HandlerSettings]:
    """The settings of the npuprof handler ``on_trace_ready`` is or calls.

    A user's own function that wraps the handler (logs, then calls it) is looked into: ``__wrapped__``,
    ``functools.partial``, closure cells, default arguments and the globals it names. Several different
    handlers inside one function: None (the Profiler's own ``output_path`` stays).

    Example::

        tb = tensorboard_trace_handler("./tb")
        handler_settings(lambda prof: (print("ready"), tb(prof))).dir_name    # './tb'
    """
    found: set[HandlerSettings] = set()
    seen: set[int] = set()

    def visit(obj: Any, depth: int) -> None:
        if obj is None or id(obj) in seen or depth > 3:
            return
        seen.add(id(obj))
        own = getattr(obj, "npuprof_handler", None)
        if isinstance(own, HandlerSettings):
            found.add(own)
            return
        if isinstance(obj, functools.partial):
            for x in (obj.func, *obj.args, *obj.keywords.values()):
                visit(x, depth + 1)
            return
        visit(getattr(obj, "__wrapped__", None), depth + 1)
        func = getattr(obj, "__func__", obj)          # bound methods
        code = getattr(func, "__code__", None)
        if code is None:
            call = getattr(type(obj), "__call__", None)
            if call is not None and hasattr(obj, "__dict__"):   # a callable object holding the handler
                for x in vars(obj).values():
                    visit(x, depth + 1)
            return
        for cell in getattr(func, "__closure__", None) or ():
            try:
                visit(cell.cell_contents, depth + 1)
            except ValueError:      # an empty cell
                pass
        for x in getattr(func, "__defaults__", None) or ():
            visit(x, depth + 1)
        names = set(code.co_names)
        for name, x in (getattr(func, "__globals__", None) or {}).items():
            if name in names:
                visit(x, depth + 1)

    visit(on_trace_ready, 0)
    return found.pop() if len(found) == 1 else None


def _into_own_dir(prof: Any, dir_name: Path) -> Path:
    """The window just saved, under the handler's directory: a Profiler that could not see the handler
    (hidden in an object it could not look into) saved it under its ``output_path``; it moves, with a warning."""
    run_dir = Path(prof.saved_runs[-1])
    target = dir_name.resolve()
    if run_dir.resolve().parent == target:
        return run_dir
    target.mkdir(parents=True, exist_ok=True)
    moved = target / run_dir.name
    shutil.move(str(run_dir), str(moved))
    prof.saved_runs[-1] = moved
    _warn_once(f"moved:{target}", "npuprof: the window was saved under %s; tensorboard_trace_handler(%s) moved it "
               "to %s (give the handler to Profiler(on_trace_ready=...) directly to save it there at once)",
               run_dir.parent, dir_name, moved)
    return moved


_warned: set[str] = set()


def _warn_once(key: str, msg: str, *args: Any) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(msg, *args)


def chrome_trace_handler(dir_name: Union[str, "os.PathLike[str]"], worker_name: Optional[str] = None,
                         use_gzip: bool = False) -> Callable[[Any], None]:
    """Write each saved window as ``{worker}.{time_ns}.pt.trace.json[.gz]`` in
    ``dir_name`` (torch's file naming; Perfetto, chrome://tracing and HTA
    open it).

    Example::

        Profiler(schedule=schedule(wait=1, active=3), on_trace_ready=chrome_trace_handler("./traces"))
    """
    path = check_output_path("dir_name", dir_name)
    gz = check_bool("use_gzip", use_gzip)
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"

    def handler(prof: Any) -> None:
        prof.export_chrome_trace(Path(path) / (f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if gz else "")))

    return handler
