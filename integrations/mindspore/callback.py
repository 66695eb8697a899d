"""``mindspore.train.Callback``s that drive an :class:`npuprof.Profiler`.

Add one callback to ``Model.train`` (or ``Model.eval``) and get
step-scheduled capture: the callback starts the profiler when the run
begins, calls ``step()`` from every ``step_end`` and stops (and analyses)
when the run ends, normally or with an exception. Profiling problems are
logged once and never make training fail; bad arguments raise
:class:`~npuprof.ProfilerConfigError` when the callback is created.

Choosing the steps (MindSpore's step numbers, 1-based, ``cb_params.cur_step_num``):

* ``start_step``/``stop_step``: one window holding steps start..stop;
* ``schedule=npuprof.schedule(...)``: torch/MindSpore schedule over the
  callback's steps (0-based: the first ``step_end`` ends step 0);
* neither: one window over the whole run;
* :class:`ProfilerEpochCallback` (``start_epoch``/``stop_epoch``): one
  window over whole epochs.

Dataset sink mode: MindSpore calls ``step_end`` once per sink
(``sink_size`` steps), so a callback step is one sink, windows are widened
to whole sinks, and a schedule counts sinks. (On CPU MindSpore falls back
to non-sink mode.)

Example::

    from npuprof import schedule
    from npuprof.integrations.mindspore import ProfilerCallback

    cb = ProfilerCallback(output_path="./prof", activities=["CPU"],
                          schedule=schedule(wait=1, warmup=1, active=2, repeat=2))
    model.train(3, dataset, callbacks=[cb])
    for res in cb.results:
        print(res.run_dir, res.tables["op_statistic"].rows()[:3])
"""
from __future__ import annotations

import logging
from typing import Any, Literal, Optional

from mindspore.train import Callback

from npuprof.enums import ProfilerAction
from npuprof.errors import ProfilerConfigError, ProfilerError
from npuprof.types import PathLike, RankList, ScheduleFn
from npuprof.validate import check_bool, check_int

from .options import attach_mindspore_options, from_mindspore_kwargs

log = logging.getLogger("npuprof")
A = ProfilerAction


# -- which callback steps are recorded -------------------------------------------------------------------------
class _Plan:
    """Training-step bookkeeping shared by the window rules.

    A *unit* is what one ``step_end`` closes: one training step, or one sink
    of ``sink_size`` steps in dataset sink mode. Unit ``k`` covers MindSpore
    steps ``lo+1 .. hi``.
    """

    def __init__(self) -> None:
        self.first_step = 0        # cur_step_num before the first unit
        self.last_end = 0          # cur_step_num after the last finished unit
        self.unit = 1              # training steps per unit (observed)
        self.per_epoch: Optional[int] = None
        self.first_epoch = 1
        self.total: Optional[int] = None   # cur_step_num after the last unit, when predictable

    def begin(self, cb: Any, epoch: int, epochs: int) -> None:
        cur = int(cb.get("cur_step_num", 0) or 0)
        self.first_step = self.last_end = cur
        self.first_epoch = epoch
        batch_num = _positive(cb.get("batch_num"))
        sink_graph = bool(cb.get("dataset_sink_mode")) and _graph_mode()
        per_epoch = batch_num
        if not cb.get("dataset_sink_mode"):
            # CPU falls back to non-sink mode but keeps batch_num = sink_size: ask the dataset
            size = _dataset_size(cb.get("train_dataset") if cb.get("mode", "train") == "train" else None)
            per_epoch = size or batch_num
        self.per_epoch = per_epoch
        self.unit = (per_epoch or 1) if sink_graph else 1
        self.total = cur + epochs * per_epoch if per_epoch else None

    def finish_unit(self, cb: Any) -> None:
        cur = int(cb.get("cur_step_num", self.last_end + self.unit) or 0)
        if cur > self.last_end:
            self.unit = cur - self.last_end
        self.last_end = cur

    def next_unit(self) -> tuple[int, int]:
        lo = self.last_end
        hi = lo + self.unit
        if self.total is not None and lo < self.total:
            hi = min(hi, self.total)
        return lo, hi

    def epoch_of(self, step: int) -> int:
        if not self.per_epoch:
            return self.first_epoch
        return self.first_epoch + (step - self.first_step - 1) // self.per_epoch

    def epoch_end(self, epoch: int) -> Optional[int]:
        if not self.per_epoch:
            return None
        return self.first_step + (epoch - self.first_epoch + 1) * self.per_epoch


