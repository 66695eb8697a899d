"""The Profiler: schedule-driven collection windows around user code.

Example::

    from npuprof import Profiler, schedule, tensorboard_trace_handler

    with Profiler(schedule=schedule(wait=1, warmup=1, active=3, repeat=2),
                  on_trace_ready=tensorboard_trace_handler("./prof")) as prof:
        for batch in data:
            train_step(batch)
            prof.step()
"""
from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Optional, Sequence, Union

from . import recorder as _rec
from .compiled import log_fallback_once
from .config import ProfilerConfig, build_config
from .dirlock import DirLock
from .enums import ProfilerAction
from .errors import ProfilerConfigError, ProfilerStateError
from .exitguard import handle_signal, install_signal_handlers, register_atexit
from .fileio import atomic_write, secure_mkdir
from .forkguard import on_fork_in_child
from .handlers import handler_settings
from .hostsys import HostSampler
from .lifecycle import FAILED, LIFECYCLE, STARTED, Event, State
from .plugins.manager import get_plugin_host
from .private_api import new_rlock, rlock_is_owned
from .rawstore import RAW_DIR, RawWriter
from .runinfo import base_info, native_file_sizes, new_run_dir, write_info
from .schedule import TRANSITIONS, Op, always_record
from .types import (ActivityLike, AicMetricsLike, ExportTypeLike, HostSystemLike, PathLike, ProfilerLevelLike,
                    ScheduleFn, TraceHandler)
from .session import ClockAnchor, CollectionSession
from .sigsafe import SignalSafeLock

if TYPE_CHECKING:   # the analysis modules are imported when first used, not by `import npuprof`
    from .analysis.averages import KeyAverages
    from .analysis.result import AnalysisResult

log = logging.getLogger("npuprof")

# The started Profiler of this process (a strong reference: a running profiler
# must not be collected before it is stopped), and the lock around it.
_running: Optional["Profiler"] = None
_running_lock = threading.Lock()
MAX_METADATA_BYTES = 100 << 20
_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
_RECORD, _RECORD_AND_SAVE = ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE
_RUNNING, _HALTED = State.RUNNING, State.HALTED
_STOP_REQUEST = "stop"    # in Profiler._waiting: stop() was asked for from inside an operation
_STEP_HOOK_ARGS = ("session", "step_num")
_perf = time.perf_counter_ns
_getpid = os.getpid


def running_profiler() -> Optional["Profiler"]:
    """The Profiler currently started in this process, or None.

    Example::

        prof = running_profiler()
        if prof is not None:
            prof.add_metadata("phase", "eval")
    """
    prof = _running
    return prof if prof is not None and prof.started else None


