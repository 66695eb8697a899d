"""sess.run mode: profile unchanged ``tf.compat.v1.Session`` code.

Ascend's TF Adapter turns profiling on per session through the session
config::

    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["profiling_mode"].b = True
    custom_op.parameter_map["profiling_options"].s = tf.compat.as_bytes('{"output":"/tmp/profiling",...}')

(or, for a whole job, the ``PROFILING_MODE=true`` / ``PROFILING_OPTIONS``
environment variables; the script's setting wins). After :func:`activate`,
every session created with such a config is profiled by npuprof on
whatever TensorFlow runs on here: the config is validated when the session
is created (a bad profiling_options raises ProfilerConfigError naming the
key, before any graph runs), collection starts at the session's first
``run`` call, each ``run`` call is one step, and closing the session stops
collection and (by default) analyses and exports the run directories under
the ``output`` directory of the options.

Example::

    import tensorflow as tf
    from npuprof.integrations import tensorflow as nptf

    nptf.activate()                                    # once, before sessions are created
    config = nptf.session_config('{"output":"/tmp/profiling","task_time":"on"}')
    with tf.compat.v1.Session(config=config) as sess:  # unchanged Ascend code works too
        for _ in range(10):
            sess.run(train_op)
    # /tmp/profiling/<run>/ASCEND_PROFILER_OUTPUT/op_statistic.csv ...
"""
from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from npuprof.errors import ProfilerConfigError

from ..cann.profiling_options import ProfilingOptions, parse_profiling_options

log = logging.getLogger("npuprof")

NPU_OPTIMIZER = "NpuOptimizer"
ENV_MODE = "PROFILING_MODE"
ENV_OPTIONS = "PROFILING_OPTIONS"


# -- ConfigProto helpers ------------------------------------------------------

def _npu_optimizer(config: Any, create: bool = False) -> Any:
    rewrite = config.graph_options.rewrite_options
    for custom in rewrite.custom_optimizers:
        if custom.name == NPU_OPTIMIZER:
            return custom
    if not create:
        return None
    custom = rewrite.custom_optimizers.add()
    custom.name = NPU_OPTIMIZER
    return custom


def session_config(profiling_options: Any = None, config: Any = None, *, enable: bool = True) -> Any:
    """Build (``config=None``) or amend in place a ``tf.compat.v1.ConfigProto``
    for Ascend sess.run-mode profiling, and return it.

    Adds (or reuses) the ``NpuOptimizer`` custom optimizer with
    ``use_off_line`` (unless already set), ``profiling_mode`` = ``enable`` and
    ``profiling_options`` (validated first; None keeps the adapter defaults),
    and turns grappler's ``remapping`` off as the Ascend docs require. On a
    plain TensorFlow the extra custom optimizer is ignored by TF; npuprof's
    :func:`activate` reads it.

    Example::

        >>> cfg = session_config('{"output":"/tmp/prof","training_trace":"on"}')   # doctest: +SKIP
        >>> cfg.graph_options.rewrite_options.custom_optimizers[0].name              # doctest: +SKIP
        'NpuOptimizer'
    """
    if not isinstance(enable, bool):
        raise ProfilerConfigError("enable", enable, "True or False")
    opts = None if profiling_options is None else parse_profiling_options(profiling_options)
    import tensorflow as tf
    from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig

    if config is None:
        config = tf.compat.v1.ConfigProto()
    elif not isinstance(config, tf.compat.v1.ConfigProto):
        raise ProfilerConfigError("config", config, "a tf.compat.v1.ConfigProto or None")
    custom = _npu_optimizer(config, create=True)
    if "use_off_line" not in custom.parameter_map:
        custom.parameter_map["use_off_line"].b = True
    custom.parameter_map["profiling_mode"].b = enable
    if opts is not None:
        custom.parameter_map["profiling_options"].s = opts.text.encode("utf-8")
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    return config


