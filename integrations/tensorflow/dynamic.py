"""Dynamic profiling for Keras ``fit``: a callback on :mod:`npuprof.dynamic_profile`.

Each train batch is one step (0-based over the whole ``fit``, across
epochs); the config file is torch_npu's / npuprof's (``start_step``,
``warmup``, ``active``, ``prof_dir`` ...), read by the same watcher as
``dynamic_profile.init``.

Example::

    from npuprof.integrations.tensorflow import DynamicProfilerCallback

    model.fit(x, y, epochs=100, callbacks=[DynamicProfilerCallback("./dyn_cfg")])
    # later, from a shell:  npuprof dynamic start ./dyn_cfg --start-step 500 --active 3
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from npuprof.dynamic_profile.controller import DynamicController
from npuprof.dynamic_profile.request import TEMPLATE
from npuprof.errors import ProfilerConfigError
from npuprof.types import PathLike
from npuprof.validate import check_number

_callback_cls: Optional[type] = None


def _build() -> type:
    import tensorflow as tf

    class DynamicProfilerCallback(tf.keras.callbacks.Callback):
        """Watch ``config_dir/profiler_config.json`` during ``fit`` and capture the steps it asks for.

        Watching starts when the callback is made (so a config written before
        ``fit`` is seen) and a running capture is saved when ``fit`` ends.
        """

        def __init__(self, config_dir: PathLike, poll_interval: float = 2.0, rank: Optional[int] = None) -> None:
            super().__init__()
            directory = Path(config_dir).expanduser().resolve()
            if directory.exists() and not directory.is_dir():
                raise ProfilerConfigError("config_dir", str(config_dir), "a directory holding profiler_config.json")
            interval = check_number("poll_interval", poll_interval, minimum=0.01)
            self.controller = DynamicController(directory, dialect="npuprof", first_step=0,
                                                poll_interval=interval, rank=rank, template=TEMPLATE)
            self.controller.start_watching()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.controller.step()

        def on_train_end(self, logs: Any = None) -> None:
            self.controller.close()

    return DynamicProfilerCallback


def get_dynamic_callback_class() -> type:
    """The Keras DynamicProfilerCallback class (built on first use; imports TensorFlow)."""
    global _callback_cls
    if _callback_cls is None:
        cls = _build()
        cls.__module__ = __name__
        _callback_cls = cls
    return _callback_cls


def __getattr__(name: str) -> Any:
    if name == "DynamicProfilerCallback":
        return get_dynamic_callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
