"""A drop-in for ``mindspore.profiler.DynamicProfilerMonitor`` on npuprof.

Same constructor, same JSON (``start_step``/``stop_step`` 1-based and
inclusive, -1 = no capture; the int and string forms of ``profiler_level``,
``activities``, ``export_type``, ``aic_metrics``; ``analyse``/``analyse_mode``;
``prof_path`` ...), same output folders ``rank{r}_start{a}_stop{b}/``; as a
``Model.train`` callback or with :meth:`step` in a custom loop. Where
MindSpore resets a bad value with a log line, npuprof warns naming the field,
the value and what is allowed, and keeps the last valid config.

Example::

    from npuprof.integrations.mindspore import DynamicProfilerMonitor

    monitor = DynamicProfilerMonitor(cfg_path="./dyn_cfg", output_path="./dyn_profile_data")
    model.train(10, dataset, callbacks=[monitor])
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from mindspore.train import Callback

from npuprof.dynamic_profile.controller import DynamicController
from npuprof.dynamic_profile.request import MINDSPORE_TEMPLATE
from npuprof.errors import ProfilerConfigError
from npuprof.types import PathLike
from npuprof.validate import check_number, check_output_path


class DynamicProfilerMonitor(Callback):
    """Watch ``cfg_path/profiler_config.json`` and profile the steps it names.

    ``cfg_path`` is a directory (shared by every rank); ``output_path`` is
    where captures go unless the file's ``prof_path`` says otherwise;
    ``poll_interval`` (s) is how often the file is looked at. A config
    already in ``cfg_path`` is the baseline, as in torch_npu: only a change
    written after this starts a capture (MindSpore's own monitor applies it).
    """

    def __init__(self, cfg_path: Optional[PathLike] = None, output_path: PathLike = "./dyn_profile_data",
                 poll_interval: float = 2, **kwargs: Any) -> None:
        super().__init__()
        if kwargs:
            key = sorted(kwargs)[0]
            raise ProfilerConfigError(key, kwargs[key], "cfg_path, output_path or poll_interval")
        if cfg_path is None:
            raise ProfilerConfigError("cfg_path", None, "the directory holding profiler_config.json")
        directory = Path(cfg_path).expanduser().resolve()
        if directory.exists() and not directory.is_dir():
            raise ProfilerConfigError("cfg_path", str(cfg_path), "a directory holding profiler_config.json")
        out = check_output_path("output_path", output_path)
        interval = check_number("poll_interval", poll_interval, minimum=0.01)
        # a config already there is the baseline (torch_npu's rule; MindSpore's own monitor applies it,
        # so a file left by the previous job re-captured its steps): only a change after this starts one
        self._controller = DynamicController(directory, dialect="mindspore", first_step=1,
                                             poll_interval=interval, template=MINDSPORE_TEMPLATE,
                                             default_prof_dir=out.resolve())
        self._controller.start_watching()

    @property
    def controller(self) -> DynamicController:
        """The watcher, counter and captures behind this monitor."""
        return self._controller

    def step(self) -> None:
        """End one step of a custom training loop (``Model.train`` needs no call)."""
        self._controller.step()

    def on_train_step_end(self, run_context: Any) -> None:
        self._controller.step()

    def on_train_end(self, run_context: Any) -> None:
        self._controller.close()
