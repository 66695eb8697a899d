"""Where per-rank work runs: in-process, a local process pool, or Dask.

Every backend maps the same picklable function over the same tasks and
returns results in task order, so the driver code after the map is one code
path. Dask is an optional dependency (``pip install npuprof[cluster]``):
``scheduler="tcp://host:8786"`` uses an existing cluster, ``None`` starts a
local Dask cluster for the call.

Example::

    with Executor("dask") as ex:
        summaries = ex.map(summarise_rank, tasks)
"""
from __future__ import annotations

import logging
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Optional, Sequence

from ..errors import ProfilerConfigError

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
        self._cluster: Any = None
        self.description = backend

    def __enter__(self) -> "Executor":
        if self.backend == "process":
            # spawn: workers start clean (no inherited threads or locks), as Dask's do
            self._pool = ProcessPoolExecutor(max_workers=self.workers,
                                             mp_context=multiprocessing.get_context("spawn"))
            self.description = f"process pool ({self.workers} workers)"
        elif self.backend == "dask":
            try:
                from distributed import Client, LocalCluster
            except ImportError:
                raise ProfilerConfigError("backend", "dask", "'process' or 'serial' (Dask is not installed)",
                                          hint="pip install 'npuprof[cluster]'") from None
            if self.scheduler:
                self._client = Client(self.scheduler)
                self.description = f"dask scheduler {self.scheduler}"
            else:
                self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                             dashboard_address=None, silence_logs=logging.ERROR)
                self._client = Client(self._cluster)
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

    def __exit__(self, *exc: Any) -> bool:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        return False
