"""The local Dask cluster of ``backend="dask"`` without a scheduler address: a real ``distributed``
scheduler (in this process, as ``LocalCluster`` runs it) and ``workers`` Dask workers, each in its own
process, talking over TCP on loopback as the workers of a multi-host cluster do.

Where it costs: Dask's own ``LocalCluster`` starts a nanny per worker and each worker from a fork server,
a fresh interpreter that imports Dask and npuprof's readers again (about 0.6 s of CPU on one core of a
small machine, before the first rank), and its defaults sample every worker's stack every 10 ms (the
statistical profiler of Dask's dashboard) and check each event loop every 20 ms. Here, when this process
runs no other thread (on Linux, as the process pool's workers), the worker processes are forked from it
before the scheduler starts: they start with Dask and npuprof already imported, they are this process's
children (its CPU accounting and exit see them), and they run a plain ``distributed.Worker`` (no nanny:
a worker that dies is not restarted; its ranks go to the others, and with no worker left the ranks fail
after ``no-workers-timeout`` instead of waiting for ever). Elsewhere (threads, another OS) it is
Dask's ``LocalCluster`` with its workers from a fork server that imported the same modules.
Either way the dashboard's profiling and the event-loop and GIL monitors are off (:data:`LOCAL_CONFIG`);
a cluster of the user's own (a scheduler address) keeps its configuration.

Example::

    with LocalDask(workers=2) as local:
        client = local.client
        client.gather(client.map(abs, [-1, -2]))
"""
from __future__ import annotations

import logging
import multiprocessing
from typing import Any, Literal, Optional

from .startmethod import fork_allowed, frozen_objects, worker_context

log = logging.getLogger("npuprof")
_MP_METHOD = "distributed.worker.multiprocessing-method"
# the local cluster's settings (applied to the scheduler here and sent to each worker)
LOCAL_CONFIG = {
    "distributed.worker.profile.enabled": False,          # a stack sample of every worker thread each 10 ms
    "distributed.admin.system-monitor.gil.enabled": False,  # polls the GIL every 1 ms where gilknocker is
    "distributed.admin.tick.interval": "1s",              # event-loop health check (default every 20 ms)
    "distributed.admin.system-monitor.interval": "2s",    # psutil readings for the dashboard (500 ms)
    "distributed.scheduler.no-workers-timeout": "30s",    # every worker gone: fail the ranks, do not hang
}
WORKER_JOIN_S = 10.0


class LocalDask:
    """A context manager: a local Dask scheduler, ``workers`` worker processes and a client to them."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.client: Any = None
        self.forked = False
        self._cluster: Any = None
        self._procs: list = []
        self._conns: list = []          # the pipe ends that tell each forked worker the scheduler's address
        self._dask_method: Optional[tuple] = None     # (the start method Dask had, None if unset)
        self._quiet: list = []          # (logger, its level before)
        self._joining = False           # forked workers not yet confirmed joined (see ready)

    def __enter__(self) -> "LocalDask":
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        import dask

        if fork_allowed():
            import distributed  # noqa: F401  (before the fork: imported once, not in every worker)

            from . import workerprep  # noqa: F401
            self._quiet_logs()          # before the fork, which copies the loggers' levels
            with frozen_objects():
                self._fork_workers()
        else:
            # the workers fork from a fork server that has Dask and the workers' modules imported (each starts
            # ready, as a pool worker does); it starts first, so that its imports overlap this process's
            self._dask_method = (dask.config.get(_MP_METHOD, None),)
            dask.config.set({_MP_METHOD: "forkserver"})     # set before Dask's defaults load: kept over them
            worker_context(("distributed",))
            import distributed  # noqa: F401

            self._quiet_logs()
        from distributed import Client, LocalCluster

        # a context only around what reads it (the scheduler's and the nannies' construction): undone after,
        # Dask's defaults (loaded by the import above) are there to restore
        with dask.config.set(LOCAL_CONFIG):
            self._cluster = LocalCluster(n_workers=0 if self.forked else self.workers, threads_per_worker=1,
                                         processes=True, host="127.0.0.1", dashboard_address=None,
                                         silence_logs=logging.ERROR)
        if self.forked:
            for conn in self._conns:
                conn.send(self._cluster.scheduler_address)
                conn.close()
            self._conns = []
        self.client = Client(self._cluster)
        self._joining = self.forked       # the forked workers join the scheduler while the caller goes on

    def ready(self) -> None:
        """Wait until every forked worker has joined the scheduler (``TimeoutError`` after 120 s). The executor
        calls this once it has handed the first tasks to the scheduler, so that the workers' start-up (their
        Dask worker, its connection: about 0.1 s) overlaps the driver's work until then (finding the ranks)
        instead of coming before it."""
        if self._joining:
            self.client.wait_for_workers(self.workers, timeout=120)
            self._joining = False

    def _quiet_logs(self) -> None:
        """The local cluster's own progress messages stay out of npuprof's output (its errors do not). After
        Dask's import, which sets its loggers' levels."""
        self._quiet = [(lg, lg.level) for lg in map(logging.getLogger, ("distributed", "dask"))]
        for lg, _ in self._quiet:
            lg.setLevel(logging.ERROR)

    def _fork_workers(self) -> None:
        ctx = multiprocessing.get_context("fork")
        for i in range(self.workers):
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_serve, args=(reader, dict(LOCAL_CONFIG)), name=f"npuprof-dask-worker-{i}",
                               daemon=True)
            proc.start()
            reader.close()
            self._procs.append(proc)
            self._conns.append(writer)
        self.forked = True

    def __exit__(self, *exc: Any) -> Literal[False]:
        for conn in self._conns:      # a start that failed: the waiting workers end
            try:
                conn.send(None)
                conn.close()
            except OSError:
                pass
        if self.client is not None:
            if self._joining:       # no task was handed out: the workers still joining are let in, then told to close
                try:
                    self.client.wait_for_workers(self.workers, timeout=WORKER_JOIN_S)
                except Exception:   # noqa: BLE001  (one that never joined is terminated below)
                    pass
                self._joining = False
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()          # the scheduler tells every worker connected to it to close
        for proc in self._procs:
            proc.join(WORKER_JOIN_S)
            if proc.is_alive():
                log.warning("npuprof cluster: Dask worker %s did not stop; terminating it", proc.name)
                proc.terminate()
                proc.join()
        if self._dask_method is not None:
            _restore_dask_method(self._dask_method[0])
        for lg, level in self._quiet:
            lg.setLevel(level)
        return False


def _serve(conn: Any, config: dict) -> None:
    """A forked worker process: wait for the scheduler's address, run a Dask worker until it is closed."""
    address = conn.recv()
    conn.close()
    if not address:
        return
    import asyncio

    import dask
    from distributed import Worker

    dask.config.set(config)

    async def run() -> None:
        async with Worker(address, nthreads=1, dashboard=False) as worker:
            await worker.finished()

    asyncio.run(run())


def _restore_dask_method(before: Optional[str]) -> None:
    """Dask's worker start method as it was before a local cluster (its default where it was unset). Not
    ``dask.config.set`` as a context: undoing that would also drop the defaults Dask loaded meanwhile."""
    import dask

    if before is None:
        before = next((v for d in reversed(dask.config.defaults)
                       if (v := dask.config.get(_MP_METHOD, None, config=d)) is not None), None)
    if before is not None:
        dask.config.set({_MP_METHOD: before})
