"""Imported once before pool workers are forked (by the driver, or by the fork server): what every
rank's summary needs (the worker module, the readers, the plugins that recognise and parse runs) is
loaded there once, so each worker starts ready instead of importing it again (a spawned worker spent
about a second on that, per worker, before its first rank).

The readers below are imported by the plugins only when a run is parsed (so that ``npuprof --help`` does
not load them): without them here, every forked worker imported them again on its first rank (about 30 ms
of CPU per worker), and the driver too, while the ranks ran (its job scan and its look for runs no job
takes use the same modules). :data:`WORKER_MODULES` names them.

Example::

    import multiprocessing
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["npuprof.cluster.workerprep"])
"""
from __future__ import annotations

import importlib

from ..plugins.manager import get_plugin_host
from . import worker  # noqa: F401  (the function the pool runs)

# what summarising a torch_npu or MindSpore rank imports on first use, below the plugins' own modules
WORKER_MODULES = (
    "numpy.ma",                             # np.unique loads it on first use (numpy 2)
    "npuprof.readers.ascend_trace_view",    # trace_view.json (its scanner and msgspec decoder with it)
    "npuprof.readers.ascend_db",            # group ids of communication groups, the db exports
    "npuprof.cluster.packing",              # the summary's bytes
)

get_plugin_host()       # loads the reader plugins' entry points (their modules import the readers)
for _name in WORKER_MODULES:
    importlib.import_module(_name)
