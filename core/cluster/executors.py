"""Where per-rank work runs: in-process, a local process pool, or Dask.

Every backend maps the same picklable function over the same tasks, either
in task order (:meth:`Executor.map`) or as each task finishes
(:meth:`Executor.as_completed`, so the driver merges a rank while the others
still run), so the driver code is one code path. Dask is an optional
dependency (``pip install npuprof[cluster]``): ``scheduler="tcp://host:8786"``
uses an existing cluster, ``None`` starts a local Dask cluster for the call
(:mod:`.dask_local`: its workers forked from this process, as the pool's).

The process pool's workers start ready, the workers' modules imported once
(:mod:`.workerprep`), not once per worker (:mod:`.startmethod`): forked from this process when it
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
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import as_completed as futures_completed
from typing import Any, Callable, Iterator, Optional, Sequence

from ..errors import ProfilerConfigError
from .startmethod import frozen_objects, worker_context

log = logging.getLogger("npuprof")
BACKENDS = ("process", "dask", "serial")


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
        self._local: Any = None         # a local Dask cluster (.dask_local.LocalDask)
        self.description = backend

    def __enter__(self) -> "Executor":
        if self.backend == "process":
            ctx = worker_context()
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx)
            if ctx.get_start_method() == "fork":
                with frozen_objects():
                    self._pool.submit(int)      # forks every worker now, before this process starts any thread
            self.description = f"process pool ({self.workers} workers)"
        elif self.backend == "dask":
            import importlib.util

            if importlib.util.find_spec("distributed") is None:
                raise ProfilerConfigError("backend", "dask", "'process' or 'serial' (Dask is not installed)",
                                          hint="pip install 'npuprof[cluster]'")
            if self.scheduler:
                from distributed import Client

                self._client = Client(self.scheduler)
                self.description = f"dask scheduler {self.scheduler}"
            else:
                from .dask_local import LocalDask

                self._local = LocalDask(self.workers).__enter__()
                self._client = self._local.client
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
        if self._local is not None:
            self._local.ready()
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
        if self._local is not None:
            self._local.ready()
        index = {f.key: i for i, f in enumerate(futures)}
        for fut, result in dask_completed(futures, with_results=True):
            yield index[fut.key], result
            fut.release()

    def __exit__(self, *exc: Any) -> bool:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._local is not None:
            self._local.__exit__(*exc)
        elif self._client is not None:
            self._client.close()
        return False
