"""Estimator mode with the names TF Adapter users type.

``ProfilingConfig``, ``NPURunConfig`` and ``NPUEstimator`` take the same
arguments as ``npu_bridge.estimator.npu.npu_config`` / ``npu_estimator``, so
a script ports by changing one import; :class:`ProfilingHook` is the
``SessionRunHook`` they use, also usable on its own with a plain
``tf.estimator.Estimator`` or ``tf.compat.v1.train.MonitoredTrainingSession``.

Differences from the adapter: profiling_options are validated when the
``ProfilingConfig`` is built (ProfilerConfigError naming the key), and
collection is done by npuprof on whatever TensorFlow runs on. When the Ascend
TF Adapter (``npu_bridge``) is importable, ``NPURunConfig`` also writes the
NpuOptimizer ``profiling_mode``/``profiling_options`` parameters into the
session config, so the Ascend stack collects its device data as well.

``tf.estimator`` exists up to TF 2.15 (with tensorflow-estimator);
``ProfilingHook`` needs only ``tf.compat.v1.train.SessionRunHook`` and works on
TF 2.21 too. The classes that subclass TensorFlow types are created on first
access, so importing this module never imports TensorFlow.

Example::

    from npuprof.integrations.tensorflow import NPURunConfig, ProfilingConfig, NPUEstimator

    profiling_options = '{"output":"/tmp/profiling","training_trace":"on","task_trace":"on",' \\
                        '"fp_point":"","bp_point":"","aic_metrics":"PipeUtilization"}'
    profiling_config = ProfilingConfig(enable_profiling=True, profiling_options=profiling_options)
    config = NPURunConfig(profiling_config=profiling_config, session_config=tf.compat.v1.ConfigProto())
    est = NPUEstimator(model_fn=model_fn, config=config)
    est.train(input_fn, max_steps=20)
"""
from __future__ import annotations

import importlib.util
import inspect
import logging
import threading
from typing import Any, Mapping, Optional, Union

from npuprof.errors import ProfilerConfigError
from npuprof.validate import check_bool, check_callable
from npuprof.types import ScheduleFn

from ..cann.profiling_options import ProfilingOptions, parse_profiling_options
from .profiler import ProfilerDriver

log = logging.getLogger("npuprof")

#: NPURunConfig arguments that only the Ascend TF Adapter acts on. Accepted and
#: kept in ``npu_options`` so that ported scripts run unchanged.
NPU_ONLY_ARGS = (
    "iterations_per_loop", "enable_data_pre_proc", "precision_mode", "enable_reduce_precision",
    "variable_format_optimize", "mix_compile_mode", "hcom_parallel", "graph_memory_max_size",
    "variable_memory_max_size", "auto_tune_mode", "dump_config", "stream_max_parallel_num",
    "is_tailing_optimization", "horovod_mode", "graph_run_mode", "op_debug_level", "enable_scope_fusion_passes",
    "enable_exception_dump", "op_select_implmode", "optypelist_for_implmode", "dynamic_input_config",
    "aoe_mode", "work_path", "buffer_optimize", "enable_small_channel", "fusion_switch_file",
    "enable_compress_weight", "compress_weight_conf", "op_compiler_cache_mode", "op_compiler_cache_dir",
    "debug_dir", "hcom_multi_mode", "dynamic_input", "dynamic_graph_execute_mode",
    "dynamic_inputs_shape_range", "train_distribute", "eval_distribute", "local_rank_id", "local_device_list",
    "session_device_id", "distribute_config", "modify_mixlist", "op_precision_mode", "device_type",
    "soc_config", "hccl_timeout", "op_wait_timeout", "op_execute_timeout", "HCCL_algorithm",
    "customize_dtypes", "op_debug_config", "memory_config", "experimental_config", "topo_sorting_mode",
    "aoe_config_file", "insert_op_file", "stream_sync_timeout", "event_sync_timeout",
    "external_weight", "jit_compile", "graph_parallel_option_path", "enable_graph_parallel",
    "atomic_clean_policy", "static_memory_policy", "graph_slice", "job_start_file", "distribute",
)


class ProfilingConfig:
    """Profiling settings of an :class:`NPURunConfig` (TF Adapter names).

    ``enable_profiling`` turns collection on; ``profiling_options`` is the
    Ascend JSON string (None or "" = the adapter defaults). Validated here.
    npuprof extension: ``schedule`` (keyword-only) picks the profiled global
    steps.

    Example::

        >>> cfg = ProfilingConfig(enable_profiling=True, profiling_options='{"output":"/tmp/p"}')
        >>> cfg.options.get("output")
        '/tmp/p'
    """

    def __init__(self, enable_profiling: bool = False, profiling_options: Optional[str] = None, *,
                 schedule: Any = None) -> None:
        self.enable_profiling = check_bool("enable_profiling", enable_profiling)
        self.profiling_options = profiling_options
        self.schedule = check_callable("schedule", schedule)
        self.options: Optional[ProfilingOptions] = None
        if enable_profiling or profiling_options not in (None, ""):
            self.options = parse_profiling_options(profiling_options)

    def __repr__(self) -> str:
        return f"ProfilingConfig(enable_profiling={self.enable_profiling!r}, " \
               f"profiling_options={self.profiling_options!r})"


