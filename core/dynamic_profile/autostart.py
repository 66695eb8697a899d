"""Dynamic profiling without code changes: ``NPUPROF_CONFIG_PATH=<dir> python train.py``.

How it gets in: ``npuprof dynamic hook install`` (run by ``make demo`` /
``make test`` for their venv) puts one line, ``npuprof-dynamic.pth``, in the
interpreter's site-packages. Python runs it at every start-up; it does
nothing unless ``NPUPROF_CONFIG_PATH`` is set, and then calls :func:`install`,
which wraps the framework's own step as the framework is imported:

* MindSpore ``Model.train``: a callback whose step end is a dynamic step;
* Keras 3 ``Model.fit`` (TensorFlow backend): the same as a Keras callback;
* TensorFlow 1 ``MonitoredSession.run`` (``MonitoredTrainingSession``,
  ``SingularMonitoredSession``): each call is a step.

The config directory is watched from the first hooked step on, with the
npuprof/torch_npu JSON (:mod:`npuprof.dynamic_profile`), every
``NPUPROF_POLL_INTERVAL`` seconds (default 2). What cannot be
hooked: plain ``Session.run`` (init, eval and train calls look alike),
custom MindSpore/TF2 loops and pyACL apps (no framework step exists: call
``dynamic_profile.step()``).

Example::

    $ npuprof dynamic hook install
    $ NPUPROF_CONFIG_PATH=./dyn_cfg python train.py &
    $ npuprof dynamic start ./dyn_cfg --start-step 100 --active 2
"""
from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import logging
import os
import sys
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Optional, Sequence

from . import active_controller, init, step

log = logging.getLogger("npuprof")

ENV_VAR = "NPUPROF_CONFIG_PATH"
POLL_ENV_VAR = "NPUPROF_POLL_INTERVAL"     # seconds between looks at the file (default 2)
PTH_NAME = "npuprof-dynamic.pth"
PTH_LINE = (f"import os; os.environ.get({ENV_VAR!r}) and "
            "__import__('npuprof.dynamic_profile.autostart').dynamic_profile.autostart.install()\n")


def _step_hooked() -> None:
    """One framework step ended: watch from the first one on."""
    global _gave_up
    if active_controller() is None:
        if _gave_up:
            return
        try:
            init(os.environ[ENV_VAR], poll_interval=float(os.environ.get(POLL_ENV_VAR) or 2.0))
        except Exception as e:   # a bad directory must not stop the training: say it once, stop trying
            _gave_up = True
            _warn_once(f"npuprof: {ENV_VAR}={os.environ.get(ENV_VAR)!r} cannot be watched: {e}")
            return
    step()


_warned: set = set()
_gave_up = False


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


def _with_callback(args: tuple, kwargs: dict, position: int, callback: Any, as_list: bool = True) -> tuple:
    """Append ``callback`` to the ``callbacks`` argument given by keyword or at ``position``."""
    if "callbacks" in kwargs or len(args) <= position:
        given = kwargs.get("callbacks")
        kwargs = dict(kwargs, callbacks=_append(given, callback))
        return args, kwargs
    args = args[:position] + (_append(args[position], callback),) + args[position + 1:]
    return args, kwargs


def _append(given: Any, callback: Any) -> list:
    if given is None:
        return [callback]
    if isinstance(given, (list, tuple)):
        return list(given) + [callback]
    return [given, callback]


def _add_step_callback(cls: type, method: str, position: int, callback_class: Callable[[], type]) -> None:
    """Wrap ``cls.method`` (``Model.train``, ``fit``) so that each call gets one more callback, an
    instance of ``callback_class()``, whose step end is a dynamic step. ``callbacks`` is the
    method's argument at ``position`` (after self) or its keyword."""
    original = getattr(cls, method)

    @functools.wraps(original)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = _with_callback(args, kwargs, position, callback_class()())
        return original(self, *args, **kwargs)

    setattr(cls, method, wrapped)


@functools.lru_cache(maxsize=None)
def _mindspore_step_callback() -> type:
    from mindspore.train import Callback

    class _DynamicStep(Callback):
        def on_train_step_end(self, run_context: Any) -> None:
            _step_hooked()

    return _DynamicStep


@functools.lru_cache(maxsize=None)
def _keras_step_callback() -> type:
    import keras     # at fit time: when the hook runs, keras itself is still being imported

    class _DynamicStep(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            _step_hooked()

    return _DynamicStep


def _patch_mindspore(module: ModuleType) -> None:
    _add_step_callback(module.Model, "train", 2, _mindspore_step_callback)


def _patch_keras(module: ModuleType) -> None:
    _add_step_callback(module.TensorFlowTrainer, "fit", 5, _keras_step_callback)


def _patch_monitored_session(module: ModuleType) -> None:
    original = module._MonitoredSession.run

    @functools.wraps(original)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        finally:
            _step_hooked()

    module._MonitoredSession.run = run


# module imported -> what to wrap in it
TARGETS: dict[str, Callable[[ModuleType], None]] = {
    "mindspore.train.model": _patch_mindspore,
    "keras.src.backend.tensorflow.trainer": _patch_keras,
    "tensorflow.python.training.monitored_session": _patch_monitored_session,
}


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of the target modules to patch them once loaded."""

    def find_spec(self, name: str, path: Optional[Sequence[str]] = None, target: Any = None) -> Any:
        patch = TARGETS.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _PatchingLoader(spec.loader, patch)
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, patch: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _apply(module.__name__, self._patch, module)


def _apply(name: str, patch: Callable[[ModuleType], None], module: ModuleType) -> None:
    try:
        patch(module)
    except Exception as e:   # a framework version whose layout differs: say so, never break the import
        _warn_once(f"npuprof: {ENV_VAR}: cannot hook {name} ({type(e).__name__}: {e}); "
                   "call npuprof.dynamic_profile.step() in the training loop instead")


_installed = False


def install() -> bool:
    """Hook the frameworks' steps when ``NPUPROF_CONFIG_PATH`` is set (idempotent); True if hooked."""
    global _installed
    if not os.environ.get(ENV_VAR):
        return False
    if not _installed:
        _installed = True
        sys.meta_path.insert(0, _PatchOnImport())
        for name, patch in TARGETS.items():    # imported before the hook: patch now
            if name in sys.modules:
                _apply(name, patch, sys.modules[name])
    return True


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def install_hook(site_dir: Optional[Path] = None) -> Path:
    """Write ``npuprof-dynamic.pth`` into site-packages (``npuprof dynamic hook install``)."""
    path = (site_dir or site_packages()) / PTH_NAME
    path.write_text(PTH_LINE)
    return path


def remove_hook(site_dir: Optional[Path] = None) -> Optional[Path]:
    """Remove it again; returns the removed path or None."""
    path = (site_dir or site_packages()) / PTH_NAME
    if path.exists():
        path.unlink()
        return path
    return None
