"""One process's dynamic profiling: a step counter, the watched config, the capture.

The training thread calls :meth:`DynamicController.step` once per step. With
no capture due that is one increment and one comparison: the watcher thread
sets ``_wake_at`` to 0 when a new request arrives, and only then does a step
take the slow path (:meth:`_advance`) that schedules, starts, steps and ends
captures. A capture is an ordinary :class:`npuprof.Profiler` with
``schedule(skip_first=start, warmup=warmup, active=active, repeat=1)`` over
the job's own step numbers, so its trace names the job's steps.

Nothing here may raise into the training loop: every failure is one warning
(and the status file), and the last valid config stays in effect.

Example::

    ctl = DynamicController(Path("./cfg"), dialect="npuprof", first_step=0)
    ctl.start_watching()
    for batch in data:
        train_step(batch)
        ctl.step()
"""
from __future__ import annotations

import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any, Optional

from ..config import env_rank
from ..errors import ProfilerError
from ..fileio import atomic_write
from .request import CONFIG_NAME, CaptureRequest
from .status import CaptureStatus, ProcessStatus, new_status, write_status
from .watcher import ConfigWatcher

log = logging.getLogger("npuprof")
_IDLE = sys.maxsize


class DynamicController:
    """Watches ``config_dir/profiler_config.json`` and runs the captures it asks for.

    ``first_step`` is the number of the step running when watching starts
    (0 for torch_npu-style configs, 1 for MindSpore's). A config already in
    the file at start is the baseline, as in torch_npu: only a change starts a
    capture, so a file left by the previous job does not capture again.
    ``apply_existing`` applies it at start instead (MindSpore's own monitor's
    rule; npuprof's entry points all keep torch_npu's).
    """

    def __init__(self, config_dir: Path, dialect: str = "npuprof", first_step: int = 0,
                 poll_interval: float = 2.0, rank: Optional[int] = None, apply_existing: bool = False,
                 template: Optional[dict] = None, default_prof_dir: Optional[Path] = None) -> None:
        self.config_dir = config_dir
        self.config_path = config_dir / CONFIG_NAME
        self.dialect = dialect
        self.step_num = first_step          # the step now running
        self.rank = env_rank()[0] if rank is None else rank
        self._wake_at = _IDLE               # first step number at which step() must look closer
        self._offered: Optional[CaptureRequest] = None   # set by the watcher thread
        self._scheduled: Optional[CaptureRequest] = None
        self._scheduled_start = 0
        self._capture: Optional[Any] = None              # the running npuprof.Profiler
        self._capture_status: Optional[CaptureStatus] = None
        self._capture_last_step = 0
        self._last_stop_step = first_step - 1
        self._status_lock = threading.Lock()
        self._status_warned = False
        self._warned: set = set()
        self.status: ProcessStatus = new_status(self.rank, os.getpid(), dialect, self.config_path)
        baseline = self._prepare_file(template)
        if apply_existing:
            baseline = None
        self._watcher = ConfigWatcher(self.config_path, dialect, poll_interval, self._on_request,
                                      self._on_error, self._on_poll, baseline=baseline,
                                      default_prof_dir=default_prof_dir)

    # -- the training thread -----------------------------------------------------------------
    def step(self) -> None:
        """End the running step; start, advance or finish a capture when one is due."""
        n = self.step_num + 1
        self.step_num = n
        if n >= self._wake_at:
            self._advance()

    def start_watching(self) -> None:
        """Start the watcher thread (and apply the file at once when ``apply_existing``)."""
        if self._watcher.ident is None:
            if not self._watcher.has_baseline:
                self._watcher.check_now()
            self._watcher.start()
            self._write_status()
            if self._wake_at != _IDLE and self._capture is None:
                self._advance(at_start=True)

    def trigger(self, config_path: Optional[Path] = None) -> None:
        """Apply a config now, changed or not (``dynamic_profile.start``); ``config_path``
        is applied once in this process, the watched file stays as it is."""
        if config_path is None:
            self._watcher.force()
        else:
            self._watcher.apply_file(config_path)
        if self._capture is None and self._wake_at != _IDLE:
            self._advance(at_start=True)    # from code, between steps: a due capture begins with this step

    def close(self) -> None:
        """Stop watching; a running capture is stopped and saved (marked partial)."""
        self._watcher.stop()
        if self._capture is not None:
            self._end_capture("stopped")
        self.status.state = "stopped"
        self._write_status()

    # -- callbacks from the watcher thread -----------------------------------------------------
    def _on_request(self, request: CaptureRequest) -> None:
        self._offered = request
        self._wake_at = 0
        with self._status_lock:
            self.status.error = None
            self.status.config_digest = request.digest
            self.status.config = dict(request.config)
        log.warning("npuprof: dynamic profiling: new config %s read from %s", request.digest, self.config_path)
        self._write_status()

    def _on_error(self, message: str) -> None:
        with self._status_lock:
            self.status.error = message
        if message not in self._warned:
            self._warned.add(message)
            log.warning("npuprof: %s", message)
        self._write_status()

    def _on_poll(self) -> None:
        if self.status.step != self.step_num:
            self.status.step = self.step_num
            self._write_status()

    # -- the slow path -------------------------------------------------------------------------
    def _advance(self, at_start: bool = False) -> None:
        try:
            self._advance_unsafe(at_start)
        except Exception as e:   # never into the training loop
            self._on_error(f"dynamic profiling stopped a capture: {type(e).__name__}: {e}")
            self._capture = None
            self._sleep_until(_IDLE)

    def _advance_unsafe(self, at_start: bool) -> None:
        n = self.step_num
        if self._capture is not None:
            if not at_start:
                self._capture.step()
            if n > self._capture_last_step:
                self._end_capture("done")
            else:
                self._wake_at = n + 1
                return
        offered, self._offered = self._offered, None
        if offered is not None:
            self._schedule(offered, n)
        request = self._scheduled
        if request is None:
            self._sleep_until(_IDLE)
            return
        if n < self._scheduled_start:
            self._sleep_until(self._scheduled_start)
            return
        self._scheduled = None
        self._begin_capture(request, n)

    def _sleep_until(self, step: int) -> None:
        """Take the slow path again at ``step``, or at once if a config arrived meanwhile:
        the watcher sets ``_offered`` then ``_wake_at``, this sets ``_wake_at`` then reads
        ``_offered``, so a config arriving in between is never left waiting."""
        self._wake_at = step
        if self._offered is not None:
            self._wake_at = 0

    def _schedule(self, request: CaptureRequest, n: int) -> None:
        self._scheduled = None
        if not request.enabled:
            self.status.state = "idle"
            self._write_status()
            return
        if not request.applies_to(self.rank):
            self.status.state = "idle"
            self._on_error(f"config {request.digest}: rank {self.rank} is not in rank_list "
                           f"{sorted(request.ranks or ())}; this rank does not capture")
            return
        start = n if request.start_step is None else request.start_step
        if request.dialect == "mindspore" and start < n:
            self._on_error(f"config {request.digest}: start_step {start} is already past (step {n} is running); "
                           "MindSpore's monitor needs a start_step after the current step - nothing captured")
            return
        if request.dialect == "mindspore" and start <= self._last_stop_step:
            self._on_error(f"config {request.digest}: start_step {start} must be after the previous capture's "
                           f"stop_step {self._last_stop_step} - nothing captured")
            return
        start = max(start, n)     # a step already past (or running) means the next one to begin
        self._scheduled = request
        self._scheduled_start = start
        self.status.state = "scheduled"
        self.status.captures.append(CaptureStatus(
            digest=request.digest, start_step=start, recorded_steps=list(request.recorded_steps(start)),
            output_dir=str(request.output_dir(self.rank, start))))
        self._write_status()

    def _begin_capture(self, request: CaptureRequest, n: int) -> None:
        from ..handlers import tensorboard_trace_handler
        from ..profiler import Profiler
        from ..schedule import schedule

        record = self.status.captures[-1]
        out = request.output_dir(self.rank, n)
        try:
            prof = Profiler(
                schedule=schedule(skip_first=n, wait=0, warmup=request.warmup, active=request.active, repeat=1),
                on_trace_ready=tensorboard_trace_handler(out, analyse_flag=request.analyse,
                                                         async_mode=request.async_mode),
                start_profile=False, **dict(request.profiler_kwargs))
            prof._trigger(first_step=n, info={
                "dialect": request.dialect, "config_path": str(self.config_path), "config_digest": request.digest,
                "config": dict(request.config), "rank": self.rank, "start_step": n,
                "recorded_steps": list(request.recorded_steps(n))})
            for key, value in request.metadata:
                prof.add_metadata_json(key, json.dumps(value))
            # said (and the status file written) before the start: the capture's first step begins once
            # start() returns, and none of this is part of it
            log.warning("npuprof: dynamic profiling: rank %d captures steps %s into %s", self.rank,
                        record.recorded_steps, out)
            record.state = "running"
            self.status.state = "capturing"
            self._write_status()
            prof.start()
        except (ProfilerError, OSError) as e:
            record.state, record.error = "failed", f"{type(e).__name__}: {e}"
            self.status.state = "idle"
            self._on_error(f"config {request.digest}: the capture at step {n} could not start: {e}")
            self._sleep_until(_IDLE)
            return
        self._capture = prof
        self._capture_status = record
        self._capture_last_step = n + request.warmup + request.active - 1
        self._wake_at = n + 1

    def _end_capture(self, state: str) -> None:
        prof, self._capture = self._capture, None
        record = self._capture_status
        try:
            if prof is not None:
                prof.stop()
        finally:
            self._last_stop_step = self._capture_last_step
            if record is not None and prof is not None:
                record.state = state
                record.run_dirs = [str(p) for p in prof.saved_runs]
            self.status.state = "idle"
            self._write_status()
            self._sleep_until(_IDLE)

    # -- files -----------------------------------------------------------------------------------
    def _prepare_file(self, template: Optional[dict]) -> Optional[str]:
        """Write the template if there is no config; return the content that is already there."""
        try:
            self.config_dir.mkdir(parents=True, exist_ok=True)
            if not self.config_path.exists() and template is not None:
                atomic_write(self.config_path, json.dumps(template, indent=4) + "\n")
            return self.config_path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            self._on_error(f"{self.config_path}: {e.strerror}; dynamic profiling waits for the file")
            return None

    def _write_status(self) -> None:
        with self._status_lock:
            self.status.step = self.step_num
            try:
                write_status(self.config_dir, self.status)
            except OSError as e:
                if not self._status_warned:
                    self._status_warned = True
                    log.warning("npuprof: dynamic profiling: cannot write the status file under %s (%s)",
                                self.config_dir, e.strerror)
