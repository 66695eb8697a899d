"""TF 2.x entry points: ``global_options()``/``open()`` as in ``npu_device``,
and the Keras callback :class:`ProfilerCallback`.

``npu_device`` users write::

    npu_device.global_options().profiling_config.enable_profiling = True
    npu_device.global_options().profiling_config.profiling_options = '{"output":"/home/profiling", ...}'
    npu_device.open().as_default()

The same lines work with ``from npuprof.integrations import tensorflow as npu_device``:
the options are validated when assigned (and again at ``open()``), and
``open()`` starts an npuprof profiler covering the rest of the job (stopped
and analysed by ``handle.close()`` or at interpreter exit).

Example (Keras)::

    model.fit(x, y, epochs=2, callbacks=[ProfilerCallback(profile_batch=(2, 4), output_path="./prof")])
"""
from __future__ import annotations

import atexit
import logging
import threading
from typing import Any, Mapping, Optional, Union

from npuprof.errors import ProfilerConfigError
from npuprof.validate import check_bool, check_callable
from npuprof.types import ScheduleFn

from ..cann.profiling_options import ADAPTER_DEFAULT_OPTIONS, ProfilingOptions, parse_profiling_options
from .profiler import ProfilerDriver

log = logging.getLogger("npuprof")


class NpuProfilingConfig:
    """``global_options().profiling_config``: ``enable_profiling`` and ``profiling_options``.

    Assignments are checked at once: a non-bool ``enable_profiling``, an
    invalid ``profiling_options`` or an unknown attribute raise
    ProfilerConfigError.
    """

    _OPTIONS = ("enable_profiling", "profiling_options")

    def __init__(self) -> None:
        object.__setattr__(self, "enable_profiling", False)
        object.__setattr__(self, "profiling_options", ADAPTER_DEFAULT_OPTIONS)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "enable_profiling":
            check_bool("enable_profiling", value)
        elif name == "profiling_options":
            if not isinstance(value, str):
                raise ProfilerConfigError("profiling_options", value, "a JSON string")
            parse_profiling_options(value)
        else:
            raise ProfilerConfigError(name, value, "one of " + ", ".join(self._OPTIONS),
                                      hint=f"NpuProfilingConfig has no option {name}")
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"NpuProfilingConfig(enable_profiling={getattr(self, 'enable_profiling', None)!r}, " \
               f"profiling_options={getattr(self, 'profiling_options', None)!r})"


class NpuGlobalOptions:
    """``global_options()``: ``profiling_config`` is modelled; other npu_device
    options (precision_mode, ...) are accepted and stored, and act only on an
    Ascend TF Adapter."""

    def __init__(self) -> None:
        object.__setattr__(self, "profiling_config", NpuProfilingConfig())
        object.__setattr__(self, "other_options", {})

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "profiling_config":
            raise ProfilerConfigError(name, value, "its attributes set one by one "
                                                   "(global_options().profiling_config.enable_profiling = True)")
        self.other_options[name] = value

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["other_options"][name]
        except KeyError:
            raise AttributeError(name) from None


_global: Optional[NpuGlobalOptions] = None
_global_lock = threading.Lock()


def global_options() -> NpuGlobalOptions:
    """The process-wide options object (as ``npu_device.global_options()``).

    Example::

        >>> global_options().profiling_config.enable_profiling = True
        >>> global_options().profiling_config.enable_profiling
        True
        >>> global_options().profiling_config.enable_profiling = False
    """
    global _global
    with _global_lock:
        if _global is None:
            _global = NpuGlobalOptions()
        return _global


class DeviceHandle:
    """What :func:`open` returns; ``as_default()`` returns it, ``close()`` ends profiling."""

    def __init__(self, device_id: int, profiler: Any, analyse: bool) -> None:
        self.device_id = device_id
        self.profiler = profiler
        self.analyse = analyse
        self._closed = False
        self._lock = threading.Lock()

    def as_default(self) -> "DeviceHandle":
        return self

    def close(self) -> list:
        """Stop the job-wide profiler (if any) and analyse; returns the AnalysisResults."""
        with self._lock:
            if self._closed or self.profiler is None:
                return []
            self._closed = True
        try:
            self.profiler.stop()
            if self.analyse and self.profiler.saved_runs:
                return self.profiler.analyse()
        except Exception as e:
            log.warning("npuprof: finishing the profile failed (%s: %s)", type(e).__name__, e)
        return []


