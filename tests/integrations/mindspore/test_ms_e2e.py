"""End to end with real MindSpore 2.10 on CPU: Model.train with the callbacks, a custom
value_and_grad loop, plain mindspore.profiler output, bad input.

Training runs in child processes (tests/ms_support.py); the run directories are
analysed here with npuprof, as a user would after the fact.
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import npuprof
from npuprof.events import EventKind
from npuprof.readers.time_text import us_text_to_ns

from ms_support import run_scenario

pytestmark = pytest.mark.slow

SCHEDULE = {"wait": 1, "warmup": 1, "active": 2, "repeat": 2}
# MindSpore CPU ops of the MLP train step (forward, backward, optimizer)
COMPUTE_TYPES = {"MatMul", "BiasAdd"}


def ok(facts: dict) -> dict:
    assert facts.get("ok"), facts.get("traceback", "") + facts.get("stderr", "")[-4000:]
    assert facts["returncode"] == 0, facts["stderr"][-4000:]
    return facts


def analyse(run_dir: str, output_path=None):
    """npuprof's own runs are written in place; MindSpore's own directories (read-only) under the test's tmp."""
    import tempfile

    from npuprof.runinfo import origin_of, RunOrigin

    if output_path is None and origin_of(Path(run_dir)) is not RunOrigin.NPUPROF:
        output_path = Path(tempfile.mkdtemp())
    (res,) = npuprof.analyse(run_dir, output_path=output_path)
    return res


def step_numbers(res) -> list:
    return [int(r[0]) for r in res.tables["step_trace_time"].rows()]


def op_stats(res) -> dict:
    return {rec["OP Type"]: rec for rec in res.tables["op_statistic"].records()}


def assert_real_compute_ops(res) -> None:
    stats = op_stats(res)
    assert COMPUTE_TYPES <= set(stats), stats.keys()
    for typ in COMPUTE_TYPES:
        assert stats[typ]["Count"] > 0 and stats[typ]["Min Time(us)"] > 0
    kd = res.tables["kernel_details"].records()
    assert {r["Type"] for r in kd} >= COMPUTE_TYPES
    assert all(r["Duration(us)"] > 0 for r in kd if r["Type"] in COMPUTE_TYPES)


# -- Model.train + ProfilerCallback(schedule) ---------------------------------------------------------------------
@pytest.fixture(scope="module", params=["graph", "pynative"])
def scheduled_training(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"sched_{request.param}")
    return request.param, ok(run_scenario("model_train", out, mode=request.param, epochs=1, n=20,
                                          schedule=SCHEDULE))


def test_schedule_saves_one_window_per_cycle(scheduled_training):
    _, facts = scheduled_training
    assert facts["steps_trained"] == 10
    assert len(facts["saved_runs"]) == 2, facts["stderr"][-3000:]  # repeat=2 cycles of wait1/warmup1/active2
    assert facts["analysed"] == facts["saved_runs"]          # no on_trace_ready: analysed at train end


