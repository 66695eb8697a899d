"""Helpers for the MindSpore tests: real MindSpore 2.10 training scenarios on CPU.

Each scenario runs in its own Python process (``run_scenario``) so that
MindSpore's process-wide state (context mode, its profiler singletons) and
the MindSpore npuprof plugin never leak into other tests of the pytest
process. A scenario writes its facts as JSON to ``<out>/scenario.json``;
the tests analyse the run directories with npuprof in the pytest process.

Run one by hand: ``python tests/ms_support.py <scenario> <out_dir> '<json params>'``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve()
N_FEATURES = 16
N_CLASSES = 4


# -- run a scenario in a child process ---------------------------------------------------------------------------
def run_scenario(name: str, out_dir: Path, timeout: float = 300, **params: Any) -> dict:
    """Run ``scenario_<name>`` in a fresh interpreter; return its JSON facts (+ stderr text)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GLOG_v="3", PYTHONUNBUFFERED="1")
    proc = subprocess.run([sys.executable, str(HERE), name, str(out_dir), json.dumps(params)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    facts_file = out_dir / "scenario.json"
    if not facts_file.exists():
        raise AssertionError(f"scenario {name} wrote no facts (exit {proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    facts = json.loads(facts_file.read_text())
    facts["returncode"] = proc.returncode
    facts["stderr"] = proc.stderr
    return facts


# -- pieces used inside the child ----------------------------------------------------------------------------------
def set_mode(mode: str) -> None:
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    ms.set_seed(0)


def make_dataset(n: int = 20, batch: int = 2) -> Any:
    import mindspore.dataset as ds

    def generate() -> Any:
        rng = np.random.default_rng(0)
        for i in range(n):
            # numpy 2: GeneratorDataset needs arrays, not numpy scalars
            yield np.array(rng.random(N_FEATURES), dtype=np.float32), np.array(i % N_CLASSES, dtype=np.int32)

    return ds.GeneratorDataset(generate, ["x", "y"], shuffle=False).batch(batch)


def make_net() -> Any:
    from mindspore import nn

    class MLP(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Dense(N_FEATURES, 32)
            self.relu = nn.ReLU()
            self.fc2 = nn.Dense(32, N_CLASSES)

        def construct(self, x: Any) -> Any:
            return self.fc2(self.relu(self.fc1(x)))

    return MLP()


def make_model(net: Any) -> Any:
    from mindspore import nn
    from mindspore.train import Model

    return Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                 nn.Momentum(net.trainable_params(), 0.01, 0.9))


def _loss_recorder() -> Any:
    from mindspore.train import Callback

    class LossRecorder(Callback):
        def __init__(self) -> None:
            super().__init__()
            self.steps: list = []

        def on_train_step_end(self, run_context: Any) -> None:
            cb = run_context.original_args()
            self.steps.append([int(cb.cur_step_num), float(np.asarray(cb.net_outputs.asnumpy()).mean())])

    return LossRecorder()


def _callback_cls(kind: str) -> Any:
    from npuprof.integrations.mindspore import ProfilerCallback, ProfilerEpochCallback

    return ProfilerEpochCallback if kind == "epoch" else ProfilerCallback


def _schedule(spec: Any) -> Any:
    import npuprof

    return None if spec is None else npuprof.schedule(**spec)


# -- scenarios ------------------------------------------------------------------------------------------------------
def scenario_model_train(out: Path, mode: str = "graph", epochs: int = 2, n: int = 20, kind: str = "step",
                         schedule: Any = None, callback_kwargs: Any = None, sink: bool = False,
                         repeat_train: int = 1) -> dict:
    """Model.train with a ProfilerCallback (or the epoch variant)."""
    set_mode(mode)
    kw = dict(callback_kwargs or {})
    if schedule is not None:
        kw["schedule"] = _schedule(schedule)
    cb = _callback_cls(kind)(str(out / "prof"), activities=["CPU"], **kw)
    losses = _loss_recorder()
    model = make_model(make_net())
    runs = []
    for _ in range(repeat_train):  # the same callback object profiles each train() call
        model.train(epochs, make_dataset(n), callbacks=[cb, losses], dataset_sink_mode=sink)
        runs.append(len(cb.saved_runs))
    return {"saved_runs": [str(p) for p in cb.saved_runs], "analysed": [str(r.run_dir) for r in cb.results],
            "steps_trained": len(losses.steps), "losses": losses.steps, "runs_after_each_train": runs}


def scenario_model_fit(out: Path, mode: str = "graph", epochs: int = 2, n: int = 20,
                       callback_kwargs: Any = None) -> dict:
    """Model.fit with validation every epoch: the callback profiles training only."""
    from mindspore import nn
    from mindspore.train import Accuracy, Model

    set_mode(mode)
    net = make_net()
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  nn.Momentum(net.trainable_params(), 0.01, 0.9), metrics={"acc": Accuracy()})
    cb = _callback_cls("step")(str(out / "prof"), activities=["CPU"], **(callback_kwargs or {}))
    losses = _loss_recorder()
    model.fit(epochs, make_dataset(n), valid_dataset=make_dataset(n), callbacks=[cb, losses],
              dataset_sink_mode=False)
    return {"saved_runs": [str(p) for p in cb.saved_runs], "steps_trained": len(losses.steps)}


def scenario_model_eval(out: Path, mode: str = "graph", n: int = 20, callback_kwargs: Any = None) -> dict:
    """Model.eval with a ProfilerCallback (training before it runs without one)."""
    from mindspore.train import Accuracy

    set_mode(mode)
    net = make_net()
    model = make_model(net)
    model.train(1, make_dataset(n), dataset_sink_mode=False)
    from mindspore import nn
    from mindspore.train import Model

    evaluator = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                      metrics={"acc": Accuracy()})
    cb = _callback_cls("step")(str(out / "prof"), activities=["CPU"], **(callback_kwargs or {}))
    metrics = evaluator.eval(make_dataset(n), callbacks=[cb], dataset_sink_mode=False)
    return {"saved_runs": [str(p) for p in cb.saved_runs], "metrics": metrics}


def scenario_train_raises(out: Path, mode: str = "graph", fail_at: int = 5) -> dict:
    """Training raises at step ``fail_at`` inside the recorded window: the user's error
    reaches the user, the window so far is saved and analysed."""
    from mindspore.train import Callback

    set_mode(mode)

    class Boom(Callback):
        def on_train_step_end(self, run_context: Any) -> None:
            if run_context.original_args().cur_step_num == fail_at:
                raise KeyError("user error at step %d" % fail_at)

    cb = _callback_cls("step")(str(out / "prof"), activities=["CPU"], start_step=2, stop_step=8)
    error = None
    try:
        make_model(make_net()).train(1, make_dataset(20), callbacks=[cb, Boom()], dataset_sink_mode=False)
    except KeyError as e:
        error = repr(e)
    return {"error": error, "saved_runs": [str(p) for p in cb.saved_runs],
            "analysed": [str(r.run_dir) for r in cb.results]}


def scenario_profiling_breaks(out: Path, mode: str = "graph") -> dict:
    """The profiler's output directory disappears mid-window: training still completes."""
    import shutil

    from mindspore.train import Callback

    set_mode(mode)
    prof_dir = out / "prof"

    class Vandal(Callback):
        def on_train_step_end(self, run_context: Any) -> None:
            if run_context.original_args().cur_step_num == 3:
                shutil.rmtree(prof_dir, ignore_errors=True)
                prof_dir.write_text("not a directory any more")

    cb = _callback_cls("step")(str(prof_dir), activities=["CPU"], start_step=2, stop_step=6)
    losses = _loss_recorder()
    make_model(make_net()).train(1, make_dataset(20), callbacks=[cb, Vandal(), losses], dataset_sink_mode=False)
    return {"steps_trained": len(losses.steps), "saved_runs": [str(p) for p in cb.saved_runs]}


def scenario_custom_loop(out: Path, mode: str = "pynative", steps: int = 8) -> dict:
    """A value_and_grad training loop under ``with Profiler()``, with record_function and
    mstx ranges around each step's forward/backward; returns the wall-clock spans measured
    around each step in the loop for the alignment check."""
    import mindspore as ms
    from mindspore import nn

    import npuprof

    set_mode(mode)
    net = make_net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.SGD(net.trainable_params(), 0.05)

    def forward(x: Any, y: Any) -> Any:
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)
    rng = np.random.default_rng(0)
    x = ms.Tensor(rng.random((8, N_FEATURES)).astype(np.float32))
    y = ms.Tensor((np.arange(8) % N_CLASSES).astype(np.int32))
    spans = []
    losses = []
    with npuprof.Profiler(output_path=str(out / "prof"), activities=["CPU"],
                          schedule=npuprof.schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:
        for i in range(steps):
            t0 = time.time_ns()
            with npuprof.record_function(f"forward_backward#{i}"):
                loss, grads = grad_fn(x, y)
                loss.asnumpy()
            rid = npuprof.mstx.range_start(f"optimizer#{i}")
            opt(grads)
            losses.append(float(loss.asnumpy()))
            npuprof.mstx.range_end(rid)
            spans.append([i, t0, time.time_ns()])
            prof.step()
    return {"saved_runs": [str(p) for p in prof.saved_runs], "spans": spans, "losses": losses}


def scenario_plain_mindspore(out: Path, mode: str = "graph") -> dict:
    """Plain mindspore.profiler (no npuprof) around Model.train, analysed by MindSpore itself."""
    from mindspore.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
    from mindspore.train import Callback

    set_mode(mode)
    target = out / "ms_data"

    class StepProf(Callback):
        def __init__(self, prof: Any) -> None:
            super().__init__()
            self.prof = prof

        def on_train_step_end(self, run_context: Any) -> None:
            self.prof.step()

    prof = profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                   on_trace_ready=tensorboard_trace_handler(str(target)))
    make_model(make_net()).train(1, make_dataset(20), callbacks=[StepProf(prof)], dataset_sink_mode=False)
    prof.stop()
    return {"dirs": sorted(str(p) for p in target.glob("*_ascend_ms"))}