class _StepWindow:
    """Record MindSpore steps ``start .. stop`` (``stop=None``: to the end)."""

    def __init__(self, start: int, stop: Optional[int]) -> None:
        self.start, self.stop = start, stop

    def action(self, plan: _Plan) -> ProfilerAction:
        lo, hi = plan.next_unit()
        stop = self.stop if plan.total is None else min(plan.total, self.stop or plan.total)
        if hi < self.start or (stop is not None and lo >= stop):
            return A.NONE
        return A.RECORD_AND_SAVE if stop is not None and hi >= stop else A.RECORD

    def to_dict(self) -> dict:
        return {"start_step": self.start, "stop_step": self.stop}


class _EpochWindow:
    """Record every step of epochs ``start .. stop`` (1-based, ``cur_epoch_num``)."""

    def __init__(self, start: int, stop: int) -> None:
        self.start, self.stop = start, stop

    def action(self, plan: _Plan) -> ProfilerAction:
        lo, hi = plan.next_unit()
        epoch = plan.epoch_of(hi)
        if epoch < self.start or epoch > self.stop:
            return A.NONE
        end = plan.epoch_end(self.stop)
        last = (end is not None and epoch == self.stop and hi >= end) or \
            (plan.total is not None and hi >= plan.total)
        return A.RECORD_AND_SAVE if last else A.RECORD

    def to_dict(self) -> dict:
        return {"start_epoch": self.start, "stop_epoch": self.stop}


class _PlannedSchedule:
    """The Profiler's schedule: asks the window about the unit that begins now."""

    def __init__(self, window: Any) -> None:
        self.window = window
        self.plan = _Plan()

    def __call__(self, step: int) -> ProfilerAction:
        return self.window.action(self.plan)

    def to_dict(self) -> dict:
        return {"callback_window": self.window.to_dict()}

    def __repr__(self) -> str:
        return f"callback window {self.window.to_dict()}"