class Profiler:
    """Collects host events, user annotations and each active backend's data
    in windows chosen by ``schedule``, and writes one run directory per saved
    window under ``output_path``.

    Parameters follow torch.profiler / mindspore.profiler: ``activities``
    (CPU, NPU, GPU), ``profiler_level`` (LevelNone..Level2), ``aic_metrics``,
    ``schedule``, ``on_trace_ready`` (called with the profiler after each saved
    window), ``profile_memory``, ``record_shapes``, ``with_stack``,
    ``host_sys`` (cpu, mem, disk, network) sampled at ``host_sys_usage_freq``
    Hz, ``mstx``, ``data_simplification``, ``export_type`` (text, db),
    ``start_profile`` (start in the constructor), ``worker_name``, ``rank``.
    Also ``flush_interval`` (s, raw-data durability), ``storage_limit``
    ("200MB"), ``world_size``, ``device_id`` (an id, or a list of ids: a
    pyACL app profiles them all in one ``acl.prof`` configuration),
    ``experimental_config``, and
    ``python_memory`` (Python allocations by the line that made them, with
    ``tracemalloc``: costly, see README's bench table; the plugin
    :mod:`npuprof.plugins.python_memory`).

    Every invalid argument raises :class:`ProfilerConfigError` here, before
    anything starts. Failures while collecting never reach the training:
    they are logged once and collection stops, keeping what was written.

    Example::

        prof = Profiler(output_path="./prof", host_sys=["cpu", "mem"])
        train()
        prof.stop()
        prof.analyse()
    """

    def __init__(self, output_path: Optional[PathLike] = None, *,
                 activities: Optional[Sequence[ActivityLike]] = None,
                 profiler_level: ProfilerLevelLike = "Level0", aic_metrics: Optional[AicMetricsLike] = None,
                 schedule: Optional[ScheduleFn] = None, on_trace_ready: Optional[TraceHandler] = None,
                 profile_memory: bool = False, record_shapes: bool = False, with_stack: bool = False,
                 host_sys: Optional[Sequence[HostSystemLike]] = None, host_sys_usage_freq: int = 50,
                 mstx: bool = False, data_simplification: bool = True,
                 export_type: Optional[Sequence[ExportTypeLike]] = None, start_profile: bool = True,
                 worker_name: Optional[str] = None, rank: Optional[int] = None, **kwargs: Any) -> None:
        handler = handler_settings(on_trace_ready)     # also inside a user's function that wraps the handler
        if handler is not None:
            if output_path is not None and str(output_path) != handler.dir_name:
                log.info("npuprof: on_trace_ready's directory %s is used instead of output_path %s",
                         handler.dir_name, output_path)
            output_path = handler.dir_name
            worker_name = worker_name or handler.worker_name
        self._profiler_id = uuid.uuid4().hex
        self.config: ProfilerConfig = build_config(
            output_path=output_path, activities=activities, profiler_level=profiler_level,
            aic_metrics=aic_metrics, schedule=schedule, on_trace_ready=on_trace_ready,
            profile_memory=profile_memory, record_shapes=record_shapes, with_stack=with_stack,
            host_sys=host_sys, host_sys_usage_freq=host_sys_usage_freq, mstx=mstx,
            data_simplification=data_simplification, export_type=export_type, start_profile=start_profile,
            worker_name=worker_name, rank=rank, **kwargs)
        ids = self.config.profile_rank_ids
        self.excluded = ids is not None and self.config.rank not in ids
        self._plugins = get_plugin_host()
        self._active_plugins = [] if self.excluded else self._plugins.configure(self.config)
        self._step_hooks: Optional[list] = None
        self._schedule: Callable[[int], ProfilerAction] = self.config.schedule or always_record
        self._fixed_action = ProfilerAction.RECORD if self._schedule is always_record else None
        self.step_num = 0
        self.action = ProfilerAction.NONE
        self.current_session: Optional[CollectionSession] = None
        self.saved_runs: list[Path] = []
        self.results: list = []
        self._exported: dict = {}   # run dir -> ExportedRun
        self._state = State.CREATED        # see npuprof.lifecycle; changed by _fire only
        self._state_lock = SignalSafeLock()   # a failure is reported from the recording threads too
        self._warned: set = set()
        self._window = 0
        self._step_t0 = 0
        self._metadata: dict[str, Any] = {}
        self._dir_lock: Optional[DirLock] = None
        self._recorder: Optional[_rec.Recorder] = None
        self._sampler: Optional[HostSampler] = None
        self._clock = ClockAnchor.now()
        self._async_exports: list = []    # `npuprof analyse` processes of tensorboard_trace_handler(async)
        self._op_lock = new_rlock()   # held by the thread inside an operation (see rlock_is_owned)
        # what waits for the outermost operation to end: a stop() asked for from inside one
        # (_STOP_REQUEST), a signal that arrived meanwhile ((signum, frame, previous handler))
        self._waiting: list = []
        self._owner_pid = os.getpid()
        self._atexit_registered = False
        self._first_step = 0
        self._trigger_info: Optional[dict] = None
        if self.config.start_profile:
            self.start()

    # -- public API -------------------------------------------------------------
    @property
    def state(self) -> State:
        """Where the profiler is (:class:`npuprof.lifecycle.State`)."""
        return self._state

    @property
    def started(self) -> bool:
        """True between start() and stop() (also after a collection failure: stop() is still to come)."""
        return self._state in STARTED

    @property
    def failed(self) -> bool:
        """True once collection failed (kept after stop(): a restart opens no new window)."""
        return self._state in FAILED

    def start(self) -> None:
        """Begin: apply ``schedule(0)``; raises if another Profiler runs.

        On a rank left out by ``profile_rank_ids`` the profiler stays inert:
        no directory, no lock, no plugin runs.
        """
        if self.excluded:
            self._warn_once("excluded", f"npuprof: rank {self.config.rank} is not in profile_rank_ids "
                                        f"{list(self.config.profile_rank_ids or ())}; not profiling this rank")
            return
        if self._reentered("start"):
            return
        self._run_operation(self._start)

    def _start(self) -> None:
        global _running
        if self.started:
            log.warning("npuprof: profiler already started; start() ignored")
            return
        if os.getpid() != self._owner_pid:
            raise ProfilerStateError("this Profiler was created in the parent of a forked process; "
                                     "create a new Profiler in the child")
        with _running_lock:
            other = _running
            if other is not None and other is not self and other.started:
                raise ProfilerStateError(
                    f"another npuprof Profiler is already running in this process (output_path "
                    f"{other.config.output_path}); stop it before starting a new one")
            self._acquire_dir_lock()
            _running = self
        self._fire(Event.START)
        log_fallback_once(log)   # one line, once per process, where a compiled module is not in use
        self._install_exit_handlers()
        self.step_num = self._first_step
        self._transition(ProfilerAction.NONE, self._scheduled_action(self.step_num))
        # the first step begins once collection runs (as torch enters ProfilerStep#N after its transition):
        # opening the window, the collection threads and the frameworks' profilers starting stay out of it
        self._step_t0 = time.perf_counter_ns()

    def step(self) -> None:
        """Mark the end of one training step and apply the schedule."""
        # The hot path of a profiled loop. It runs between two of the user's steps, whose
        # framework work has evicted npuprof's code and data from the CPU caches, so each
        # Python call, C call and attribute it touches costs misses (~1 µs per call measured
        # after a TensorFlow step, against ~50 ns warm): the common step, where the profiler
        # runs and the schedule keeps its action, is this one function; the rare cases branch out.
        if _running is not self and (self.excluded or _getpid() != self._owner_pid):
            # A rank left out, or a forked child's copy of the parent's profiler: inert. While
            # started, this profiler is _running, which the at-fork hook clears in a child, so
            # the getpid system call (~1.5 µs here) is only made on the rare paths.
            return
        lock = self._op_lock
        if rlock_is_owned(lock):
            self._reentered("step")
            return
        with lock:   # an operation (see _run_operation), and the outermost one: checked above
            if self._state is not _RUNNING and not self._step_off_course():
                return
            now = _perf()
            n, prev, s = self.step_num, self.action, self.current_session
            if s is not None:
                live = self._state is not _HALTED
                rec = self._recorder
                if live and prev in _RECORDING and rec is not None and rec.failed is None:
                    rec.add_step(n, self._step_t0, now)   # the step that ends now (as _close_step)
                    s.steps.append(n)
                s.step_num = n + 1
                if live:
                    hooks = self._step_hooks
                    for plugin_name, hook in hooks if hooks is not None else self._load_step_hooks():
                        try:
                            hook(s, n + 1)
                        except Exception as e:
                            self._plugin_failed(plugin_name, e)
            self.step_num = n = n + 1
            self._step_t0 = now
            current = self._fixed_action   # no schedule: one window from start to stop
            if current is None:   # _scheduled_action, inline: a call here costs as much as the rest
                try:
                    current = self._schedule(n)
                    if current.__class__ is not ProfilerAction:
                        current = ProfilerAction(int(current))
                except Exception as e:
                    self._fail_collection("schedule", e)
                    current = ProfilerAction.NONE
            if current is not prev or current is _RECORD_AND_SAVE:
                self._transition(prev, current)   # (X, X) has no ops but for RECORD_AND_SAVE
                if prev is not _RECORD:
                    # opening a window (or saving one and opening the next) is no part of the next step;
                    # within one window (RECORD -> RECORD_AND_SAVE) the steps stay contiguous
                    self._step_t0 = _perf()
        if self._waiting:
            self._after_operation()

    def _step_off_course(self) -> bool:
        """step() outside RUNNING: False (with a warning) when stopped; after a failure, stop the
        failed window's collectors now (once) and go on with the step."""
        if self._state not in STARTED:
            self._warn_once("step-stopped", "npuprof: profiler is stopped, step() takes no effect")
            return False
        if self._state is State.FAILED:
            self._halt_after_failure()
        return True

    def _scheduled_action(self, step: int) -> ProfilerAction:
        """``schedule(step)``; NONE (and collection stopped) when the user's schedule fails."""
        try:
            current = self._schedule(step)
            return current if current.__class__ is ProfilerAction else ProfilerAction(int(current))
        except Exception as e:
            self._fail_collection("schedule", e)
            return ProfilerAction.NONE

    def stop(self) -> None:
        """Leave the profiler: a recording window is saved (marked partial if
        its schedule cycle had not ended), a warm-up window is discarded."""
        if os.getpid() != self._owner_pid:
            return   # a forked child's copy of the parent's profiler: inert
        if self._in_operation_here():
            # called from on_trace_ready or a plugin hook, mid-transition: stop once it is done
            if _STOP_REQUEST not in self._waiting:
                self._waiting.insert(0, _STOP_REQUEST)
            return
        self._run_operation(self._stop)

    def _stop(self) -> None:
        global _running
        if not self.started:
            return
        try:
            if self.config.schedule is not None and self.step_num == self._first_step:
                log.warning("npuprof: the profiler has a schedule but step() was never called; "
                            "call prof.step() once per training step")
            if self.action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
                self._close_step(time.perf_counter_ns())
                if self.current_session is not None and self.config.schedule is not None:
                    # the schedule's cycle had not reached its last step() yet
                    self.current_session.partial = True
            if self.action is ProfilerAction.WARMUP:
                log.warning("npuprof: profiler stopped during WARMUP at step %d; that window had recorded "
                            "nothing and is discarded", self.step_num)
            self._transition(self.action, None)
        finally:
            self._fire(Event.STOP)
            self._release_dir_lock()
            with _running_lock:
                if _running is self:
                    _running = None

    def analyse(self, export_type: Optional[Sequence[ExportTypeLike]] = None, **kwargs: Any) -> list["AnalysisResult"]:
        """Analyse and export every saved window not exported yet; stops first if running.

        Returns the :class:`~npuprof.analysis.result.AnalysisResult` list.
        """
        if self.started:
            self.stop()
        return [self._export_window(run_dir, export_type, **kwargs) for run_dir in self.saved_runs
                if run_dir not in self._exported]

    def _export_window(self, run_dir: Path, export_type: Any = None, **kwargs: Any) -> "AnalysisResult":
        """Analyse one saved window (once) and write its outputs into it."""
        from .export.writer import export_result

        result = self._analysed_window(run_dir, **kwargs)
        self._exported[run_dir] = export_result(result, export_type or self.config.export_type)
        return result

    def _analysed_window(self, run_dir: Path, **kwargs: Any) -> "AnalysisResult":
        """The analysis of a saved window, analysed now (writing nothing) if it was not yet."""
        result = next((r for r in self.results if r.run_dir == run_dir), None)
        if result is None:
            from .analysis.pipeline import analyse_run

            result = analyse_run(run_dir, **kwargs)
            self.results.append(result)
        return result

    def key_averages(self, group_by_input_shape: bool = False) -> "KeyAverages":
        """Operator statistics of the last saved window, as torch.profiler's ``key_averages()``.

        One row per operator type and core (``op_statistic``), or with
        ``group_by_input_shape=True`` per type *and* input shapes
        (``op_shape_statistic``, needs ``record_shapes=True``), then one per
        user range (``record_function``/mstx, core type ``RANGE``). The window is
        analysed first if it was not yet. Call it after ``stop()`` or in an
        ``on_trace_ready`` handler.

        Example::

            with Profiler(record_shapes=True) as prof:
                train()
            print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
        """
        from .analysis.averages import KeyAverages
        from .validate import check_bool

        by_shape = check_bool("group_by_input_shape", group_by_input_shape)
        result = self._latest_result("key_averages")
        return KeyAverages(result.tables["op_shape_statistic" if by_shape else "op_statistic"],
                           result.tables.get("range_statistic"))

    def export_chrome_trace(self, path: PathLike) -> Path:
        """Write the last saved window's trace to ``path`` (torch.profiler's method; a ``.gz`` path is gzipped).

        The same Kineto-form trace as ``ASCEND_PROFILER_OUTPUT/trace_view.json``
        (Perfetto, chrome://tracing, HTA). Call it after ``stop()`` or in an
        ``on_trace_ready`` handler. Returns the path written.

        Example::

            with Profiler() as prof:
                train()
            prof.export_chrome_trace("trace.json.gz")
        """
        from .export.trace_json import trace_settings, write_trace, write_trace_file
        from .validate import check_output_path

        target = check_output_path("path", path, file=True)
        result = self._latest_result("export_chrome_trace")
        secure_mkdir(target.parent)
        exported = self._exported.get(result.run_dir)
        written = exported.output_dir / "trace_view.json" if exported else None
        if written is not None and written in exported.outputs and written.is_file():  # type: ignore[union-attr]
            def copy(fh: Any) -> None:   # the export wrote it: copy, do not render again
                with open(written, "rb") as src:
                    shutil.copyfileobj(src, fh, 1 << 20)

            return write_trace_file(target, copy)
        return write_trace(result.events, target, **trace_settings(result))

    def export_memory_timeline(self, path: PathLike, device: Optional[str] = None) -> Path:
        """Write the last saved window's memory over time to ``path`` (torch.profiler's method).

        ``.html``: a self-contained page - the peak (MB, when, in which step), the allocations alive over
        time stacked by operator, every memory series, what was alive at the peak; ``.json`` /
        ``.json.gz``: the same data. ``device`` (``"cpu"``, ``"npu"`` or ``"npu:N"``; default all) keeps the
        memory data of that device. Needs ``profile_memory=True``; call it after ``stop()`` or in an
        ``on_trace_ready`` handler. Returns the path written.

        Example::

            with Profiler(profile_memory=True) as prof:
                train()
            prof.export_memory_timeline("memory.html")
        """
        from .analysis.memory import check_memory_device, memory_of_device, memory_timeline
        from .export.memory_timeline import TIMELINE_SUFFIXES, timeline_form, write_memory_timeline
        from .validate import check_output_path

        target = check_output_path("path", path, file=True)
        if not timeline_form(target):
            raise ProfilerConfigError("path", os.fspath(path), f"a file name ending in {', '.join(TIMELINE_SUFFIXES)}")
        check_memory_device(device)             # before any analysis
        result = self._latest_result("export_memory_timeline")
        return write_memory_timeline(memory_timeline(memory_of_device(result.events, device)), target,
                                     f"npuprof memory: {result.run_dir.name}")

    def _latest_result(self, caller: str) -> "AnalysisResult":
        """The analysis of the last saved window (analysed now, writing nothing, if needed)."""
        if not self.saved_runs:
            raise ProfilerStateError(f"{caller}(): no window has been saved yet; call it after stop() or in "
                                     "on_trace_ready")
        return self._analysed_window(self.saved_runs[-1])

    @classmethod
    def offline_analyse(cls, path: PathLike, export_type: Optional[Sequence[ExportTypeLike]] = None,
                        output_path: Optional[PathLike] = None, **kwargs: Any) -> list["AnalysisResult"]:
        """Analyse the runs on disk at ``path`` (a run or a folder of runs, e.g.
        after a crash) and write their outputs. Returns one AnalysisResult per run.

        npuprof's own runs get their outputs in place; another tool's runs
        (torch_npu, MindSpore, CANN) are read-only: theirs go under
        ``output_path`` (default ``./npuprof_output``).

        Example::

            Profiler.offline_analyse("./rank0_ascend_pt", output_path="./analysed")
        """
        from .export.writer import analyse_and_export

        return [run.result for run in analyse_and_export(os.fspath(path), export_type=export_type,
                                                         output=None if output_path is None else os.fspath(output_path),
                                                         **kwargs)]

    def add_metadata(self, key: str, value: str) -> None:
        """Attach a string to every run directory's profiler_metadata.json."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise ProfilerConfigError("add_metadata", (key, value), "a str key and a str value")
        self._store_metadata(key, value)

    def add_metadata_json(self, key: str, value: str) -> None:
        """Attach a JSON document (given as a string) to the run metadata."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise ProfilerConfigError("add_metadata_json", (key, value), "a str key and a JSON str value")
        try:
            parsed = json.loads(value)
        except ValueError as e:
            raise ProfilerConfigError("add_metadata_json", value[:80], f"valid JSON ({e})") from None
        self._store_metadata(key, parsed)

    def __enter__(self) -> "Profiler":
        if not self.started:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        self.stop()
        for proc in self._async_exports:
            proc.wait()
        return False

    # -- internals -----------------------------------------------------------------
    def _trigger(self, first_step: int, info: dict) -> None:
        """Number the steps from ``first_step`` (a running job's own step number) and
        record in profiler_info what started this profiler (npuprof.dynamic_profile)."""
        self._first_step = first_step
        self._trigger_info = info

    def _store_metadata(self, key: str, value: Any) -> None:
        size = len(json.dumps(self._metadata)) + len(json.dumps(value)) + len(key)
        if size > MAX_METADATA_BYTES:
            raise ProfilerConfigError("add_metadata", key, f"total metadata under {MAX_METADATA_BYTES} bytes")
        self._metadata[key] = value
        if self.current_session is not None:
            self._write_metadata(self.current_session.run_dir)

    def _write_metadata(self, run_dir: Path) -> None:
        if self._metadata:
            atomic_write(run_dir / "profiler_metadata.json", json.dumps(self._metadata, indent=4))

    def _close_step(self, now: int) -> None:
        rec = self._recorder
        if rec is not None and rec.failed is None and self._state is not _HALTED and self.action in _RECORDING and \
                (self.config.schedule is not None or self.step_num != self._first_step):
            rec.add_step(self.step_num, self._step_t0, now)
            if self.current_session is not None:
                self.current_session.steps.append(self.step_num)

    def _transition(self, prev: ProfilerAction, current: Optional[ProfilerAction]) -> None:
        ops = TRANSITIONS[(prev, current)]
        interrupted: Optional[BaseException] = None
        for op in ops:
            if op in (Op.PREPARE, Op.START) and (self.failed or _STOP_REQUEST in self._waiting):
                continue
            try:
                self._apply(op, prev, current)
            except Exception as e:
                self._fail_collection(op.value, e)
            except BaseException as e:  # SystemExit / KeyboardInterrupt from a callback: finish, then raise
                if interrupted is None:
                    interrupted = e
        if current is not None:
            self.action = current
        if interrupted is not None:
            raise interrupted

    def _apply(self, op: Op, prev: ProfilerAction, current: Optional[ProfilerAction]) -> None:
        if op is Op.PREPARE:
            self._open_window()
        elif op is Op.START:
            self._start_recording()
        elif op is Op.STOP:
            self._stop_recording()
        elif op is Op.SAVE:
            self._save_window()
        elif op is Op.DISCARD:
            self._discard_window()
        elif op is Op.WARN_INCOMPLETE:
            log.warning("npuprof: schedule went from %s to %s at step %d; the window ends early",
                        prev.name, current.name if current is not None else "exit", self.step_num)
            if self.current_session is not None:
                self.current_session.partial = True

    def _open_window(self) -> None:
        cfg = self.config
        secure_mkdir(cfg.output_path)
        run_dir = new_run_dir(cfg.output_path, cfg.worker_name, cfg.framework)
        secure_mkdir(run_dir)
        self._window += 1
        self._clock = ClockAnchor.now()
        writer = RawWriter(run_dir / RAW_DIR, storage_limit=cfg.storage_limit)
        self.current_session = CollectionSession(config=cfg, run_dir=run_dir, clock=self._clock,
                                                 window=self._window, writer=writer, step_num=self.step_num,
                                                 warn_once=self._warn_once)
        self._write_info("running")
        self._write_metadata(run_dir)

    def _write_info(self, state: str) -> None:
        s = self.current_session
        if s is None:
            return
        info = base_info(self.config.to_json(), self.config.rank, self.config.device_id, self.config.world_size)
        info["npuprof"].update({
            "state": state, "window": s.window, "partial": s.partial, "steps": list(s.steps),
            "clock": {"monotonic_ns": s.clock.monotonic_ns, "realtime_ns": s.clock.realtime_ns,
                      "uncertainty_ns": s.clock.uncertainty_ns},
            "start_time_ns": s.clock.realtime_ns, "plugins": self._active_plugins,
            "profiler_id": self._profiler_id,      # one Profiler's windows: one job (cluster.jobs)
            "flush_interval": self.config.flush_interval,
        })
        if self._trigger_info is not None:
            info["npuprof"]["dynamic"] = self._trigger_info
        if state != "running":
            info["npuprof"]["stop_time_ns"] = time.time_ns()
            info["npuprof"]["events_written"] = s.writer.events_written
            info["npuprof"]["native_files"] = native_file_sizes(s.run_dir)
            if s.writer.report.aged_out_segments:
                info["npuprof"]["storage"] = s.writer.report.__dict__
            error = s.writer.failed or (self._recorder.failed if self._recorder is not None else None)
            if error is not None:
                info["npuprof"]["collection_error"] = f"{type(error).__name__}: {error}"
            dropped = s.writer.events_failed + (self._recorder.dropped if self._recorder is not None else 0)
            if dropped:
                info["npuprof"]["events_dropped"] = dropped
        write_info(s.run_dir, self.config.rank, info)

    def _start_recording(self) -> None:
        s = self.current_session
        assert s is not None, "a window is open before recording starts"   # _open_window ran
        cfg = self.config
        domain_filter = None
        if cfg.mstx_domain_include:
            inc = set(cfg.mstx_domain_include)
            domain_filter = inc.__contains__
        elif cfg.mstx_domain_exclude:
            exc = set(cfg.mstx_domain_exclude)
            domain_filter = lambda d: d not in exc  # noqa: E731
        self._recorder = _rec.Recorder(s.writer, self._clock.offset_ns, cfg.flush_interval,
                                       with_stack=cfg.with_stack, on_failure=self._on_write_failure,
                                       domain_filter=domain_filter,
                                       gc_threshold_ns=None if cfg.gc_detect_threshold is None
                                       else int(cfg.gc_detect_threshold * 1e6))
        self._recorder.start()
        if cfg.host_sys or cfg.profile_memory:
            self._sampler = HostSampler(cfg.host_sys, cfg.host_sys_usage_freq, self._clock.offset_ns,
                                        self._recorder.write_table, cfg.flush_interval,
                                        process_memory=cfg.profile_memory)
            self._sampler.start()
        self._call("npuprof_start", session=s)

    def _stop_recording(self) -> None:
        s = self.current_session
        if s is not None and self._state is not _HALTED:
            self._call("npuprof_stop", session=s)
        if self._sampler is not None:
            self._sampler.stop()
            self._sampler = None
        if self._recorder is not None:
            self._recorder.stop()
        if s is not None:
            s.writer.close()

    def _halt_after_failure(self) -> None:
        """After a write failure: stop every collector of the window now (the
        sampler, the backends) rather than at the window's end; the window is
        still saved with what reached the disk."""
        if self.current_session is not None:
            try:
                self._stop_recording()
            except Exception as e:
                log.info("npuprof: stopping collectors after a failure: %s: %s", type(e).__name__, e)
        self._fire(Event.HALT)

    def _save_window(self) -> None:
        s = self.current_session
        if s is None:
            return
        s.saved = True
        # Each step on its own: a full disk while writing profiler_info must not
        # keep the window out of saved_runs or skip on_trace_ready.
        for what, action in (("profiler_info", lambda: self._write_info("stopped")),
                             ("metadata", lambda: self._write_metadata(s.run_dir))):
            try:
                action()
            except Exception as e:
                self._fail_collection(f"save ({what})", e)
        self._recorder = None
        self.saved_runs.append(s.run_dir)
        self.current_session = None
        self._call("npuprof_trace_ready", session=s)
        if self.config.on_trace_ready is not None:
            try:
                self.config.on_trace_ready(self)
            except Exception as e:
                log.warning("npuprof: on_trace_ready failed: %s: %s", type(e).__name__, e)

    def _discard_window(self) -> None:
        s = self.current_session
        if s is None:
            return
        s.saved = False
        if self._recorder is not None:
            self._stop_recording()
        else:
            self._call("npuprof_stop", session=s)
            s.writer.close()
        self._recorder = None
        log.info("npuprof: window %d ended in WARMUP and recorded nothing; removed %s", s.window, s.run_dir)
        shutil.rmtree(s.run_dir, ignore_errors=True)
        self.current_session = None

    def _load_step_hooks(self) -> list:
        """(plugin name, hook(session, step_num)) per active plugin's npuprof_step, looked up once."""
        hooks = []
        for impl in self._plugins.impls("npuprof_step", only=self._active_plugins):
            argnames = tuple(impl.argnames)
            if argnames == _STEP_HOOK_ARGS:
                hooks.append((impl.plugin_name, impl.function))
            else:   # a hook taking fewer or reordered arguments (pluggy passes them by name)
                hooks.append((impl.plugin_name, functools.partial(_call_by_name, impl.function, argnames)))
        self._step_hooks = hooks
        return hooks

    def _call(self, hook: str, **kwargs: Any) -> None:
        self._plugins.call(hook, only=self._active_plugins, on_error=self._plugin_failed, **kwargs)

    def _plugin_failed(self, name: str, error: BaseException) -> None:
        self._warn_once(f"plugin:{name}", f"npuprof: plugin {name!r} failed ({type(error).__name__}: {error}); "
                                          "it is disabled for this profiler, collection goes on without it")
        if name in self._active_plugins:
            self._active_plugins.remove(name)
            self._step_hooks = None

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)

    def _on_write_failure(self, error: BaseException) -> None:
        # Called from the flusher or sampler thread: flags only, and the sampler is told to end
        # (not joined: this may be its own thread); backends are stopped at the next step().
        self._report_failure(f"npuprof: writing profiling data failed ({error}); collection stopped, "
                             "data written so far is kept and analysable; training goes on")
        self._fire(Event.FAIL)
        sampler = self._sampler
        if sampler is not None:
            sampler._stop.set()

    def _fail_collection(self, where: str, error: BaseException) -> None:
        self._report_failure(f"npuprof: profiling failed in {where} ({type(error).__name__}: {error}); "
                             "collection stopped, data written so far is kept; training goes on")
        self._fire(Event.FAIL)
        if self._recorder is not None:
            try:
                self._recorder.stop()
            except Exception:
                pass
        if self._sampler is not None:
            try:
                self._sampler.stop()
            except Exception:
                pass
            self._sampler = None

    def _report_failure(self, message: str) -> None:
        """The first failure is a warning; later ones (their consequences) are logged at INFO."""
        if "failure" not in self._warned:
            self._warned.add("failure")
            log.warning(message)
        else:
            log.info(message)

    # -- operations, locks and exit handling --------------------------------------
    def _run_operation(self, operation: Callable[[], None]) -> None:
        """Run one public operation (start, step, stop) at a time. A SIGTERM
        or SIGINT that arrives while this thread is inside one (it holds
        ``_op_lock``) is held back and handled when the outermost operation
        ends, so a handler never re-enters half-done profiler state (or a lock
        this thread holds). step() inlines this."""
        lock = self._op_lock
        outer = not rlock_is_owned(lock)
        with lock:
            operation()
        if outer and self._waiting:
            self._after_operation()

    def _after_operation(self) -> None:
        """What waited for the outermost operation (``_waiting``): a stop() asked for from a
        hook, then a signal that arrived meanwhile (handled on the main thread only)."""
        if _STOP_REQUEST in self._waiting:
            self._waiting.remove(_STOP_REQUEST)
            self.stop()
        signals = [w for w in self._waiting if w is not _STOP_REQUEST]
        if signals and threading.current_thread() is threading.main_thread():
            signum, frame, previous = signals[0]
            self._waiting.clear()
            handle_signal(self, signum, frame, previous)

    def _defer_signal(self, signum: int, frame: Any, previous: Any) -> bool:
        """Hold a signal that arrived inside an operation until it ends; False when one is held
        already (the second is acted on at once)."""
        if any(w is not _STOP_REQUEST for w in self._waiting):
            return False
        self._waiting.append((signum, frame, previous))
        return True

    def _fire(self, event: Event) -> None:
        """Move to the state :data:`npuprof.lifecycle.LIFECYCLE` gives for ``event``."""
        with self._state_lock:
            self._state = LIFECYCLE[(self._state, event)]

    def _in_operation_here(self) -> bool:
        return rlock_is_owned(self._op_lock)

    def _reentered(self, what: str) -> bool:
        """True (with a warning) when start()/step() is called from inside
        another profiler operation on this thread, e.g. from on_trace_ready."""
        if not self._in_operation_here():
            return False
        self._warn_once(f"reentrant:{what}", f"npuprof: prof.{what}() called from inside on_trace_ready or a "
                                             f"plugin hook is ignored; call it from the training loop")
        return True

    def _acquire_dir_lock(self) -> None:
        self._dir_lock = DirLock.acquire(self.config.output_path, self.config.rank)

    def _release_dir_lock(self) -> None:
        if self._dir_lock is not None:
            self._dir_lock.release()
            self._dir_lock = None

    def _install_exit_handlers(self) -> None:
        if not self._atexit_registered:
            register_atexit(self)
            self._atexit_registered = True
        install_signal_handlers(running_profiler_or_none)


def _call_by_name(function: Callable, argnames: tuple, session: Any, step_num: int) -> Any:
    args = {"session": session, "step_num": step_num}
    return function(*[args[a] for a in argnames])


def running_profiler_or_none() -> Optional["Profiler"]:
    """The profiler the signal handlers act on (started or not)."""
    return _running


def _after_fork_in_child() -> None:
    """A forked child's copy of the parent's running profiler is inert (see :mod:`npuprof.forkguard`)."""
    global _running, _running_lock
    prof = _running
    _running = None
    _running_lock = threading.Lock()   # another thread may have held it at fork time
    _rec._activate(None)
    if prof is not None and prof._dir_lock is not None:
        prof._dir_lock.forget_after_fork()
        prof._dir_lock = None


on_fork_in_child(_after_fork_in_child)


profile = Profiler