def scenario_coexist(out: Path) -> dict:
    """The user's own mindspore.profiler session runs: npuprof leaves it alone, says so once,
    and still records its host events; MindSpore's session keeps its data."""
    import mindspore as ms
    from mindspore.profiler import ProfilerActivity, profile, tensorboard_trace_handler

    import npuprof

    set_mode("pynative")
    net = make_net()
    x = ms.Tensor(np.ones((2, N_FEATURES), dtype=np.float32))
    ms_prof = profile(activities=[ProfilerActivity.CPU], start_profile=False,
                      on_trace_ready=tensorboard_trace_handler(str(out / "ms_own"), analyse_flag=False))
    ms_prof.start()
    with npuprof.Profiler(output_path=str(out / "prof"), activities=["CPU"]) as prof:
        for _ in range(3):
            with npuprof.record_function("fwd"):
                net(x).asnumpy()
            prof.step()
    ms_prof.stop()
    return {"saved_runs": [str(p) for p in prof.saved_runs],
            "ms_files": sorted(str(p) for p in (out / "ms_own").glob("*_ascend_ms/FRAMEWORK/cpu_op_execute*"))}


def scenario_sink_units(out: Path, sink_size: int = 4, sinks: int = 5, kind: str = "step",
                        window: Any = None) -> dict:
    """The callback driven the way Model._train_dataset_sink_process drives it on an NPU:
    a real RunContext whose cur_step_num advances by sink_size per step_end, with a real
    MindSpore training step executed sink_size times inside each "sink"."""
    import mindspore as ms
    from mindspore import nn
    from mindspore.train.callback import RunContext
    from mindspore.train.callback._callback import InternalCallbackParam

    set_mode("graph")
    net = make_net()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                                      reduction="mean")),
                               nn.Momentum(net.trainable_params(), 0.01, 0.9))
    x = ms.Tensor(np.random.default_rng(0).random((2, N_FEATURES)).astype(np.float32))
    y = ms.Tensor(np.array([0, 1], dtype=np.int32))
    cb = _callback_cls(kind)(str(out / "prof"), activities=["CPU"], **(window or {"start_step": 6, "stop_step": 13}))
    # Model.train(epoch=sinks, sink_size=sink_size): batch_num = sink_size, one sink per epoch
    params = InternalCallbackParam()
    params.cur_step_num = 0
    params.epoch_num = sinks
    params.batch_num = sink_size
    params.sink_size = sink_size
    params.dataset_sink_mode = True
    params.mode = "train"
    ctx = RunContext(params)
    with cb:
        cb.on_train_begin(ctx)
        for epoch in range(1, sinks + 1):
            params.cur_epoch_num = epoch
            cb.on_train_epoch_begin(ctx)
            params.cur_step_num += sink_size
            cb.on_train_step_begin(ctx)
            for _ in range(sink_size):
                step(x, y).asnumpy()
            cb.on_train_step_end(ctx)
            cb.on_train_epoch_end(ctx)
        cb.on_train_end(ctx)
    return {"saved_runs": [str(p) for p in cb.saved_runs]}


