"""npuprof for TensorFlow: Ascend ``profiling_options`` everywhere TF users set them.

Entry points (all take the Ascend profiling_options JSON and/or npuprof
Profiler arguments):

- Estimator mode (TF Adapter names): :class:`ProfilingConfig`,
  ``NPURunConfig``, ``NPUEstimator``; ``ProfilingHook`` for plain Estimator /
  ``MonitoredTrainingSession``.
- sess.run mode: :func:`activate` makes sessions whose ``ConfigProto`` carries
  the ``NpuOptimizer`` ``profiling_mode``/``profiling_options`` (or
  ``PROFILING_MODE=true``) collect; :func:`session_config` builds such a config.
- TF2: :func:`global_options` / :func:`open` as in ``npu_device``;
  ``ProfilerCallback`` for Keras; :class:`Profiler` around ``tf.function`` loops.
- ``DynamicProfilerCallback``: Keras ``fit`` captures steps when a watched
  JSON config changes (:mod:`npuprof.dynamic_profile`).
- :func:`parse_profiling_options` / :func:`render_profiling_options`:
  validate the JSON, map it to npuprof settings and back.

Importing this package does not import TensorFlow; ``ProfilingHook``,
``NPURunConfig``, ``NPUEstimator`` and ``ProfilerCallback`` subclass TensorFlow
types and are created on first access.

Example::

    import tensorflow as tf
    from npuprof import schedule
    from npuprof.integrations.tensorflow import Profiler

    with Profiler(profiling_options='{"output":"./prof","task_time":"on"}',
                  schedule=schedule(wait=1, active=2, repeat=2)) as prof:
        for x in data:
            train_step(x)       # a tf.function
            prof.step()
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..cann.profiling_options import (ADAPTER_DEFAULT_OPTIONS, ProfilingOptions, parse_profiling_options,
                                          render_profiling_options)
    from .dynamic import DynamicProfilerCallback
    from .estimator import NPUEstimator, NPURunConfig, ProfilingConfig, ProfilingHook, adapter_available
    from .profiler import Profiler
    from .sessrun import activate, current_activation, deactivate, profiling_from_config, session_config
    from .tf2 import ProfilerCallback, global_options, open, parse_profile_batch  # noqa: A004 - npu_device's name

# each public name once, by the module that defines it; __all__ is made from these
_ESTIMATOR = ("ProfilingConfig", "adapter_available", "ProfilingHook", "NPURunConfig", "NPUEstimator")
_OPTIONS = ("ADAPTER_DEFAULT_OPTIONS", "ProfilingOptions", "parse_profiling_options", "render_profiling_options")
_PROFILER = ("Profiler",)
_SESSRUN = ("activate", "current_activation", "deactivate", "profiling_from_config", "session_config")
_TF2 = ("global_options", "open", "parse_profile_batch", "ProfilerCallback")
_DYNAMIC = ("DynamicProfilerCallback",)


def __getattr__(name: str) -> Any:
    """The names below, imported on first use: every npuprof command loads this package's plugin
    (:mod:`npuprof.integrations.tensorflow.plugin`), only a TensorFlow program uses the API. Each import is
    written out, not looked up in a table of module names: tests/core/test_core_layers.py reads them, and
    mypy refuses one name bound by several imports."""
    if name in _ESTIMATOR:
        from . import estimator

        return getattr(estimator, name)
    if name in _OPTIONS:
        from ..cann import profiling_options

        return getattr(profiling_options, name)
    if name in _PROFILER:
        from . import profiler

        return getattr(profiler, name)
    if name in _SESSRUN:
        from . import sessrun

        return getattr(sessrun, name)
    if name in _TF2:
        from . import tf2

        return getattr(tf2, name)
    if name in _DYNAMIC:
        from . import dynamic

        return getattr(dynamic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_ESTIMATOR + _OPTIONS + _PROFILER + _SESSRUN + _TF2 + _DYNAMIC)
