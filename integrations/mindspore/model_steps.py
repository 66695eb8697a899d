"""``Model.train``'s own step numbers as ``ProfilerStep#N`` rows, for ``mindspore.Profiler`` without a schedule.

MindSpore inserts one callback of its own first into every ``Model.train``
(``mindspore.train.model._FrameworkProfilerCallback``: "profiler callback of
framework for training"); its ``step_begin``/``step_end`` see each step's
``cb_params.cur_step_num`` (1-based) before any user callback. While a
:class:`StepMarker` is installed, each step a recording window sees whole or
in part becomes one step range ``[step_begin, step_end]`` named by that number
(the start clipped to the window's start), so ``analyse(step_list=[2, 3, 4])``
means MindSpore's steps 2 to 4. Nothing changes when no marker is installed;
a failure here is logged once and never reaches the training.

Example::

    watch()                            # before training
    marker = StepMarker(prof)          # prof: the npuprof.Profiler underneath, started
    install(marker)
    model.train(1, data)               # rows ProfilerStep#1, #2 ...
    uninstall(marker)
"""
from __future__ import annotations

import logging
import sys
import time
from typing import Any, Optional

log = logging.getLogger("npuprof")

_marker: Optional["StepMarker"] = None
_last_begin: Optional[tuple[int, int]] = None   # (MindSpore step, perf ns) of the step in progress
_patched = False
_failed = False


class StepMarker:
    """Turns MindSpore's step_begin/step_end pairs into step ranges of one npuprof Profiler."""

    def __init__(self, profiler: Any) -> None:
        self.profiler = profiler
        self.started_ns = time.perf_counter_ns()

    def step_end(self, step: int, begin: Optional[tuple[int, int]]) -> None:
        """Record step ``step`` that began at ``begin`` (step, perf ns), if it was seen and a window records."""
        from npuprof.recorder import active_recorder

        now = time.perf_counter_ns()
        rec = active_recorder()
        session = self.profiler.current_session
        if rec is None or session is None or begin is None or begin[0] != step:
            return
        rec.add_step(step, max(begin[1], self.started_ns), now)
        session.steps.append(step)


def watch() -> bool:
    """Start following ``Model.train``'s steps (once per process); False when MindSpore is not imported.

    Call it before training starts, so that a window started inside a step
    (a user callback's ``step_begin``) knows when that step began.
    """
    return _patch_model_callback()


def install(marker: StepMarker) -> bool:
    """Make ``marker`` the one that gets ``Model.train``'s steps; False when MindSpore is not imported."""
    global _marker
    if not _patch_model_callback():
        return False
    _marker = marker
    return True


def uninstall(marker: StepMarker) -> None:
    """Stop feeding ``marker`` (another marker installed since stays)."""
    global _marker
    if _marker is marker:
        _marker = None


def _notify(ended: bool, run_context: Any) -> None:
    global _failed, _last_begin
    if _failed:
        return
    try:
        step = int(run_context.original_args().cur_step_num)
        if not ended:
            _last_begin = (step, time.perf_counter_ns())
            return
        begin, _last_begin = _last_begin, None
        marker = _marker
        if marker is not None:
            marker.step_end(step, begin)
    except Exception as e:   # never reaches the training
        _failed = True
        log.warning("npuprof: Model.train step rows stopped: %s: %s", type(e).__name__, e)


def _patch_model_callback() -> bool:
    """Wrap MindSpore's framework-profiler callback once (after its own work, both methods)."""
    global _patched
    if _patched:
        return True
    if "mindspore" not in sys.modules:
        return False
    try:
        from mindspore.train import model as ms_model

        cls = ms_model._FrameworkProfilerCallback
    except (ImportError, AttributeError) as e:
        log.info("npuprof: Model.train steps are not marked (%s)", e)
        return False
    begin, end = cls.step_begin, cls.step_end

    def step_begin(self: Any, run_context: Any) -> None:
        begin(self, run_context)
        _notify(False, run_context)

    def step_end(self: Any, run_context: Any) -> None:
        end(self, run_context)
        _notify(True, run_context)

    cls.step_begin, cls.step_end = step_begin, step_end
    _patched = True
    return True