def scenario_bad_inputs(out: Path) -> dict:
    """Bad callback / parity arguments: each must raise ProfilerConfigError at construction.
    Returns case -> [exception type, param, message] (or None when nothing was raised)."""
    import mindspore  # noqa: F401  (the callbacks subclass mindspore.train.Callback)
    from mindspore.profiler import HostSystem as MsHostSystem
    from mindspore.profiler import schedule as ms_schedule
    from mindspore.profiler import tensorboard_trace_handler as ms_handler

    from npuprof.integrations.mindspore import ProfilerCallback, ProfilerEpochCallback, profile

    p = str(out / "prof")
    cases = {
        "stop_before_start": lambda: ProfilerCallback(p, start_step=5, stop_step=3),
        "start_step_zero": lambda: ProfilerCallback(p, start_step=0, stop_step=3),
        "stop_without_start": lambda: ProfilerCallback(p, stop_step=3),
        "start_and_schedule": lambda: ProfilerCallback(p, start_step=1, stop_step=2,
                                                       schedule=_schedule({"wait": 0, "active": 1})),
        "unknown_activity": lambda: ProfilerCallback(p, activities=["TPU"]),
        "level_mindspore_lacks": lambda: ProfilerCallback(p, profiler_level="Level3"),
        "bad_rank_ids": lambda: ProfilerCallback(p, profile_rank_ids="0"),
        "epoch_stop_before_start": lambda: ProfilerEpochCallback(p, start_epoch=3, stop_epoch=2),
        "start_profile_true": lambda: ProfilerCallback(p, start_profile=True),
        "retired_keyword": lambda: ProfilerCallback(p, profile_communication=True),
        "record_shapes_without_cpu": lambda: ProfilerCallback(p, activities=["NPU"], record_shapes=True),
        "npu_only_switch_on_cpu": lambda: ProfilerCallback(p, pcie=True),
        "mindspore_trace_handler": lambda: ProfilerCallback(p, on_trace_ready=ms_handler(p, analyse_flag=False)),
        "host_sys_osrt": lambda: ProfilerCallback(p, host_sys=[MsHostSystem.OSRT]),
        "metrics_at_level0": lambda: profile(output_path=p, profiler_level="Level0", aic_metrics="PipeUtilization",
                                             start_profile=False),
        "levelnone_without_mstx": lambda: profile(output_path=p, profiler_level="LevelNone", start_profile=False),
        "bad_schedule_int": lambda: profile(output_path=p, schedule=3, start_profile=False),
        "mindspore_schedule_ok": lambda: profile(output_path=p, start_profile=False,
                                                 schedule=ms_schedule(wait=1, active=2, warmup=1, repeat=1)),
    }
    result = {}
    for name, make in cases.items():
        try:
            make()
        except Exception as e:  # record what was raised; the test judges it
            result[name] = [type(e).__name__, getattr(e, "param", None), str(e)]
        else:
            result[name] = None
    return {"cases": result}


