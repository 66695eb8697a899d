"""The npuprof Profiler with TensorFlow defaults and ``profiling_options`` support.

:class:`Profiler` is :class:`npuprof.Profiler` with ``framework="tf"`` and an
extra keyword ``profiling_options`` (the Ascend JSON string), whose keys give
the defaults of the other arguments; explicit keyword arguments win. It is
the object every TensorFlow entry point (hook, callback, session patch,
``open()``) builds.

Example::

    import tensorflow as tf
    from npuprof import schedule
    from npuprof.integrations.tensorflow import Profiler

    @tf.function
    def train_step(x): ...

    with Profiler(output_path="./prof", schedule=schedule(wait=1, active=2, repeat=2)) as prof:
        for x in data:
            train_step(x)
            prof.step()
"""
from __future__ import annotations

import logging
from typing import Any, Mapping, Optional, Union

from npuprof.errors import ProfilerConfigError
from npuprof.profiler import Profiler as _CoreProfiler
from npuprof.validate import check_bool
from npuprof.types import PathLike

from ..cann.profiling_options import ProfilingOptions, parse_profiling_options

log = logging.getLogger("npuprof")


def profiler_kwargs(profiling_options: Any = None, **kwargs: Any) -> tuple[dict, Optional[ProfilingOptions]]:
    """Merge profiling_options (if given) with explicit Profiler keyword arguments.

    Returns the keyword arguments and the parsed options (None when no
    profiling_options were given). ``framework`` defaults to ``"tf"``.
    """
    opts = None
    merged: dict[str, Any] = {"framework": "tf"}
    if profiling_options is not None:
        opts = profiling_options if isinstance(profiling_options, ProfilingOptions) \
            else parse_profiling_options(profiling_options)
        merged.update(opts.to_config_kwargs())
    merged.update({k: v for k, v in kwargs.items()})
    return merged, opts


class Profiler(_CoreProfiler):
    """:class:`npuprof.Profiler` for TensorFlow (see module doc).

    ``profiling_options`` may be a JSON string, bytes, a dict or a parsed
    :class:`~npuprof.integrations.cann.profiling_options.ProfilingOptions`.

    Example::

        >>> prof = Profiler(profiling_options='{"output":"/tmp/p","task_time":"l0"}',
        ...                 start_profile=False)                     # doctest: +SKIP
        >>> prof.config.profiler_level                                # doctest: +SKIP
        <ProfilerLevel.Level0: 'Level0'>
    """

    def __init__(self, output_path: Optional[PathLike] = None, *,
                 profiling_options: Optional[Union[str, Mapping[str, Any], ProfilingOptions]] = None,
                 **kwargs: Any) -> None:
        if output_path is not None:
            kwargs["output_path"] = output_path
        merged, opts = profiler_kwargs(profiling_options, **kwargs)
        start = check_bool("start_profile", merged.pop("start_profile", True))
        super().__init__(start_profile=False, **merged)
        self.profiling_options = opts
        self.config = self.config.replace(start_profile=start)
        if opts is not None:
            self.config = self.config.replace(extra=tuple(self.config.extra) + opts.extra())
        if start:
            self.start()


class ProfilerDriver:
    """What the Estimator ``ProfilingHook`` and the Keras ``ProfilerCallback``
    share: the profilers they made, finishing a window, and stepping aside
    (one warning, training goes on) when profiling fails.

    Subclasses set ``options``, ``kwargs`` (validated Profiler arguments),
    ``analyse``, ``profiler`` (the current one or None), ``profilers`` and a
    ``label`` for warnings.
    """

    label = "npuprof"
    options: Optional[ProfilingOptions]
    kwargs: dict
    analyse: bool
    profiler: Any
    profilers: list

    def _init_driver(self, profiling_options: Any, analyse: Any, kwargs: dict) -> None:
        self.analyse = check_bool("analyse", analyse)
        self.kwargs, self.options = profiler_kwargs(profiling_options, **kwargs)
        from npuprof.config import build_config

        build_config(**self.kwargs)  # every bad argument raises here, before training starts
        self.profiler = None
        self.profilers = []

    def _new_profiler(self, schedule: Any) -> "Profiler":
        prof = Profiler(profiling_options=self.options, schedule=schedule, start_profile=False,
                        **{k: v for k, v in self.kwargs.items() if k != "framework"})
        self.profilers.append(prof)
        prof.start()
        return prof

    def _guard(self, fn: Any) -> None:
        """Run ``fn``; a failure stops profiling quietly (a bad setting still raises)."""
        try:
            fn()
        except ProfilerConfigError:
            raise
        except Exception as e:
            log.warning("npuprof: %s failed (%s: %s); training goes on unprofiled", self.label,
                        type(e).__name__, e)
            prof, self.profiler = self.profiler, None
            if prof is not None:
                try:
                    prof.stop()
                except Exception:
                    pass

    def _finish(self) -> None:
        """Stop the current window and analyse it when asked."""
        prof, self.profiler = self.profiler, None
        if prof is None:
            return

        def done() -> None:
            prof.stop()
            if self.analyse and prof.saved_runs:
                prof.analyse()
        self._guard(done)

    @property
    def saved_runs(self) -> list:
        """Run directories of every window saved so far (all sessions / fits)."""
        return [r for p in self.profilers for r in p.saved_runs]

    @property
    def results(self) -> list:
        """AnalysisResults of the analysed windows."""
        return [r for p in self.profilers for r in p.results]