def test_schedule_windows_hold_the_active_steps_and_real_ops(scheduled_training):
    mode, facts = scheduled_training
    expected = [[2, 3], [6, 7]]
    for run, steps in zip(facts["saved_runs"], expected):
        res = analyse(run)
        assert step_numbers(res) == steps
        assert_real_compute_ops(res)
        ops = res.events.of_kind(EventKind.OP)
        assert set(ops["step"].tolist()) == set(steps), f"{mode}: host ops outside the recorded steps"
        # the same number of each op in every step of a window (same network, same batch shape)
        per_step = {s: sorted(ops.select(ops["step"] == s).column_strings("type")) for s in steps}
        assert per_step[steps[0]] == per_step[steps[1]]
        assert (Path(run) / "FRAMEWORK").is_dir() and any((Path(run) / "FRAMEWORK").glob("cpu_op_execute_*"))
        trace = json.loads((Path(run) / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
        names = {e.get("name") for e in trace["traceEvents"]}
        assert f"ProfilerStep#{steps[0]}" in names and any(n and n.endswith("MatMul-op0") or n == "MatMul"
                                                            for n in names)


# -- start/stop steps, epochs, ranks --------------------------------------------------------------------------------
def test_start_stop_steps_record_exactly_those_steps(tmp_path):
    facts = ok(run_scenario("model_train", tmp_path, epochs=2, n=20, repeat_train=2,
                            callback_kwargs={"start_step": 3, "stop_step": 7}))
    assert facts["steps_trained"] == 40
    assert facts["runs_after_each_train"] == [1, 2]          # one window per train() call
    for run in facts["saved_runs"]:
        res = analyse(run)
        assert step_numbers(res) == [2, 3, 4, 5, 6]          # ProfilerStep#k ends MindSpore step k+1
        assert_real_compute_ops(res)


def test_stop_step_beyond_the_run_ends_the_window_with_the_run(tmp_path):
    facts = ok(run_scenario("model_train", tmp_path / "long", epochs=1, n=12,
                            callback_kwargs={"start_step": 4, "stop_step": 100}))
    res = analyse(facts["saved_runs"][0])
    assert step_numbers(res) == [3, 4, 5]                    # steps 4..6, no empty trailing step
    assert res.info.partial is False
    late = ok(run_scenario("model_train", tmp_path / "late", epochs=1, n=12,
                           callback_kwargs={"start_step": 50, "stop_step": 60}))
    assert late["saved_runs"] == [] and "no step of this run fell in the window" in late["stderr"]


def test_epoch_callback_records_whole_epochs(tmp_path):
    facts = ok(run_scenario("model_train", tmp_path, epochs=3, n=20, kind="epoch",
                            callback_kwargs={"start_epoch": 2, "stop_epoch": 2}))
    assert facts["steps_trained"] == 30 and len(facts["saved_runs"]) == 1
    res = analyse(facts["saved_runs"][0])
    assert step_numbers(res) == list(range(10, 20))           # epoch 2 = MindSpore steps 11..20
    assert_real_compute_ops(res)


def test_whole_run_without_schedule_and_ranks_filter(tmp_path):
    facts = ok(run_scenario("model_train", tmp_path / "all", epochs=1, n=12))
    res = analyse(facts["saved_runs"][0])
    assert step_numbers(res) == list(range(6))                # every step, no trailing empty step
    other = ok(run_scenario("model_train", tmp_path / "rank", epochs=1, n=12,
                            callback_kwargs={"profile_rank_ids": [1, 2]}))
    assert other["steps_trained"] == 6 and other["saved_runs"] == []
    assert not any((tmp_path / "rank" / "prof").glob("*_ascend_ms"))


def test_fit_with_validation_keeps_one_training_window(tmp_path):
    # the window spans the end of epoch 1, where Model.fit evaluates with the same callbacks
    facts = ok(run_scenario("model_fit", tmp_path, epochs=2, n=20,
                            callback_kwargs={"start_step": 8, "stop_step": 13}))
    assert facts["steps_trained"] == 20 and len(facts["saved_runs"]) == 1
    res = analyse(facts["saved_runs"][0])
    assert step_numbers(res) == [7, 8, 9, 10, 11, 12]
    stats = op_stats(res)
    # 6 training steps of 2 BiasAdd each + the 10 evaluation steps (2 BiasAdd each) of epoch 1
    assert stats["BiasAdd"]["Count"] == 6 * 2 + 10 * 2 and stats["ApplyMomentum"]["Count"] == 6 * 4


def test_model_eval_is_profiled_by_the_same_callback(tmp_path):
    facts = ok(run_scenario("model_eval", tmp_path, n=20, callback_kwargs={"start_step": 2, "stop_step": 4}))
    assert "acc" in facts["metrics"]
    (run,) = facts["saved_runs"]
    res = analyse(run)
    assert step_numbers(res) == [1, 2, 3]
    stats = op_stats(res)
    assert COMPUTE_TYPES <= set(stats)
    assert "ApplyMomentum" not in stats                       # evaluation: forward only


def test_sink_mode_windows_cover_whole_sinks(tmp_path):
    # cur_step_num advances by sink_size=4 per step_end, as on an NPU in sink mode;
    # steps 6..13 lie in the sinks (4,8], (8,12], (12,16]
    facts = ok(run_scenario("sink_units", tmp_path, sink_size=4, sinks=5))
    (run,) = facts["saved_runs"]
    res = analyse(run)
    assert step_numbers(res) == [1, 2, 3]
    ops = res.events.of_kind(EventKind.OP)
    matmul = ops.select(ops.string_array("type") == "MatMul")
    counts = np.bincount(matmul["step"], minlength=4)[1:]
    assert counts.tolist() == [counts[0]] * 3 and counts[0] % 4 == 0   # 4 training steps per sink
    epochs = ok(run_scenario("sink_units", tmp_path / "epochs", sink_size=4, sinks=5, kind="epoch",
                             window={"start_epoch": 2, "stop_epoch": 3}))
    (run,) = epochs["saved_runs"]
    assert step_numbers(analyse(run)) == [1, 2]                # one sink per epoch


# -- failures -------------------------------------------------------------------------------------------------------
def test_training_error_reaches_the_user_and_the_window_is_kept(tmp_path):
    facts = ok(run_scenario("train_raises", tmp_path, fail_at=5))
    assert facts["error"] == "KeyError('user error at step 5')"
    (run,) = facts["saved_runs"]
    assert facts["analysed"] == [run]
    res = analyse(run)
    assert step_numbers(res)[:4] == [1, 2, 3, 4]             # MindSpore steps 2..5 ran before the error
    assert res.info.partial is True
    assert_real_compute_ops(res)


def test_profiling_failure_never_stops_training(tmp_path):
    facts = ok(run_scenario("profiling_breaks", tmp_path))
    assert facts["steps_trained"] == 10
    assert "npuprof WARNING" in facts["stderr"]               # the user was told


# -- custom loop: value_and_grad under `with Profiler()`, one time base ---------------------------------------------
@pytest.fixture(scope="module")
def custom_loop(tmp_path_factory):
    facts = ok(run_scenario("custom_loop", tmp_path_factory.mktemp("loop"), steps=8))
    (run,) = facts["saved_runs"]
    return facts, analyse(run)


def test_custom_loop_records_the_active_steps_with_real_ops(custom_loop):
    facts, res = custom_loop
    assert step_numbers(res) == [2, 3, 4]
    assert_real_compute_ops(res)
    assert facts["losses"][-1] < facts["losses"][0]          # it really trained


def test_mindspore_op_times_share_npuprof_time_base(custom_loop):
    """MindSpore stamps ops with the wall clock; npuprof converts its monotonic stamps to the
    wall clock. Every op of step i lies inside the wall-clock span measured around step i
    in the loop, inside ProfilerStep#i, and the forward/backward ops inside the user's
    record_function range of that step."""
    facts, res = custom_loop
    ev = res.events
    ops = ev.of_kind(EventKind.OP)
    steps = ev.of_kind(EventKind.STEP)
    ranges = ev.of_kind(EventKind.RANGE)
    spans = {i: (t0, t1) for i, t0, t1 in facts["spans"]}
    step_span = {int(n.split("#")[1]): (t, t + d) for n, t, d in
                 zip(steps.column_strings("name"), steps["ts"].tolist(), steps["dur"].tolist())}
    rng = {n: (t, t + d) for n, t, d in zip(ranges.column_strings("name"), ranges["ts"].tolist(),
                                            ranges["dur"].tolist())}
    for i in (2, 3, 4):
        sel = ops.select(ops["step"] == i)
        assert len(sel) > 0
        start, end = sel["ts"], sel["ts"] + sel["dur"]
        t0, t1 = spans[i]
        assert start.min() >= t0 and end.max() <= t1
        s0, s1 = step_span[i]
        assert start.min() >= s0 and end.max() <= s1
        fb0, fb1 = rng[f"forward_backward#{i}"]
        fwd = sel.select(np.isin(sel.string_array("type"), ["MatMul", "BiasAdd", "ReLU"]))
        assert len(fwd) and fwd["ts"].min() >= fb0 and (fwd["ts"] + fwd["dur"]).max() <= fb1
        o0, o1 = rng[f"optimizer#{i}"]
        sgd = sel.select(sel.string_array("type") == "SGD")
        assert len(sgd) and sgd["ts"].min() >= o0 and (sgd["ts"] + sgd["dur"]).max() <= o1


def test_a_running_mindspore_profiler_session_is_left_alone(tmp_path):
    facts = ok(run_scenario("coexist", tmp_path))
    assert "mindspore.profiler session is already running" in facts["stderr"]
    assert len(facts["ms_files"]) == 1                       # the user's MindSpore data is intact
    res = analyse(facts["saved_runs"][0])
    assert not (Path(facts["saved_runs"][0]) / "FRAMEWORK").exists()
    assert [r[0] for r in res.tables["range_statistic"].rows()] == ["fwd"]
    assert step_numbers(res) == [0, 1, 2, 3]                 # no schedule: stop() closes the open step


# -- a directory from plain mindspore.profiler -----------------------------------------------------------------------
def test_npuprof_analyse_cli_reads_plain_mindspore_output(tmp_path):
    facts = ok(run_scenario("plain_mindspore", tmp_path))
    (ms_dir,) = facts["dirs"]
    ms_dir = Path(ms_dir)
    assert (ms_dir / "FRAMEWORK").is_dir() and (ms_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").exists()
    assert not (ms_dir / "NPUPROF").exists()
    n_stamps = sum(len(line.split(";")[-1].split()) for line in
                   next((ms_dir / "FRAMEWORK").glob("cpu_op_execute_timestamp_*.txt")).read_text().splitlines()
                   if line.strip())
    for _ in range(2):   # re-analysis gives the same answer
        out = subprocess.run([sys.executable, "-m", "npuprof", "analyse", str(ms_dir.parent), "-o",
                              str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        res = analyse(str(ms_dir), output_path=tmp_path / "out2")
        assert int((res.events["kind"] == int(EventKind.OP)).sum()) == n_stamps
        assert_real_compute_ops(res)
    # MindSpore's directory is read-only input: npuprof's outputs went under -o
    assert list((tmp_path / "out").rglob("ASCEND_PROFILER_OUTPUT/op_statistic.csv"))
    assert not (ms_dir / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv").exists()
    shown = subprocess.run([sys.executable, "-m", "npuprof", "show", "-dir", str(ms_dir)],
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert "op_statistic" in shown.stdout and "MatMul" in shown.stdout


# -- parity and bad input -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory):
    return ok(run_scenario("bad_inputs", tmp_path_factory.mktemp("bad")))["cases"]


@pytest.mark.parametrize("case,param", [
    ("stop_before_start", "stop_step"), ("start_step_zero", "start_step"), ("stop_without_start", "start_step"),
    ("start_and_schedule", "schedule"), ("unknown_activity", "activities"),
    ("level_mindspore_lacks", "profiler_level"), ("bad_rank_ids", "profile_rank_ids"),
    ("epoch_stop_before_start", "stop_epoch"), ("start_profile_true", "start_profile"),
    ("retired_keyword", "profile_communication"), ("record_shapes_without_cpu", "record_shapes"),
    ("npu_only_switch_on_cpu", "pcie"), ("mindspore_trace_handler", "on_trace_ready"),
    ("host_sys_osrt", "host_sys"), ("metrics_at_level0", "aic_metrics"),
    ("levelnone_without_mstx", "profiler_level"), ("bad_schedule_int", "schedule"),
])
def test_bad_input_raises_before_training(bad_inputs, case, param):
    raised = bad_inputs[case]
    assert raised is not None, f"{case}: nothing raised"
    kind, got_param, message = raised
    assert kind == "ProfilerConfigError" and got_param == param, raised
    assert "expected" in message


def test_mindspore_schedule_object_is_accepted(bad_inputs):
    assert bad_inputs["mindspore_schedule_ok"] is None


def test_mindspore_enums_and_experimental_config_map_and_record(tmp_path):
    facts = ok(run_scenario("parity", tmp_path))
    assert facts["config"] == {"activities": ["CPU"], "profiler_level": "Level1",
                               "aic_metrics": "ArithmeticUtilization", "export_type": ["text", "db"],
                               "host_sys": ["cpu", "mem"], "data_simplification": False}
    res = analyse(facts["saved_runs"][0])
    assert COMPUTE_TYPES <= set(op_stats(res))
    # profile_memory: MindSpore's own CPU memory record arrives as counter series
    series = {r["Series"]: r for r in res.tables["host_usage"].records()}
    assert series["MindSpore Total Allocated(Byte)"]["Max"] > 0
    # ... and as memory_record.csv rows: every row of MindSpore's file, its totals in MB
    (ms_file,) = Path(facts["saved_runs"][0]).rglob("cpu_ms_memory_record_*.txt")
    with open(ms_file, newline="") as fh:
        theirs = [(int(r["Timestamp(ns)"]), *(float(r[c]) / 2**20 for c in ("Total Allocated(Byte)",
                   "Total Reserved(Byte)", "Total Active(Byte)"))) for r in csv.DictReader(fh)]
    out = Path(facts["saved_runs"][0]) / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv"
    with open(out, newline="") as fh:
        ours = [(us_text_to_ns(r["Timestamp(us)"]), float(r["Total Allocated(MB)"]), float(r["Total Reserved(MB)"]),
                 float(r["Total Active(MB)"])) for r in csv.DictReader(fh) if r["Component"] == "MindSpore"]
    assert len(theirs) > 0 and sorted(ours) == sorted(theirs)


# -- the demo ---------------------------------------------------------------------------------------------------
def test_run_demo_returns_existing_summaries_and_traces(tmp_path):
    code = ("import json, sys; from npuprof.integrations.mindspore.demo import run_demo; "
            "info = run_demo(sys.argv[1]); info.pop('results'); print(json.dumps(info))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(info["runs"]) == 2 and info["accuracy"] > 0.5
    for summary, trace in zip(info["summaries"], info["traces"]):
        assert "MatMul" in Path(summary).read_text()
        assert json.loads(Path(trace).read_text())["traceEvents"]