def adapter_available() -> bool:
    """True when the Ascend TF Adapter (npu_bridge) can be imported."""
    try:
        return importlib.util.find_spec("npu_bridge") is not None
    except (ImportError, ValueError):
        return False


class _OffsetSchedule:
    """A schedule evaluated at ``offset + step`` (global step at session start + runs)."""

    def __init__(self, schedule: Any, offset: int) -> None:
        self.schedule = schedule
        self.offset = offset

    def __call__(self, step: int) -> Any:
        return self.schedule(self.offset + step)

    def to_dict(self) -> dict:
        base = self.schedule.to_dict() if hasattr(self.schedule, "to_dict") else {"schedule": repr(self.schedule)}
        return {**base, "global_step_offset": self.offset}


class _ProfilingHookMixin(ProfilerDriver):
    """The body of ProfilingHook (mixed into tf's SessionRunHook on first use)."""

    label = "ProfilingHook"

    def __init__(self, profiling_options: Optional[Union[str, Mapping[str, Any], ProfilingOptions]] = None, *,
                 schedule: Optional[ScheduleFn] = None, analyse: bool = True, **kwargs: Any) -> None:
        self.schedule = check_callable("schedule", schedule)
        self._init_driver(profiling_options, analyse, kwargs)
        self._global_step = None
        self._runs = 0

    # SessionRunHook interface ------------------------------------------------
    def begin(self) -> None:
        import tensorflow as tf

        self._global_step = tf.compat.v1.train.get_global_step()
        self._runs = 0

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self.profiler is not None and getattr(self.profiler, "started", False):
            return  # MonitoredSession re-created its session after an error: keep the window
        offset = 0
        if self._global_step is not None:
            try:
                offset = int(session.run(self._global_step))
            except Exception as e:  # an uninitialised global step is not worth failing training for
                log.info("npuprof: could not read the global step (%s); counting from 0", e)
        sched = None if self.schedule is None else _OffsetSchedule(self.schedule, offset)
        self._guard(lambda: setattr(self, "profiler", self._new_profiler(sched)))

    def before_run(self, run_context: Any) -> None:
        prof = self.profiler
        if prof is not None and self._runs > 0:
            self._guard(prof.step)  # the previous run's step ends where this one begins
        self._runs += 1
        return None

    def end(self, session: Any) -> None:
        self._finish()


_classes: dict[str, type] = {}
_classes_lock = threading.Lock()


def _estimator_module() -> Any:
    import tensorflow as tf

    est = getattr(tf, "estimator", None) or getattr(tf.compat.v1, "estimator", None)
    if est is None:
        raise ImportError(f"tf.estimator is not available in TensorFlow {tf.__version__} (removed in 2.16); "
                          "use TensorFlow <= 2.15 with tensorflow-estimator, or ProfilingHook with "
                          "tf.compat.v1.train.MonitoredTrainingSession")
    return est


def _build_profiling_hook() -> type:
    import tensorflow as tf

    class ProfilingHook(_ProfilingHookMixin, tf.compat.v1.train.SessionRunHook):
        """A ``SessionRunHook`` that profiles with npuprof, its schedule driven by the global step.

        ``profiling_options`` (Ascend JSON) and/or npuprof Profiler keyword
        arguments (``output_path``, ``host_sys``...) give the settings;
        ``schedule`` is evaluated at (global step when the session was
        created + number of ``run`` calls since). Each ``run`` call is one
        step. ``end()`` stops collection and, with ``analyse=True``, exports
        the tables. ``saved_runs`` lists the run directories.

        Example::

            hook = ProfilingHook('{"output":"/tmp/prof"}', schedule=npuprof.schedule(wait=5, active=3, repeat=1))
            with tf.compat.v1.train.MonitoredTrainingSession(hooks=[hook]) as sess:
                while not sess.should_stop():
                    sess.run(train_op)
        """

    return ProfilingHook