def profiling_from_config(config: Any, environ: Optional[dict] = None) -> Optional[ProfilingOptions]:
    """The validated profiling_options a session config (or the environment) asks for.

    Returns None when profiling is off. The NpuOptimizer ``profiling_mode``
    setting wins over ``PROFILING_MODE``; ``PROFILING_MODE=dynamic`` (attach
    mode) is not supported off-NPU and is reported.

    Example::

        >>> profiling_from_config(None, {"PROFILING_MODE": "true",
        ...     "PROFILING_OPTIONS": '{"output":"/tmp/p","task_time":"on"}'}).get("output")
        '/tmp/p'
    """
    env = os.environ if environ is None else environ
    custom = _npu_optimizer(config) if config is not None else None
    if custom is not None and "profiling_mode" in custom.parameter_map:
        mode = custom.parameter_map["profiling_mode"]
        if mode.WhichOneof("value") != "b":
            raise ProfilerConfigError("profiling_mode", str(mode).strip(), "a bool (parameter_map[...].b = True)")
        if not mode.b:
            return None
        raw = b""
        if "profiling_options" in custom.parameter_map:
            value = custom.parameter_map["profiling_options"]
            if value.WhichOneof("value") not in ("s", None):
                raise ProfilerConfigError("profiling_options", str(value).strip(),
                                          "bytes (parameter_map[...].s = tf.compat.as_bytes(json))")
            raw = value.s
        return parse_profiling_options(raw)
    mode_env = env.get(ENV_MODE, "")
    if mode_env.strip().lower() in ("", "false", "0", "off"):
        return None
    if mode_env.strip().lower() == "dynamic":
        raise ProfilerConfigError(ENV_MODE, mode_env, "'true' or 'false' here",
                                  hint="dynamic (attach) mode needs the Ascend msprof service")
    if mode_env.strip().lower() not in ("true", "1", "on"):
        raise ProfilerConfigError(ENV_MODE, mode_env, "'true', 'false' or 'dynamic'")
    return parse_profiling_options(env.get(ENV_OPTIONS, ""), param=ENV_OPTIONS)


# -- the session patch --------------------------------------------------------

@dataclass
class _Settings:
    schedule: Any = None
    analyse: bool = True
    profiler_kwargs: dict = field(default_factory=dict)


class SessionProfiling:
    """npuprof's collection for one profiled session (created by the patch)."""

    def __init__(self, options: ProfilingOptions, settings: _Settings, registry: "Activation") -> None:
        self.options = options
        self.settings = settings
        self.registry = registry
        self.profiler: Any = None
        self.shared: Any = None  # a job-wide profiler this session steps instead of owning one
        self.runs = 0
        self.disabled = False
        self.finished = False
        self._lock = threading.Lock()

    def before_run(self) -> None:
        if self.disabled or self.finished:
            return
        try:
            if self.shared is not None:
                _step_shared(self.shared)
            elif self.profiler is None:
                self._start()
                if self.shared is not None:
                    _step_shared(self.shared)
            else:
                self.profiler.step()  # the previous run's step ends where this one begins
        except Exception as e:
            self._fail(e)
        self.runs += 1

    def _start(self) -> None:
        other = running_profiler()
        if other is not None and getattr(other, "started", False):
            if getattr(other, "npuprof_steps_from_sessions", False):
                # The launcher's job-wide profiler: profiled sess.run calls are its steps.
                self.shared = other
                return
            # An Estimator hook or a callback already drives a profiler.
            log.info("npuprof: a profiler is already running; this profiled session adds no second one")
            self.disabled = True
            return
        from .profiler import Profiler

        kwargs = dict(self.settings.profiler_kwargs)
        if self.settings.schedule is not None:
            kwargs["schedule"] = self.settings.schedule
        self.profiler = Profiler(profiling_options=self.options, start_profile=False, **kwargs)
        self.registry.profilers.append(self.profiler)
        self.profiler.start()

    def finish(self) -> None:
        """Stop collection (session closed or interpreter exiting) and analyse."""
        with self._lock:
            if self.finished:
                return
            self.finished = True
        prof = self.profiler
        if prof is None:
            return
        try:
            prof.stop()
            if self.settings.analyse and prof.saved_runs:
                prof.analyse()
        except Exception as e:
            self._fail(e)

    def _fail(self, error: BaseException) -> None:
        if not self.disabled:
            log.warning("npuprof: profiling this session failed (%s: %s); the session goes on unprofiled",
                        type(error).__name__, error)
        self.disabled = True


def running_profiler() -> Any:
    """The npuprof Profiler running in this process, or None."""
    from npuprof import profiler as core

    public = getattr(core, "running_profiler", None)
    if callable(public):
        return public()
    ref = getattr(core, "_running", None)  # a Profiler, or a weakref to one in older cores
    if ref is None or isinstance(ref, core.Profiler):
        return ref
    return ref() if callable(ref) else None


