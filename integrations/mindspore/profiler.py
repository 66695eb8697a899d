"""``mindspore.Profiler`` as a drop-in: MindSpore's profiler class over npuprof.

:class:`Profiler` takes the arguments of ``mindspore.profiler.Profiler``
(MindSpore 2.10; the seed's ``aicore_metrics`` and 2.10's ``aic_metrics``),
with its defaults (``output_path="./data"``, ``AicoreMetrics.AiCoreNone`` ...),
MindSpore's own enum members or their strings, and MindSpore's methods:
``start``, ``stop``, ``step``, ``analyse(offline_path, pretty, step_list,
mode)``, ``offline_analyse(path, pretty, step_list, data_simplification)``,
``add_metadata``, ``add_metadata_json``, the context manager and ``__del__``.
Underneath, an :class:`npuprof.Profiler` collects (MindSpore's operators
through the ``mindspore`` plugin, crash-safe raw data, npuprof's outputs).

MindSpore's rules hold (``profile_memory`` needs ``[CPU, NPU]``,
``aicore_metrics`` needs NPU, ``with_stack`` needs CPU ...); where MindSpore
would warn and reset a value, this raises
:class:`~npuprof.ProfilerConfigError` naming the parameter, the value and what
is allowed, before anything starts (docs/mindspore.md lists each difference).

Example::

    from mindspore.profiler import ProfilerLevel, ProfilerActivity, AicoreMetrics
    from npuprof.integrations.mindspore import Profiler

    profiler = Profiler(profiler_level=ProfilerLevel.Level0,
                        activities=[ProfilerActivity.CPU, ProfilerActivity.NPU],
                        aicore_metrics=AicoreMetrics.AiCoreNone)
    model.train(1, data)
    profiler.analyse()          # ./data/<worker>_<pid>_<ts>_ascend_ms/ASCEND_PROFILER_OUTPUT/
"""
from __future__ import annotations

import atexit
import functools
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from npuprof.enums import AicoreMetrics, ProfilerActivity, ProfilerLevel
from npuprof.errors import ProfilerConfigError, ProfilerDataError
from npuprof.fileio import atomic_write
from npuprof.runinfo import OUTPUT_DIR, RunOrigin, origin_of, read_run_info
from npuprof.validate import check_bool, check_enum, check_enum_list

from . import model_steps
from .backend import NATIVE_DIR
from .options import make_profiler, plain

log = logging.getLogger("npuprof")

DEFAULT_OUTPUT_PATH = "./data"
ANALYSE_MODES = ("sync", "async")
# What MindSpore's data_simplification deletes inside a CANN PROF_* directory (its cache, not raw data).
_PROF_CACHE = ("mindstudio_profiler_output", "mindstudio_profiler_log")
_PROF_CACHE_PER_DEVICE = ("sqlite",)
_async_children: list[subprocess.Popen] = []


def _wait_async_children() -> None:
    for proc in _async_children:
        proc.wait()


atexit.register(_wait_async_children)


