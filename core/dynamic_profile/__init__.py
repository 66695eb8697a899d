"""Dynamic profiling: capture a few steps of a running job when a JSON file changes.

torch_npu's ``dynamic_profile`` surface, for any Python training loop
(MindSpore custom loops, TensorFlow, pyACL apps, numpy):

* :func:`init` ``(path)`` - watch ``path/profiler_config.json`` (written from
  a template if absent) in a background thread;
* :func:`step` - once after each training step (idle cost: a counter);
* :func:`start` ``(config_path=None)`` - apply a config now, from code.

Change the file (any editor, ``npuprof dynamic start DIR``) and the process
captures ``active`` steps from ``start_step`` (absolute, 0-based; a step
already past means the next one) after ``warmup``, into ``prof_dir``,
analysed when ``analyse`` is true. Every process of a job may watch the same
directory; ``is_rank``/``rank_list`` limit which ranks capture. A bad file
is one warning (and the status file says so); the last valid config stays.
``npuprof dynamic status DIR`` shows what each process has in effect.

Example::

    from npuprof import dynamic_profile as dp

    dp.init("./dyn_cfg")
    for batch in data:
        train_step(batch)
        dp.step()
"""
from __future__ import annotations

import atexit
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from ..errors import ProfilerConfigError, ProfilerStateError
from ..validate import check_number

if TYPE_CHECKING:
    from .controller import DynamicController
    from .request import CONFIG_NAME, TEMPLATE, CaptureRequest, parse_config_text


def __getattr__(name: str) -> Any:
    """The names below, imported on first use: every npuprof command registers ``npuprof dynamic``
    (:mod:`npuprof.dynamic_profile.commands`, in this package), only a watching process needs the
    controller and the config's request."""
    if name == "DynamicController":
        from . import controller

        return controller.DynamicController
    if name in ("CONFIG_NAME", "TEMPLATE", "CaptureRequest", "parse_config_text"):
        from . import request

        return getattr(request, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CONFIG_NAME", "CaptureRequest", "DynamicController", "TEMPLATE", "active_controller", "finalize", "init",
           "parse_config_text", "start", "step"]

_controller: Optional[DynamicController] = None
_lock = threading.Lock()


def init(path: Union[str, "Path"], poll_interval: float = 2.0, rank: Optional[int] = None) -> DynamicController:
    """Watch ``path/profiler_config.json``; write torch_npu's template there if absent.

    ``path`` is a directory (created if missing). Raises ProfilerConfigError
    for a path that is a file or a bad ``poll_interval``; ProfilerStateError
    when already initialised with another directory.

    Example::

        >>> import tempfile, npuprof.dynamic_profile as dp
        >>> ctl = dp.init(tempfile.mkdtemp(), poll_interval=0.5)
        >>> (ctl.config_dir / "profiler_config.json").exists()
        True
        >>> dp.finalize()
    """
    from .controller import DynamicController
    from .request import CONFIG_NAME, TEMPLATE

    global _controller
    directory = Path(path).expanduser().resolve()
    if directory.exists() and not directory.is_dir():
        raise ProfilerConfigError("path", str(path), f"a directory (to hold {CONFIG_NAME}), not a file")
    interval = check_number("poll_interval", poll_interval, minimum=0.01)
    with _lock:
        if _controller is not None:
            if _controller.config_dir == directory:
                return _controller
            raise ProfilerStateError(f"dynamic profiling already watches {_controller.config_dir}; "
                                     "call dynamic_profile.finalize() before init() with another directory")
        ctl = DynamicController(directory, dialect="npuprof", first_step=0, poll_interval=interval, rank=rank,
                                template=TEMPLATE)
        ctl.start_watching()
        _controller = ctl
    return ctl


def step() -> None:
    """Mark the end of one training step (no-op before :func:`init`)."""
    ctl = _controller
    if ctl is not None:
        ctl.step()


def start(config_path: Optional[Union[str, "Path"]] = None) -> None:
    """Apply the config now, changed or not; ``config_path`` (a JSON file) replaces it first.

    Raises ProfilerStateError before :func:`init`.
    """
    ctl = _controller
    if ctl is None:
        raise ProfilerStateError("dynamic_profile.start() needs dynamic_profile.init(path) first")
    ctl.trigger(None if config_path is None else Path(config_path))


def active_controller() -> Optional[DynamicController]:
    """The process's controller (None before :func:`init`)."""
    return _controller


def finalize() -> None:
    """Stop watching; a running capture is stopped and saved. Called at interpreter exit."""
    global _controller
    with _lock:
        ctl, _controller = _controller, None
    if ctl is not None:
        ctl.close()


atexit.register(finalize)