def _step_shared(prof: Any) -> None:
    """Step a job-wide profiler before every profiled run but the first of the job."""
    if getattr(prof, "npuprof_session_runs", 0):
        prof.step()
    prof.npuprof_session_runs = getattr(prof, "npuprof_session_runs", 0) + 1


class Activation:
    """Handle returned by :func:`activate`: the profilers it created, and ``deactivate()``."""

    def __init__(self, settings: _Settings) -> None:
        self.settings = settings
        self.profilers: list = []
        self.sessions: "weakref.WeakSet" = weakref.WeakSet()
        self._states: list = []
        self._originals: dict[str, Callable] = {}

    @property
    def active(self) -> bool:
        return bool(self._originals)

    def finish_all(self) -> None:
        for state in list(self._states):
            state.finish()

    def deactivate(self) -> None:
        """Finish every open session's collection and restore tf.Session."""
        self.finish_all()
        if self._originals:
            from tensorflow.python.client import session as tf_session

            for name, fn in self._originals.items():
                setattr(tf_session.BaseSession, name, fn)
            self._originals.clear()
        global _activation
        with _lock:
            if _activation is self:
                _activation = None


_lock = threading.Lock()
_activation: Optional[Activation] = None


def activate(schedule: Any = None, *, analyse: bool = True, **profiler_kwargs: Any) -> Activation:
    """Make profiling-enabled ``tf.compat.v1.Session`` objects collect with npuprof.

    ``schedule`` (an :func:`npuprof.schedule`) picks the profiled session
    runs (default: all of them, as on Ascend); ``analyse`` exports the tables
    when a session closes; other keyword arguments override what the
    profiling_options map to (e.g. ``host_sys=["cpu"]``). Calling it again
    replaces the settings. Returns the :class:`Activation` handle.

    Example::

        handle = activate(schedule=npuprof.schedule(wait=1, active=5, repeat=1))
        ...  # unchanged session code
        print(handle.profilers[0].saved_runs)
    """
    from npuprof.validate import check_bool, check_callable

    check_bool("analyse", analyse)
    check_callable("schedule", schedule)
    settings = _Settings(schedule=schedule, analyse=analyse, profiler_kwargs=dict(profiler_kwargs))
    if profiler_kwargs:
        from npuprof.config import build_config

        # Validate the overrides now rather than at the first sess.run.
        probe = {k: v for k, v in profiler_kwargs.items() if k != "output_path"}
        build_config(**probe)
    global _activation
    with _lock:
        if _activation is not None and _activation.active:
            _activation.settings = settings
            return _activation
        handle = Activation(settings)
        _install(handle)
        _activation = handle
    atexit.register(handle.finish_all)
    return handle


def deactivate() -> None:
    """Undo :func:`activate` (open sessions' collection is finished first)."""
    handle = _activation
    if handle is not None:
        handle.deactivate()


def current_activation() -> Optional[Activation]:
    return _activation


def _install(handle: Activation) -> None:
    from tensorflow.python.client import session as tf_session

    base = tf_session.BaseSession
    orig_init, orig_run, orig_close = base.__init__, base.run, base.close
    handle._originals = {"__init__": orig_init, "run": orig_run, "close": orig_close}

    def __init__(self: Any, target: str = "", graph: Any = None, config: Any = None) -> None:
        # Validate before TF builds anything: a bad profiling_options never reaches the graph.
        try:
            options = profiling_from_config(config)
        except ProfilerConfigError:
            self._session = None  # TF's __del__ expects it on a half-built session
            raise
        orig_init(self, target, graph, config)
        if options is not None and handle.active:
            state = SessionProfiling(options, handle.settings, handle)
            self._npuprof_profiling = state
            handle._states.append(state)
            handle.sessions.add(self)

    def run(self: Any, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        state = getattr(self, "_npuprof_profiling", None)
        if state is not None and not state.disabled:
            state.before_run()
        return orig_run(self, fetches, feed_dict, options, run_metadata)

    def close(self: Any) -> None:
        state = getattr(self, "_npuprof_profiling", None)
        if state is not None:
            state.finish()
        orig_close(self)

    __init__.__wrapped__ = orig_init  # type: ignore[attr-defined]
    run.__wrapped__ = orig_run  # type: ignore[attr-defined]
    close.__wrapped__ = orig_close  # type: ignore[attr-defined]
    base.__init__, base.run, base.close = __init__, run, close