class Profiler:
    """``mindspore.profiler.Profiler`` (2.10) with npuprof's collection underneath.

    Keyword arguments and defaults are MindSpore's: ``start_profile=True``,
    ``output_path="./data"``, ``profiler_level=Level0``, ``activities=[CPU,
    NPU]``, ``schedule=None``, ``on_trace_ready=None``, ``profile_memory``,
    ``aicore_metrics`` (alias ``aic_metrics``) ``=AiCoreNone``, ``with_stack``,
    ``data_simplification=True``, ``l2_cache``, ``hbm_ddr``, ``pcie``,
    ``data_process``, ``parallel_strategy``, ``sync_enable=True``,
    ``record_shapes``, ``export_type=[Text]``, ``mstx``,
    ``mstx_domain_include``/``_exclude``, ``host_sys``, ``sys_io``,
    ``sys_interconnection``. Any other :class:`npuprof.Profiler` keyword
    (``worker_name``, ``storage_limit`` ...) is passed on.

    ``on_trace_ready`` is called with the :class:`npuprof.Profiler` underneath
    (:attr:`profiler`), as torch.profiler does.

    Example::

        profiler = Profiler(start_profile=False, output_path="./prof")
        profiler.start()
        train()
        profiler.stop()
        profiler.analyse(step_list=None, mode="sync")
    """

    MAX_META_SIZE = 100 * 1024 * 1024

    def __init__(self, *, start_profile: Any = True, output_path: Any = DEFAULT_OUTPUT_PATH,
                 profiler_level: Any = ProfilerLevel.Level0, activities: Any = None, schedule: Any = None,
                 on_trace_ready: Any = None, profile_memory: Any = False, aicore_metrics: Any = None,
                 aic_metrics: Any = None, with_stack: Any = False, data_simplification: Any = True,
                 l2_cache: Any = False, hbm_ddr: Any = False, pcie: Any = False, data_process: Any = False,
                 parallel_strategy: Any = False, sync_enable: Any = True, record_shapes: Any = False,
                 export_type: Any = None, mstx: Any = False, mstx_domain_include: Any = None,
                 mstx_domain_exclude: Any = None, host_sys: Any = None, sys_io: Any = False,
                 sys_interconnection: Any = False, **npuprof_options: Any) -> None:
        self._has_started = False
        start_now = check_bool("start_profile", start_profile)
        metrics_name, metrics = _metrics_argument(aicore_metrics, aic_metrics)
        level = check_enum("profiler_level", plain(profiler_level), ProfilerLevel)
        acts = set(check_enum_list("activities", [ProfilerActivity.CPU, ProfilerActivity.NPU]
                                   if activities is None else plain(activities), ProfilerActivity,
                                   allow_empty=False))
        metrics = _check_mindspore_rules(acts, level, metrics_name, metrics,
                                         profile_memory=check_bool("profile_memory", profile_memory),
                                         with_stack=check_bool("with_stack", with_stack),
                                         mstx=check_bool("mstx", mstx), mstx_domain_include=mstx_domain_include,
                                         mstx_domain_exclude=mstx_domain_exclude)
        self.data_simplification: bool = check_bool("data_simplification", data_simplification)
        self.schedule_arg = schedule
        self._schedule_no_use_step: Optional[bool] = True if schedule is not None else None
        # without a schedule, Model.train's steps become the step rows (MindSpore's step numbers)
        self._step_marker: Optional[model_steps.StepMarker] = None
        if schedule is None:
            model_steps.watch()
        if self.data_simplification and callable(on_trace_ready):
            on_trace_ready = _simplifying(on_trace_ready)
        self._profiler = make_profiler(
            start_profile=False, output_path=output_path, profiler_level=level,
            activities=None if activities is None else plain(activities), schedule=schedule,
            on_trace_ready=on_trace_ready, profile_memory=profile_memory, aic_metrics=metrics,
            with_stack=with_stack, data_simplification=data_simplification, l2_cache=l2_cache, hbm_ddr=hbm_ddr,
            pcie=pcie, data_process=data_process, parallel_strategy=parallel_strategy, sync_enable=sync_enable,
            record_shapes=record_shapes, export_type=export_type, mstx=mstx,
            mstx_domain_include=mstx_domain_include, mstx_domain_exclude=mstx_domain_exclude, host_sys=host_sys,
            sys_io=sys_io, sys_interconnection=sys_interconnection, **npuprof_options)
        if start_now:
            self.start()

    # -- what is underneath ------------------------------------------------------------------------------------------
    @property
    def profiler(self) -> Any:
        """The :class:`npuprof.Profiler` that collects (``saved_runs``, ``results``, ``key_averages()`` ...)."""
        return self._profiler

    @property
    def step_num(self) -> int:
        """The schedule's step number (0 before the first ``step()``)."""
        return int(self._profiler.step_num)

    # -- MindSpore's methods -----------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start collecting; a second start() warns and does nothing (as MindSpore)."""
        if self._has_started:
            log.warning("npuprof: the profiler has already started; start() ignored")
            return
        self._profiler.start()
        self._has_started = True
        if self.schedule_arg is None:
            self._step_marker = model_steps.StepMarker(self._profiler)
            model_steps.install(self._step_marker)

    def _stop_collection(self) -> None:
        self._has_started = False
        if self._step_marker is not None:
            model_steps.uninstall(self._step_marker)
            self._step_marker = None
        self._profiler.stop()

    def stop(self) -> None:
        """Stop collecting and save the window.

        With a schedule and no ``step()`` call yet, MindSpore warns and
        returns; so does this (the profiler keeps running).
        """
        if self._schedule_no_use_step:
            log.warning("npuprof: the profiler has a schedule; please use step() to collect data "
                        "(stop() before any step() does nothing)")
            return
        if not self._has_started:
            log.error("npuprof: the profiler has not started; stop() does nothing")
            return
        self._stop_collection()

    def step(self) -> None:
        """End one training step and apply the schedule (without a schedule it has no effect, as MindSpore)."""
        if self.schedule_arg is None:
            log.error("npuprof: with no schedule in the Profiler, step takes no effect")
            return
        if not self._has_started:
            log.error("npuprof: the profiler is stopped, step takes no effect")
            return
        self._profiler.step()
        self._schedule_no_use_step = False

    def analyse(self, offline_path: Any = None, pretty: Any = False, step_list: Any = None,
                mode: Any = "sync") -> list:
        """Stop if running, then analyse the saved windows into ``ASCEND_PROFILER_OUTPUT/``.

        ``pretty`` indents the JSON outputs; ``step_list`` (consecutive step
        numbers) keeps those steps; ``mode="async"`` analyses in a child
        process and returns at once (joined at interpreter exit). With a
        schedule this does not analyse: use ``on_trace_ready`` (as
        MindSpore). ``offline_path`` is refused (MindSpore ignores it): use
        :meth:`offline_analyse`. Returns the analysis results (``[]`` for
        async or with a schedule).

        Example::

            profiler.analyse(step_list=[2, 3, 4], mode="sync")
        """
        if offline_path is not None:
            raise ProfilerConfigError("offline_path", offline_path, "None",
                                      hint="use Profiler.offline_analyse(path) to analyse data on disk")
        pretty_on, steps, run_async = _check_analyse_arguments(pretty, step_list, mode)
        if self._has_started:
            self._stop_collection()
        if self.schedule_arg is not None:
            log.warning("npuprof: the profiler has a schedule; please use 'on_trace_ready' to analyse data "
                        "(e.g. npuprof.tensorboard_trace_handler)")
            return []
        if run_async:
            runs = [str(run) for run in self._profiler.saved_runs if not _has_outputs(run)]
            _analyse_in_child(runs, pretty_on, steps, self.data_simplification)
            return []
        results = self._profiler.analyse(steps=steps)     # the windows not analysed yet
        for result in results:
            _finish_run(result.run_dir, result.run_dir / OUTPUT_DIR, pretty_on, self.data_simplification)
        return results

    @classmethod
    def offline_analyse(cls, path: Any, pretty: Any = False, step_list: Any = None,
                        data_simplification: Any = True) -> list:
        """Analyse the runs under ``path`` (a run or a folder of runs) after collection.

        npuprof's runs get ``ASCEND_PROFILER_OUTPUT/`` in place (and are
        simplified when ``data_simplification``); directories written by
        MindSpore itself are read-only input, their outputs go to
        ``./npuprof_output``. Raises :class:`~npuprof.ProfilerDataError` when
        ``path`` holds no run. Returns the analysis results.

        Example::

            Profiler.offline_analyse("./profiling_path")
        """
        from npuprof.export.writer import analyse_and_export

        if not isinstance(path, (str, os.PathLike)) or not Path(path).is_dir():
            raise ProfilerConfigError("path", path, "an existing directory holding profiling data")
        pretty_on, steps, _ = _check_analyse_arguments(pretty, step_list, "sync")
        simplify = check_bool("data_simplification", data_simplification)
        exported = analyse_and_export(os.fspath(path), steps=steps)
        for run in exported:
            _finish_run(run.result.run_dir, run.output_dir, pretty_on, simplify)
        return [run.result for run in exported]

    def add_metadata(self, key: str, value: str) -> None:
        """Add a ``key: value`` string pair to ``profiler_metadata.json`` (both str, else ProfilerConfigError)."""
        self._profiler.add_metadata(key, value)

    def add_metadata_json(self, key: str, value: str) -> None:
        """Add ``key`` with a JSON document given as a string to ``profiler_metadata.json``."""
        self._profiler.add_metadata_json(key, value)

    def __enter__(self) -> "Profiler":
        if not self._has_started:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._has_started:
            self.stop()

    def __del__(self) -> None:
        try:
            if self._has_started:
                self.stop()
        except Exception as e:   # during interpreter shutdown; npuprof's exit handlers save the window
            log.debug("npuprof: Profiler.__del__: %s", e)