def _build_run_config() -> type:
    est = _estimator_module()
    run_config_args = set(inspect.signature(est.RunConfig.__init__).parameters) - {"self"}

    class NPURunConfig(est.RunConfig):  # type: ignore[name-defined]  # built once TF is imported
        """``tf.estimator.RunConfig`` plus ``profiling_config`` (TF Adapter signature).

        RunConfig arguments go to RunConfig; Ascend-only arguments
        (``iterations_per_loop``, ``precision_mode``, ... see
        :data:`NPU_ONLY_ARGS`) are accepted and kept in ``npu_options``; they
        act only on an Ascend TF Adapter.

        Example::

            config = NPURunConfig(profiling_config=ProfilingConfig(True, '{"output":"/tmp/p"}'),
                                  model_dir="/tmp/model", save_checkpoints_steps=100)
        """

        def __init__(self, profiling_config: Optional[ProfilingConfig] = None, **kwargs: Any) -> None:
            if profiling_config is not None and not isinstance(profiling_config, ProfilingConfig):
                raise ProfilerConfigError("profiling_config", profiling_config, "a ProfilingConfig or None")
            npu_options = {}
            for key in list(kwargs):
                if key in run_config_args:
                    continue
                if key in NPU_ONLY_ARGS:
                    npu_options[key] = kwargs.pop(key)
                else:
                    raise TypeError(f"NPURunConfig() got an unexpected keyword argument {key!r}")
            if profiling_config is not None and profiling_config.enable_profiling and adapter_available():
                from .sessrun import session_config

                kwargs["session_config"] = session_config(profiling_config.options, kwargs.get("session_config"))
            super().__init__(**kwargs)
            self._profiling_config = profiling_config
            self._npu_options = npu_options
            if npu_options and not adapter_available():
                log.info("npuprof: NPURunConfig arguments %s act only on an Ascend TF Adapter",
                         ", ".join(sorted(npu_options)))

        @property
        def profiling_config(self) -> Optional[ProfilingConfig]:
            return self._profiling_config

        @property
        def npu_options(self) -> dict:
            return dict(self._npu_options)

        @property
        def iterations_per_loop(self) -> int:
            return int(self._npu_options.get("iterations_per_loop", 1))

    return NPURunConfig


def _build_estimator() -> type:
    est = _estimator_module()
    run_config_cls = get_class("NPURunConfig")
    hook_cls = get_class("ProfilingHook")

    class NPUEstimator(est.Estimator):  # type: ignore[name-defined]  # built once TF is imported
        """``tf.estimator.Estimator`` that profiles train/evaluate/predict when
        its ``NPURunConfig`` has ``profiling_config.enable_profiling``.

        Each call gets a fresh :class:`ProfilingHook`; ``profiling_hooks``
        keeps them (their ``saved_runs``/``results``).

        Example::

            est = NPUEstimator(model_fn, config=NPURunConfig(profiling_config=ProfilingConfig(True, opts)))
            est.train(input_fn, max_steps=10)
            print(est.profiling_hooks[-1].saved_runs)
        """

        def __init__(self, model_fn: Any, model_dir: Any = None, config: Any = None, params: Any = None,
                     job_start_file: str = "", warm_start_from: Any = None) -> None:
            if config is None:
                config = run_config_cls()
            elif not isinstance(config, est.RunConfig):
                raise ProfilerConfigError("config", config, "an NPURunConfig (or tf.estimator.RunConfig)")
            super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, params=params,
                             warm_start_from=warm_start_from)
            self.job_start_file = job_start_file
            self.profiling_hooks: list = []

        def _assert_members_are_not_overridden(self) -> None:
            # Estimator forbids overriding its public methods and documents this
            # method as the way out (TPUEstimator and TF Adapter's NPUEstimator use it);
            # only the three methods below are allowed to differ.
            own = {"train", "evaluate", "predict"}
            for name in dir(est.Estimator):
                if name.startswith("_") or name in own:
                    continue
                if getattr(type(self), name, None) is not getattr(est.Estimator, name, None):
                    raise ValueError(f"Subclasses of NPUEstimator cannot override {name!r}")

        def _profiling_hooks(self, hooks: Any) -> list:
            hooks = list(hooks or [])
            pcfg = getattr(self.config, "profiling_config", None)
            if pcfg is not None and pcfg.enable_profiling:
                hook = hook_cls(pcfg.options, schedule=pcfg.schedule)
                self.profiling_hooks.append(hook)
                hooks.append(hook)
            return hooks

        def train(self, input_fn: Any, hooks: Any = None, steps: Any = None, max_steps: Any = None,
                  saving_listeners: Any = None) -> Any:
            return super().train(input_fn, hooks=self._profiling_hooks(hooks), steps=steps, max_steps=max_steps,
                                 saving_listeners=saving_listeners)

        def evaluate(self, input_fn: Any, steps: Any = None, hooks: Any = None, checkpoint_path: Any = None,
                     name: Any = None) -> Any:
            return super().evaluate(input_fn, steps=steps, hooks=self._profiling_hooks(hooks),
                                    checkpoint_path=checkpoint_path, name=name)

        def predict(self, input_fn: Any, predict_keys: Any = None, hooks: Any = None, checkpoint_path: Any = None,
                    yield_single_examples: bool = True) -> Any:
            return super().predict(input_fn, predict_keys=predict_keys, hooks=self._profiling_hooks(hooks),
                                   checkpoint_path=checkpoint_path, yield_single_examples=yield_single_examples)

    return NPUEstimator


_BUILDERS = {"ProfilingHook": _build_profiling_hook, "NPURunConfig": _build_run_config,
             "NPUEstimator": _build_estimator}


def get_class(name: str) -> type:
    """The TensorFlow-derived class ``name`` (built on first use; imports TensorFlow)."""
    with _classes_lock:
        cls = _classes.get(name)
    if cls is None:
        cls = _BUILDERS[name]()
        cls.__module__ = __name__
        with _classes_lock:
            cls = _classes.setdefault(name, cls)
    return cls


def __getattr__(name: str) -> Any:
    if name in _BUILDERS:
        return get_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