def open(device_id: int = 0, *, analyse: bool = True, **kwargs: Any) -> DeviceHandle:  # noqa: A001
    """Start profiling per ``global_options().profiling_config`` (as ``npu_device.open()``).

    With ``enable_profiling`` False this only returns a handle. Otherwise an
    npuprof Profiler starts now and records until ``handle.close()`` or exit;
    ``kwargs`` override Profiler arguments (e.g. ``schedule``). Call
    ``handle.profiler.step()`` per training step to get step rows.

    Example::

        global_options().profiling_config.enable_profiling = True
        global_options().profiling_config.profiling_options = '{"output":"/tmp/prof"}'
        handle = open().as_default()
        train()
        handle.close()
    """
    from npuprof.validate import check_int

    check_int("device_id", device_id, minimum=0)
    check_bool("analyse", analyse)
    pcfg = global_options().profiling_config
    if not pcfg.enable_profiling:
        return DeviceHandle(device_id, None, analyse)
    from .profiler import Profiler

    prof = Profiler(profiling_options=pcfg.profiling_options, **kwargs)
    handle = DeviceHandle(device_id, prof, analyse)
    atexit.register(handle.close)
    return handle


# -- Keras -------------------------------------------------------------------

def parse_profile_batch(value: Any) -> Optional[tuple[int, int]]:
    """Keras' ``profile_batch``: N, (start, stop), [start, stop] or "start,stop"; 0/None = off.

    Example::

        >>> parse_profile_batch("2,4"), parse_profile_batch(3), parse_profile_batch(0)
        ((2, 4), (3, 3), None)
    """
    allowed = "a batch number >= 1, (start, stop) with 1 <= start <= stop, 'start,stop', or 0 to disable"
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value == 0):
        return None
    if isinstance(value, str):
        parts = value.split(",")
        try:
            nums = [int(p) for p in parts]
        except ValueError:
            raise ProfilerConfigError("profile_batch", value, allowed) from None
        value = nums[0] if len(nums) == 1 else tuple(nums)
    if isinstance(value, int) and not isinstance(value, bool):
        start = stop = value
    elif isinstance(value, (tuple, list)) and len(value) == 2 and \
            all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        start, stop = value
    else:
        raise ProfilerConfigError("profile_batch", value, allowed)
    if start < 1 or stop < start:
        raise ProfilerConfigError("profile_batch", value, allowed)
    return start, stop


class _CallbackMixin(ProfilerDriver):
    """Body of ProfilerCallback (mixed into keras' Callback on first use)."""

    label = "ProfilerCallback"

    def __init__(self, profile_batch: Optional[Union[int, str, tuple[int, int]]] = None, *,
                 schedule: Optional[ScheduleFn] = None,
                 profiling_options: Optional[Union[str, Mapping[str, Any], ProfilingOptions]] = None,
                 analyse: bool = True, **kwargs: Any) -> None:
        super().__init__()
        self.profile_batch = parse_profile_batch(profile_batch)
        self.schedule = check_callable("schedule", schedule)
        if self.profile_batch is not None and schedule is not None:
            raise ProfilerConfigError("schedule", schedule, "None when profile_batch is given (pick one)")
        self._init_driver(profiling_options, analyse, kwargs)  # bad arguments raise now, not during fit()
        self._batch = 0

    def on_train_begin(self, logs: Any = None) -> None:
        self._batch = 0
        if self.profile_batch is None:
            self._guard(lambda: setattr(self, "profiler", self._new_profiler(self.schedule)))

    def on_train_batch_begin(self, batch: Any, logs: Any = None) -> None:
        self._batch += 1
        if self.profile_batch is not None and self.profiler is None and self._batch == self.profile_batch[0]:
            self._guard(lambda: setattr(self, "profiler", self._new_profiler(None)))

    def on_train_batch_end(self, batch: Any, logs: Any = None) -> None:
        prof = self.profiler
        if prof is None:
            return
        if self.profile_batch is not None and self._batch >= self.profile_batch[1]:
            self._finish()
        else:
            self._guard(prof.step)

    def on_train_end(self, logs: Any = None) -> None:
        self._finish()


_callback_cls: Optional[type] = None


def _build_callback() -> type:
    import tensorflow as tf

    class ProfilerCallback(_CallbackMixin, tf.keras.callbacks.Callback):
        """Keras callback profiling ``fit`` with npuprof.

        Either ``profile_batch`` as in Keras' TensorBoard callback (N,
        ``(start, stop)`` or ``"start,stop"``, 1-based over all train batches,
        both ends inclusive: one window) or an npuprof ``schedule`` (evaluated
        at the batch count from the start of ``fit``; several windows). Other
        keyword arguments: ``profiling_options`` (Ascend JSON) and npuprof
        Profiler arguments (``output_path``, ``host_sys``, ...). With
        ``analyse=True`` tables are exported when a window ends.
        ``steps_per_execution > 1`` makes one callback batch cover several steps.

        Example::

            cb = ProfilerCallback(schedule=npuprof.schedule(wait=1, active=2, repeat=1), output_path="./prof")
            model.fit(x, y, epochs=1, callbacks=[cb])
            print(cb.saved_runs)
        """

    return ProfilerCallback


def get_callback_class() -> type:
    """The Keras ProfilerCallback class (built on first use; imports TensorFlow)."""
    global _callback_cls
    if _callback_cls is None:
        cls = _build_callback()
        cls.__module__ = __name__
        _callback_cls = cls
    return _callback_cls


def __getattr__(name: str) -> Any:
    if name == "ProfilerCallback":
        return get_callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