# -- checks ----------------------------------------------------------------------------------------------------------
def _metrics_argument(aicore_metrics: Any, aic_metrics: Any) -> tuple[str, Any]:
    """(the name the user gave, the value) of the AI Core metrics argument."""
    if aicore_metrics is not None and aic_metrics is not None and plain(aicore_metrics) != plain(aic_metrics):
        raise ProfilerConfigError("aic_metrics", plain(aic_metrics),
                                  f"the same value as aicore_metrics ({plain(aicore_metrics)!r}) or nothing",
                                  hint="aicore_metrics and aic_metrics are two names of one argument")
    if aicore_metrics is not None:
        return "aicore_metrics", aicore_metrics
    return "aic_metrics", aic_metrics


def _check_mindspore_rules(activities: set, level: ProfilerLevel, metrics_name: str, metrics: Any, *,
                           profile_memory: bool, with_stack: bool, mstx: bool, mstx_domain_include: Any,
                           mstx_domain_exclude: Any) -> Optional[str]:
    """MindSpore's rules between arguments; returns the metrics value for npuprof's core."""
    cpu, npu = ProfilerActivity.CPU in activities, ProfilerActivity.NPU in activities
    if profile_memory and not (cpu and npu):
        raise ProfilerConfigError("profile_memory", True, "False unless activities are [ProfilerActivity.CPU, "
                                  "ProfilerActivity.NPU]", hint="tensor memory joins host and device data")
    if with_stack and not cpu:
        raise ProfilerConfigError("with_stack", True, "False unless activities include ProfilerActivity.CPU",
                                  hint="Python call stacks are recorded on the host")
    if not mstx and (mstx_domain_include or mstx_domain_exclude):
        name = "mstx_domain_include" if mstx_domain_include else "mstx_domain_exclude"
        raise ProfilerConfigError(name, mstx_domain_include or mstx_domain_exclude, "empty unless mstx=True")
    if metrics is None:
        # MindSpore's default AiCoreNone, which it turns into PipeUtilization at Level1/Level2
        return None if level in (ProfilerLevel.Level1, ProfilerLevel.Level2) else AicoreMetrics.AiCoreNone.value
    value = check_enum(metrics_name, plain(metrics), AicoreMetrics)
    if value is not AicoreMetrics.AiCoreNone and not npu:
        raise ProfilerConfigError(metrics_name, value.value, "AicoreMetrics.AiCoreNone unless activities include "
                                  "ProfilerActivity.NPU", hint="AI Core metrics are NPU data")
    if value is AicoreMetrics.AiCoreNone and level in (ProfilerLevel.Level1, ProfilerLevel.Level2):
        raise ProfilerConfigError(metrics_name, value.value, f"an AicoreMetrics group other than AiCoreNone at "
                                  f"profiler_level {level.value} (e.g. PipeUtilization)",
                                  hint="MindSpore would reset it to PipeUtilization; Level0 collects no AI Core "
                                       "metrics")
    if value is not AicoreMetrics.AiCoreNone and level in (ProfilerLevel.LevelNone, ProfilerLevel.Level0):
        raise ProfilerConfigError(metrics_name, value.value, f"AicoreMetrics.AiCoreNone at profiler_level "
                                  f"{level.value}", hint="AI Core metrics need Level1 or Level2")
    return value.value


