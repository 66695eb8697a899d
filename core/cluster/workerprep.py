"""Imported once before pool workers are forked (by the driver, or by the fork server): what every
rank's summary needs (the worker module, the readers, the plugins that recognise and parse runs) is
loaded there once, so each worker starts ready instead of importing it again (a spawned worker spent
about a second on that, per worker, before its first rank).

The readers below are imported by the plugins only when a run is parsed: without them here, every forked
worker imported them again on its first rank (about 30 ms of CPU per worker), after the driver had imported
them itself (its job scan, and its look for runs no job takes while the ranks ran).

Example::

    import multiprocessing
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["npuprof.cluster.workerprep"])
"""
from __future__ import annotations

import numpy.ma  # noqa: F401  (numpy 2's np.unique loads it on first use)

from ..plugins.manager import get_plugin_host
from ..readers import ascend_db, ascend_trace_view  # noqa: F401  (communication group ids; trace_view.json, msgspec)
from . import packing, worker  # noqa: F401  (the summary's bytes; the function the pool runs)

get_plugin_host()       # loads the reader plugins' entry points (their modules import the readers)
