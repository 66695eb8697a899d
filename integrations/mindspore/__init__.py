"""npuprof for MindSpore: a training callback, MindSpore-style keywords, and
MindSpore's own profiler data in npuprof runs.

* :class:`ProfilerCallback` / :class:`ProfilerEpochCallback` - add one
  callback to ``Model.train`` / ``Model.eval`` for step- or epoch-scheduled
  capture.
* :class:`DynamicProfilerMonitor` - ``mindspore.profiler.DynamicProfilerMonitor``
  as a drop-in: capture steps of a running job when its JSON file changes.
* :class:`Profiler` - ``mindspore.profiler.Profiler`` (``mindspore.Profiler``)
  as a drop-in: MindSpore's arguments, defaults, rules and methods
  (``analyse``, ``offline_analyse`` ...) over npuprof's collection.
* :func:`profile` - :class:`npuprof.Profiler` built from
  ``mindspore.profiler.profile`` keywords (MindSpore enums,
  ``_ExperimentalConfig``), with strict checks.
* The ``mindspore`` plugin (``plugin.py``) records MindSpore's operators in
  every npuprof window and reads ``*_ascend_ms`` directories.

Importing this package does not import MindSpore; the callbacks (which
subclass ``mindspore.train.Callback``) are loaded on first use.

Example::

    from npuprof import schedule
    from npuprof.integrations.mindspore import ProfilerCallback

    cb = ProfilerCallback(output_path="./prof", schedule=schedule(wait=1, warmup=1, active=2, repeat=2))
    model.train(2, dataset, callbacks=[cb])
    print(cb.profiler.saved_runs)
"""
from __future__ import annotations

from typing import Any

from .options import from_mindspore_kwargs, make_profiler

profile = make_profiler

_LAZY = {"Profiler": "profiler", "ProfilerCallback": "callback", "ProfilerEpochCallback": "callback", "run_demo": "demo",
         "DynamicProfilerMonitor": "dynamic"}

__all__ = ["DynamicProfilerMonitor", "Profiler", "ProfilerCallback", "ProfilerEpochCallback", "from_mindspore_kwargs", "make_profiler", "profile",
           "run_demo"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
