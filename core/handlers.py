"""Trace handlers for ``on_trace_ready``: small factories returning callables
that take the profiler.

Example::

    Profiler(schedule=schedule(wait=1, active=2),
             on_trace_ready=tensorboard_trace_handler("./prof"))
"""
from __future__ import annotations

import atexit
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from .validate import check_bool, check_output_path, check_str

log = logging.getLogger("npuprof")
_children: list = []


def _wait_children() -> None:
    for proc in _children:
        proc.wait()


atexit.register(_wait_children)


def tensorboard_trace_handler(dir_name: Any = None, worker_name: Any = None, analyse_flag: Any = True,
                              async_mode: Any = False) -> Callable[[Any], None]:
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

    def handler(prof: Any) -> None:
        if not analyse:
            return
        run_dir = prof.saved_runs[-1]
        if run_async:
            proc = subprocess.Popen([sys.executable, "-m", "npuprof", "analyse", str(run_dir), "--quiet"])
            _children.append(proc)
            prof._pending_async.append(proc)
            return
        prof._export_window(run_dir)

    handler.npuprof_dir_name = str(path)  # type: ignore[attr-defined]
    handler.npuprof_worker_name = worker  # type: ignore[attr-defined]
    return handler


def chrome_trace_handler(dir_name: Any, worker_name: Optional[str] = None, use_gzip: Any = False) -> Callable[[Any], None]:
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