def _check_analyse_arguments(pretty: Any, step_list: Any, mode: Any) -> tuple[bool, Optional[list[int]], bool]:
    """(pretty, steps, async) from analyse()'s arguments, or ProfilerConfigError."""
    pretty_on = check_bool("pretty", pretty)
    steps = None
    if step_list is not None:
        ok = isinstance(step_list, (list, tuple)) and len(step_list) > 0 and \
            all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in step_list)
        steps = sorted(step_list) if ok else []
        if not ok or steps != list(range(steps[0], steps[0] + len(steps))):
            raise ProfilerConfigError("step_list", step_list, "None or a list of consecutive step numbers >= 0, "
                                      "e.g. [2, 3, 4]")
    if mode not in ANALYSE_MODES:
        raise ProfilerConfigError("mode", mode, "one of " + ", ".join(repr(m) for m in ANALYSE_MODES))
    return pretty_on, steps, mode == "async"


# -- after analysis --------------------------------------------------------------------------------------------------
def _has_outputs(run_dir: Path) -> bool:
    return (run_dir / OUTPUT_DIR / "analyse.done").exists()


def _finish_run(run_dir: Path, output_dir: Path, pretty: bool, simplify: bool) -> None:
    """Indent the JSON outputs (``pretty``) and simplify ``run_dir`` (npuprof's own runs only)."""
    if pretty:
        for path in sorted(output_dir.glob("*.json")):
            indent_json(path)
    if simplify and _is_own_run(run_dir):
        simplify_run(run_dir)