# -- the callbacks ---------------------------------------------------------------------------------------------
class _ProfilerCallbackBase(Callback):
    """Shared machinery; use :class:`ProfilerCallback` or :class:`ProfilerEpochCallback`."""

    def __init__(self, output_path: Any, window: Any, schedule: Any, profile_rank_ids: Any, analyse: Any,
                 profiler_kwargs: dict) -> None:
        super().__init__()
        import npuprof

        self._rank_ids = _check_rank_ids(profile_rank_ids)
        self._analyse = None if analyse is None else check_bool("analyse", analyse)
        start_profile = profiler_kwargs.pop("start_profile", False)
        if start_profile is not False:
            raise ProfilerConfigError("start_profile", start_profile, "False (the callback starts the profiler "
                                      "when training or evaluation begins)")
        kw = from_mindspore_kwargs(schedule=schedule, **profiler_kwargs)
        ms_opts = kw.pop("mindspore_options", None)
        self._planned = _PlannedSchedule(window) if kw.get("schedule") is None else None
        if self._planned is not None:
            kw["schedule"] = self._planned
        if output_path is not None:
            kw["output_path"] = output_path
        self.profiler = npuprof.Profiler(start_profile=False, **kw)
        if ms_opts:
            attach_mindspore_options(self.profiler, ms_opts)
        self.results: list = []
        self._phase: Optional[str] = None
        self._running = False
        self._disabled = False
        self._depth = 0
        self._warned: set = set()

    # -- what users read -----------------------------------------------------------------------------------
    @property
    def saved_runs(self) -> list:
        """Run directories of the windows saved so far."""
        return list(self.profiler.saved_runs)

    # -- MindSpore hooks ----------------------------------------------------------------------------------
    def __enter__(self) -> "_ProfilerCallbackBase":
        self._depth += 1
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and self._running:
            # on_train_end/on_eval_end were skipped: the run raised
            self._guard("exit", self._finish, exc_type is not None)
        return False

    def on_train_epoch_begin(self, run_context: Any) -> None:
        if self._phase is None:
            cb = run_context.original_args()
            self._guard("begin", self._begin, "train", cb, int(cb.get("cur_epoch_num", 1) or 1),
                        int(cb.get("epoch_num", 1) or 1))

    def on_train_step_end(self, run_context: Any) -> None:
        if self._phase == "train":
            self._guard("step", self._step, run_context.original_args())

    def on_train_end(self, run_context: Any) -> None:
        if self._phase == "train":
            self._guard("end", self._finish, False)

    def on_eval_begin(self, run_context: Any) -> None:
        if self._phase is None:
            self._guard("begin", self._begin, "eval", run_context.original_args(), 1, 1)

    def on_eval_step_end(self, run_context: Any) -> None:
        if self._phase == "eval":
            self._guard("step", self._step, run_context.original_args())

    def on_eval_end(self, run_context: Any) -> None:
        if self._phase == "eval":
            self._guard("end", self._finish, False)

    # -- internals ------------------------------------------------------------------------------------
    def _guard(self, where: str, fn: Any, *args: Any) -> None:
        """Run ``fn``; a failure is logged once and profiling stops, training goes on."""
        if self._disabled:
            return
        try:
            fn(*args)
        except Exception as e:  # never let profiling break the training loop
            self._disabled = True
            log.warning("npuprof: %s failed in %s (%s: %s); profiling stops, training goes on",
                        type(self).__name__, where, type(e).__name__, e)
            if self._running:
                self._running = False
                try:
                    self.profiler.stop()
                except Exception:
                    pass

    def _begin(self, phase: str, cb: Any, epoch: int, epochs: int) -> None:
        self._phase = phase
        if self._rank_ids is not None:
            rank = _current_rank(self.profiler.config.rank)
            if rank not in self._rank_ids:
                log.info("npuprof: rank %d is not in profile_rank_ids %s; not profiling", rank, self._rank_ids)
                return
        if self._planned is not None:
            self._planned.plan.begin(cb, epoch, epochs)
        try:
            self.profiler.start()
        except ProfilerError as e:
            log.warning("npuprof: %s cannot start the profiler (%s); training goes on without it",
                        type(self).__name__, e)
            return
        self._running = True

    def _step(self, cb: Any) -> None:
        if not self._running:
            return
        if self._planned is not None:
            self._planned.plan.finish_unit(cb)
        self.profiler.step()

    def _finish(self, failed: bool) -> None:
        self._phase = None  # the same callback may profile a later train/eval run again
        if not self._running:
            return
        self._running = False
        if failed:
            log.warning("npuprof: training raised; saving the profiling collected so far")
        self.profiler.stop()
        if not self.profiler.saved_runs and self._planned is not None:
            log.warning("npuprof: no step of this run fell in the window %s (%d steps ran); nothing was recorded",
                        self._planned.window.to_dict(), self._planned.plan.last_end - self._planned.plan.first_step)
        analyse = self._analyse if self._analyse is not None else self.profiler.config.on_trace_ready is None
        if analyse and self.profiler.saved_runs:
            self.results.extend(self.profiler.analyse())