def scenario_parity(out: Path) -> dict:
    """MindSpore's own enums and _ExperimentalConfig accepted and mapped; the Profiler built
    from them records real ops (CPU)."""
    from mindspore.profiler import (AicoreMetrics, ExportType, HostSystem, ProfilerActivity, ProfilerLevel,
                                    _ExperimentalConfig)

    from npuprof.integrations.mindspore import profile

    set_mode("pynative")
    net = make_net()
    import mindspore as ms

    x = ms.Tensor(np.ones((2, N_FEATURES), dtype=np.float32))
    exp = _ExperimentalConfig(profiler_level=ProfilerLevel.Level1, aic_metrics=AicoreMetrics.ArithmeticUtilization,
                              export_type=[ExportType.Text, ExportType.Db], host_sys=[HostSystem.CPU, HostSystem.MEM],
                              data_simplification=False)
    with profile(output_path=str(out / "prof"), activities=[ProfilerActivity.CPU], experimental_config=exp,
                 with_stack=False, profile_memory=True) as prof:
        for _ in range(3):
            net(x).asnumpy()
    cfg = prof.config
    return {"saved_runs": [str(p) for p in prof.saved_runs],
            "config": {"activities": [str(a) for a in cfg.activities], "profiler_level": str(cfg.profiler_level),
                       "aic_metrics": str(cfg.aic_metrics), "export_type": [str(e) for e in cfg.export_type],
                       "host_sys": [str(h) for h in cfg.host_sys], "data_simplification": cfg.data_simplification}}


def main(argv: list) -> int:
    name, out_dir, params = argv[1], Path(argv[2]), json.loads(argv[3]) if len(argv) > 3 else {}
    out_dir.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(HERE.parent))
    import logging

    logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
    try:
        facts = globals()[f"scenario_{name}"](out_dir, **params)
        facts["ok"] = True
    except BaseException:  # the parent reports it with the child's traceback
        facts = {"ok": False, "traceback": traceback.format_exc()}
    (out_dir / "scenario.json").write_text(json.dumps(facts, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))


class Ctx:
    """The ParseContext fields the plugin uses (info + warn)."""

    def __init__(self, info: dict = None, run_dir: str = ".") -> None:
        from pathlib import Path

        from npuprof.runinfo import RunInfo

        self.info = RunInfo.from_dict(Path(run_dir), info or {})
        self.warnings: list = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)