def _simplifying(on_trace_ready: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``on_trace_ready`` followed by the simplification of the window it analysed (as MindSpore's handler)."""
    @functools.wraps(on_trace_ready)   # keeps what npuprof looks for in a handler (its settings, its origin)
    def ready(prof: Any) -> None:
        on_trace_ready(prof)
        run = Path(prof.saved_runs[-1]) if prof.saved_runs else None
        if run is not None and _has_outputs(run) and _is_own_run(run):
            simplify_run(run)

    return ready


def _is_own_run(run_dir: Path) -> bool:
    try:
        return bool(read_run_info(run_dir).writable)
    except ProfilerDataError:
        return origin_of(run_dir) is RunOrigin.NPUPROF


def indent_json(path: Path) -> None:
    """Rewrite a JSON file with 4-space indentation (MindSpore's ``pretty``)."""
    with open(path, "rb") as fh:
        doc = json.load(fh)
    atomic_write(path, json.dumps(doc, indent=4))


def simplify_run(run_dir: Path) -> list[str]:
    """Delete what MindSpore's ``data_simplification`` deletes from an analysed npuprof run.

    ``FRAMEWORK/`` (MindSpore's host files, now in the outputs); in
    ``MINDSPORE/*_ascend_ms/`` its ``FRAMEWORK/`` and, in each CANN
    ``PROF_*``, ``mindstudio_profiler_output``, ``mindstudio_profiler_log``,
    ``host|device_*/sqlite`` and the ``*.complete`` markers; ``MINDSPORE/``
    itself when no ``PROF_*`` raw data is left in it. npuprof's raw data
    (``NPUPROF/``), its ``profiler_info`` and ``ASCEND_PROFILER_OUTPUT/``
    stay, so the run can be analysed again. Returns the paths removed,
    relative to ``run_dir``.

    Example::

        simplify_run(Path("./data/host_123_20250101000000000_ascend_ms"))   # ['FRAMEWORK', 'MINDSPORE']
    """
    removed: list[Path] = []

    def remove(path: Path) -> None:
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        else:
            return
        removed.append(path)

    remove(run_dir / "FRAMEWORK")
    native = run_dir / NATIVE_DIR
    if native.is_dir() and not native.is_symlink():
        prof_dirs = []
        for ms_dir in sorted(native.glob("*_ascend_ms")):
            remove(ms_dir / "FRAMEWORK")
            for prof in sorted(ms_dir.glob("PROF_*")):
                prof_dirs.append(prof)
                for name in _PROF_CACHE:
                    remove(prof / name)
                for sub in (prof / "host", *sorted(prof.glob("device_*"))):
                    for name in _PROF_CACHE_PER_DEVICE:
                        remove(sub / name)
                for marker in sorted(prof.rglob("*.complete")):
                    remove(marker)
        if not prof_dirs:
            remove(native)
    return [str(p.relative_to(run_dir)) for p in removed]


def _analyse_in_child(run_dirs: Sequence[str], pretty: bool, steps: Optional[list[int]], simplify: bool) -> None:
    """``analyse(mode="async")``: one child process analyses ``run_dirs``; joined at interpreter exit."""
    if not run_dirs:
        return
    request = json.dumps({"runs": list(run_dirs), "pretty": pretty, "steps": steps, "simplify": simplify})
    proc = subprocess.Popen([sys.executable, "-m", __name__, request])
    _async_children.append(proc)


def _analyse_request(request: dict) -> int:
    from npuprof.export.writer import analyse_and_export

    failed = 0
    for run_dir in request["runs"]:
        try:
            for run in analyse_and_export(run_dir, steps=request["steps"]):
                _finish_run(run.result.run_dir, run.output_dir, request["pretty"], request["simplify"])
        except Exception as e:
            log.error("npuprof: analysing %s failed: %s", run_dir, e)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    raise SystemExit(_analyse_request(json.loads(sys.argv[1])))
