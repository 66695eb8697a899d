"""Where per-rank work runs: in-process, a local process pool, or Dask.

Every backend maps the same picklable function over the same tasks, either
in task order (:meth:`Executor.map`) or as each task finishes
(:meth:`Executor.as_completed`, so the driver merges a rank while the others
still run), so the driver code is one code path. Dask is an optional
dependency (``pip install npuprof[cluster]``): ``scheduler="tcp://host:8786"``
uses an existing cluster, ``None`` starts a local Dask cluster for the call.

The process pool's workers start ready, the workers' modules imported once
(:mod:`.workerprep`), not once per worker: forked from this process when it
runs no other thread (they start at once, when the executor is entered),
else from a fork server (clean: no thread or lock of the caller inherited)
whose imports run while the driver still looks for the ranks.

Example::

    with Executor("dask") as ex:
        summaries = ex.map(summarise_rank, tasks)
        for i, summary in ex.as_completed(summarise_rank, tasks):
            ...
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import as_completed as futures_completed
from typing import Any, Callable, Iterator, Optional, Sequence

from ..errors import ProfilerConfigError

log = logging.getLogger("npuprof")
BACKENDS = ("process", "dask", "serial")
_MP_METHOD = "distributed.worker.multiprocessing-method"


def default_workers() -> int:
    """Half the CPUs, at least one (a 1-CPU host must not get 0 workers)."""
    return max(1, (os.cpu_count() or 2) // 2)


class Executor:
    """A context manager that maps a function over tasks on one backend."""

    def __init__(self, backend: str = "process", scheduler: Optional[str] = None,
                 workers: Optional[int] = None) -> None:
        if backend not in BACKENDS:
            raise ProfilerConfigError("backend", backend, ", ".join(BACKENDS))
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise ProfilerConfigError("workers", workers, "an integer >= 1")
        if scheduler is not None and backend != "dask":
            raise ProfilerConfigError("scheduler", scheduler, "only with backend 'dask'")
        self.backend = backend
        self.scheduler = scheduler
        self.workers = workers or default_workers()
        self._pool: Any = None
        self._client: Any = None
        self._cluster: Any = None
        self._dask_method: Optional[tuple] = None     # (the start method Dask had, None if unset)
        self._quiet_dask: list = []
        self.description = backend

    def __enter__(self) -> "Executor":
        if self.backend == "process":
            ctx = _worker_context()
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx)
            if ctx.get_start_method() == "fork":
                self._pool.submit(int)      # forks every worker now, before this process starts any thread
            self.description = f"process pool ({self.workers} workers)"
        elif self.backend == "dask":
            import importlib.util

            if importlib.util.find_spec("distributed") is None:
                raise ProfilerConfigError("backend", "dask", "'process' or 'serial' (Dask is not installed)",
                                          hint="pip install 'npuprof[cluster]'")
            if not self.scheduler:
                import dask

                # the local workers fork from a fork server that has Dask and the workers' modules imported
                # (each starts ready, as a pool worker does); it starts first, so that its imports run while
                # this process imports Dask's client side
                self._dask_method = (dask.config.get(_MP_METHOD, None),)
                dask.config.set({_MP_METHOD: "forkserver"})     # set before Dask's defaults load: kept over them
                _worker_context(("distributed",))
            from distributed import Client, LocalCluster

            if self.scheduler:
                self._client = Client(self.scheduler)
                self.description = f"dask scheduler {self.scheduler}"
            else:
                # the local cluster's own progress messages stay out of npuprof's output (its errors do not)
                self._quiet_dask = [(lg, lg.level) for lg in map(logging.getLogger, ("distributed", "dask"))]
                for lg, _ in self._quiet_dask:
                    lg.setLevel(logging.ERROR)
                try:
                    self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                                 dashboard_address=None, silence_logs=logging.ERROR)
                    self._client = Client(self._cluster)
                except BaseException:
                    self.__exit__(None, None, None)
                    raise
                self.description = f"local dask cluster ({self.workers} workers)"
        return self

    def map(self, func: Callable[[Any], Any], tasks: Sequence[Any], *extra: Any) -> list:
        """``[func(t, *extra) for t in tasks]`` on the backend, in task order."""
        if not tasks:
            return []
        if self.backend == "serial":
            return [func(t, *extra) for t in tasks]
        if self.backend == "process":
            return list(self._pool.map(func, tasks, *[[e] * len(tasks) for e in extra]))
        futures = self._client.map(func, tasks, *[[e] * len(tasks) for e in extra], pure=False)
        return self._client.gather(futures)

    def as_completed(self, func: Callable[[Any], Any], tasks: Sequence[Any], *extra: Any) -> Iterator[tuple[int, Any]]:
        """``(i, func(tasks[i], *extra))`` for every task, in the order the tasks finish."""
        if not tasks:
            return
        if self.backend == "serial":
            for i, t in enumerate(tasks):
                yield i, func(t, *extra)
            return
        if self.backend == "process":
            index = {self._pool.submit(func, t, *extra): i for i, t in enumerate(tasks)}
            for fut in futures_completed(index):
                yield index[fut], fut.result()
            return
        from distributed import as_completed as dask_completed

        futures = self._client.map(func, tasks, *[[e] * len(tasks) for e in extra], pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for fut, result in dask_completed(futures, with_results=True):
            yield index[fut.key], result
            fut.release()

    def __exit__(self, *exc: Any) -> bool:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        if self._dask_method is not None:
            _restore_dask_method(self._dask_method[0])
        for lg, level in self._quiet_dask:
            lg.setLevel(level)
        return False


def _restore_dask_method(before: Optional[str]) -> None:
    """Dask's worker start method as it was before a local cluster (its default where it was unset). Not
    ``dask.config.set`` as a context: undoing that would also drop the defaults Dask loaded meanwhile."""
    import dask

    if before is None:
        before = next((v for d in reversed(dask.config.defaults)
                       if (v := dask.config.get(_MP_METHOD, None, config=d)) is not None), None)
    if before is not None:
        dask.config.set({_MP_METHOD: before})


def _worker_context(also: tuple = ()) -> Any:
    """The start method of pool workers.

    * fork, on Linux when this process runs no other thread (nothing a thread holds is copied half-done):
      the workers start at once, with everything this process imported; :mod:`.workerprep` is imported
      here first, once, instead of in every worker;
    * else a fork server that imported :mod:`.workerprep` and the modules ``also``, started now so that its
      imports overlap the caller's work (a fork server already running is used as it is);
    * else (no fork server on the platform) spawn.
    """
    methods = multiprocessing.get_all_start_methods()
    if not also and sys.platform.startswith("linux") and threading.active_count() == 1 and "fork" in methods:
        from . import workerprep  # noqa: F401

        return multiprocessing.get_context("fork")
    if "forkserver" not in methods:
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([*also, f"{__package__}.workerprep"])
    from multiprocessing import forkserver

    forkserver.ensure_running()
    return ctx