class ProfilerCallback(_ProfilerCallbackBase):
    """Step-scheduled npuprof capture for ``Model.train`` / ``Model.eval``.

    Parameters: everything :class:`npuprof.Profiler` takes (MindSpore's
    keyword names and enum values accepted, e.g. ``ProfilerLevel.Level1``,
    ``experimental_config=_ExperimentalConfig(...)``), plus

    ``start_step``, ``stop_step``
        MindSpore step numbers (1-based, inclusive) of the one window to record;
    ``schedule``
        an :func:`npuprof.schedule` over callback steps (0-based), instead;
    ``profile_rank_ids``
        ranks that profile (others run untouched); default all;
    ``analyse``
        analyse the saved windows when the run ends (default: when no
        ``on_trace_ready`` is given). Results land in :attr:`results`.

    Example::

        cb = ProfilerCallback(output_path="./prof", start_step=3, stop_step=5, profile_rank_ids=[0])
        model.train(1, dataset, callbacks=[cb])
        print(cb.saved_runs)
    """

    def __init__(self, output_path: Optional[PathLike] = None, *, start_step: Optional[int] = None,
                 stop_step: Optional[int] = None, schedule: Optional[ScheduleFn] = None,
                 profile_rank_ids: Optional[RankList] = None, analyse: Optional[bool] = None,
                 **profiler_kwargs: Any) -> None:
        window = None
        if start_step is not None or stop_step is not None:
            if schedule is not None:
                raise ProfilerConfigError("schedule", schedule, "None when start_step/stop_step are given "
                                          "(use one or the other)")
            if start_step is None:
                raise ProfilerConfigError("start_step", None, "an integer >= 1 when stop_step is given")
            start = check_int("start_step", start_step, minimum=1)
            if stop_step is None:
                raise ProfilerConfigError("stop_step", None, f"an integer >= start_step ({start})")
            stop = check_int("stop_step", stop_step, minimum=start)
            window = _StepWindow(start, stop)
        elif schedule is None:
            window = _StepWindow(1, None)
        super().__init__(output_path, window, schedule, profile_rank_ids, analyse, profiler_kwargs)


class ProfilerEpochCallback(_ProfilerCallbackBase):
    """Record whole epochs ``start_epoch .. stop_epoch`` (1-based, inclusive) of ``Model.train``.

    Takes the :class:`npuprof.Profiler` arguments and ``profile_rank_ids``/
    ``analyse`` like :class:`ProfilerCallback`; every step of the epochs is a
    ``ProfilerStep`` row of one window.

    Example::

        cb = ProfilerEpochCallback(output_path="./prof", start_epoch=2, stop_epoch=2)
        model.train(3, dataset, callbacks=[cb])
    """

    def __init__(self, output_path: Optional[PathLike] = None, *, start_epoch: int = 1,
                 stop_epoch: Optional[int] = None, profile_rank_ids: Optional[RankList] = None,
                 analyse: Optional[bool] = None, **profiler_kwargs: Any) -> None:
        start = check_int("start_epoch", start_epoch, minimum=1)
        if stop_epoch is None:
            raise ProfilerConfigError("stop_epoch", None, f"an integer >= start_epoch ({start})")
        stop = check_int("stop_epoch", stop_epoch, minimum=start)
        if "schedule" in profiler_kwargs:
            raise ProfilerConfigError("schedule", profiler_kwargs["schedule"],
                                      "no schedule (epochs choose the window; use ProfilerCallback for schedules)")
        super().__init__(output_path, _EpochWindow(start, stop), None, profile_rank_ids, analyse, profiler_kwargs)


# -- helpers ---------------------------------------------------------------------------------------------------
def _check_rank_ids(value: Any) -> Optional[frozenset]:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)) or not value:
        raise ProfilerConfigError("profile_rank_ids", value, "None or a non-empty list of rank ids (integers >= 0)")
    for r in value:
        check_int("profile_rank_ids", r, minimum=0)
    return frozenset(value)


def _current_rank(default: int) -> int:
    """MindSpore's rank when its communication is initialised, else the configured/env rank."""
    try:
        from mindspore.communication import get_rank
        from mindspore.communication.management import GlobalComm

        if getattr(GlobalComm, "INITED", False):
            return int(get_rank())
    except Exception:
        pass
    return int(default)


def _graph_mode() -> bool:
    try:
        import mindspore

        return mindspore.get_context("mode") == mindspore.GRAPH_MODE
    except Exception:
        return False


def _dataset_size(dataset: Any) -> Optional[int]:
    if dataset is None:
        return None
    try:
        return _positive(dataset.get_dataset_size())
    except Exception:
        return None


def _positive(value: Any) -> Optional[int]:
    try:
        v = int(value)
    except (TypeError, ValueError):
        return None
    return v if v > 0 else None
