"""How the cluster's worker processes start: forked from this process where that is safe, else from a
fork server that imported what the workers need, else spawned (:func:`worker_context`).

Example::

    ctx = worker_context()
    pool = concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx)
"""
from __future__ import annotations

import contextlib
import multiprocessing
import sys
import threading
from typing import Any, Iterator


def fork_allowed() -> bool:
    """True where workers may be forked from this process: Linux, fork available, no other thread running
    (a lock another thread holds would be copied held)."""
    return (sys.platform.startswith("linux") and threading.active_count() == 1
            and "fork" in multiprocessing.get_all_start_methods())


def worker_context(also: tuple = ()) -> Any:
    """The start method of pool workers (a multiprocessing context).

    * fork, on Linux when this process runs no other thread (nothing a thread holds is copied half-done):
      the workers start at once, with everything this process imported; :mod:`.workerprep` is imported
      here first, once, instead of in every worker;
    * else a fork server that imported :mod:`.workerprep` and the modules ``also``, started now so that its
      imports overlap the caller's work (a fork server already running is used as it is);
    * else (no fork server on the platform) spawn.
    """
    if not also and fork_allowed():
        from . import workerprep  # noqa: F401

        return multiprocessing.get_context("fork")
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([*also, f"{__package__}.workerprep"])
    from multiprocessing import forkserver

    forkserver.ensure_running()
    return ctx


@contextlib.contextmanager
def frozen_objects() -> Iterator[None]:
    """Every object of this process out of the garbage collector's reach while workers are forked from it
    (:func:`gc.freeze`; undone here after, unless this process had frozen objects itself: that cannot be
    undone in part, and is left as it chose): a forked worker keeps them frozen, so its collections neither
    walk the driver's imports nor write to their pages (which would copy each page the worker shares with
    the driver).

    Example::

        with frozen_objects():
            pool.submit(int)        # a fork-context pool forks its workers here
    """
    import gc

    had_frozen = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        yield
    finally:
        if not had_frozen:
            gc.unfreeze()
