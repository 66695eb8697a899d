"""Imported once before pool workers are forked (by the driver, or by the fork server): what every
rank's summary needs (the worker module, the readers, the plugins that recognise and parse runs) is
loaded there once, so each worker starts ready instead of importing it again (a spawned worker spent
about a second on that, per worker, before its first rank).

Example::

    import multiprocessing
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["npuprof.cluster.workerprep"])
"""
from __future__ import annotations

from ..plugins.manager import get_plugin_host
from . import worker  # noqa: F401  (the function the pool runs)

get_plugin_host()       # loads the reader plugins' entry points (their modules import the readers)
