"""Dynamic profiling (npuprof.dynamic_profile): configs, the controller's step semantics, the CLI, and
real training processes whose config is changed while they run (numpy loop, MindSpore Model.train with
the drop-in monitor, Keras fit, a script that never imports npuprof, a 2-process job)."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import npuprof
from npuprof.dynamic_profile import TEMPLATE, parse_config_text
from npuprof.dynamic_profile.controller import DynamicController
from npuprof.dynamic_profile.request import MINDSPORE_TEMPLATE
from npuprof.errors import ProfilerConfigError

from dyn_support import HOLDABLE, RunningJob, captures_done, run_info

CLI = [sys.executable, "-m", "npuprof"]


def _config(**fields) -> str:
    cfg = json.loads(json.dumps(TEMPLATE))
    cfg.update(fields)
    return json.dumps(cfg)


# -- the config file ------------------------------------------------------------------------------------------------
def test_torch_npu_template_is_a_valid_config(tmp_path):
    req = parse_config_text(json.dumps(TEMPLATE), "npuprof", base_dir=tmp_path)
    assert (req.start_step, req.warmup, req.active, req.ranks, req.analyse) == (0, 0, 1, None, False)
    assert dict(req.profiler_kwargs)["profiler_level"] == "Level0"


@pytest.mark.parametrize("fields, param, allowed", [
    ({"actve": 2}, "actve", "a known field"),
    ({"active": 0}, "active", ">= 1"),
    ({"start_step": -3}, "start_step", ">= 0"),
    ({"with_flops": True}, "with_flops", "does not collect"),
    ({"is_rank": True, "rank_list": ["0"]}, "rank_list", "rank ids"),
    ({"experimental_config": {"profiler_level": "Level9"}}, "profiler_level", "Level2"),
    ({"experimental_config": {"op_attr": True}}, "experimental_config.op_attr", "does not collect"),
    ({"prof_dir": ""}, "prof_dir", "directory"),
    ({"host_sys": ["gpu"]}, "host_sys", "cpu"),
])
def test_every_bad_field_is_named_with_what_is_allowed(tmp_path, fields, param, allowed):
    with pytest.raises(ProfilerConfigError) as err:
        parse_config_text(_config(**fields), "npuprof", base_dir=tmp_path)
    assert param in str(err.value) and allowed in str(err.value)


def test_mindspore_dialect_takes_its_int_and_string_forms(tmp_path):
    cfg = dict(MINDSPORE_TEMPLATE, start_step=3, stop_step=5, profiler_level=1, activities=1, export_type=2,
               aic_metrics=0, analyse_mode=1)
    req = parse_config_text(json.dumps(cfg), "mindspore", default_prof_dir=tmp_path / "out")
    kw = dict(req.profiler_kwargs)
    assert (kw["profiler_level"], kw["activities"], kw["export_type"], kw["aic_metrics"]) == \
        ("Level1", ["CPU"], ["text", "db"], "PipeUtilization")
    assert (req.start_step, req.active, req.recorded_steps(3), req.analyse, req.async_mode) == (3, 3, (3, 4, 5),
                                                                                                True, True)
    assert req.output_dir(2, 3) == tmp_path / "out" / "rank2_start3_stop5"
    assert not parse_config_text(json.dumps(MINDSPORE_TEMPLATE), "mindspore").enabled   # -1: no capture
    for bad, param in (({"start_step": 5, "stop_step": 3}, "stop_step"), ({"start_step": 0, "stop_step": 3},
                       "start_step"), ({"profiler_level": 7, "start_step": 1, "stop_step": 1}, "profiler_level")):
        with pytest.raises(ProfilerConfigError, match=param):
            parse_config_text(json.dumps(dict(MINDSPORE_TEMPLATE, **bad)), "mindspore")


# -- the controller, driven by hand (no thread: check_now() stands for a poll) --------------------------------------
def _controller(tmp_path, dialect="npuprof", first_step=0, rank=0, **kw) -> DynamicController:
    template = TEMPLATE if dialect == "npuprof" else MINDSPORE_TEMPLATE
    return DynamicController(tmp_path / "cfg", dialect=dialect, first_step=first_step, poll_interval=3600,
                             rank=rank, template=template, **kw)


def _write(ctl: DynamicController, text: str) -> None:
    ctl.config_path.write_text(text)
    ctl._watcher.check_now()


def _steps(ctl: DynamicController, n: int) -> None:
    for _ in range(n):
        npuprof.record_function("work").__enter__().__exit__(None, None, None)
        ctl.step()


def test_capture_records_the_asked_steps_with_the_jobs_numbers(tmp_path):
    ctl = _controller(tmp_path)
    _steps(ctl, 3)
    _write(ctl, _config(start_step=6, warmup=1, active=2, prof_dir=str(tmp_path / "p")))
    _steps(ctl, 12)
    (cap,) = ctl.status.captures
    assert (cap.start_step, cap.recorded_steps, cap.state) == (6, [7, 8], "done")
    info = run_info(cap.run_dirs[0])["npuprof"]
    assert info["steps"] == [7, 8] and info["dynamic"]["recorded_steps"] == [7, 8]
    assert info["dynamic"]["config"]["start_step"] == 6 and info["dynamic"]["rank"] == 0
    ctl.close()


def test_a_start_step_already_past_means_the_next_step(tmp_path):
    ctl = _controller(tmp_path)
    _steps(ctl, 10)
    _write(ctl, _config(start_step=2, active=1, prof_dir=str(tmp_path / "p")))
    _steps(ctl, 3)
    assert ctl.status.captures[0].recorded_steps == [11]
    assert run_info(ctl.status.captures[0].run_dirs[0])["npuprof"]["steps"] == [11]
    ctl.close()


def test_a_config_changed_during_a_capture_applies_after_it(tmp_path):
    ctl = _controller(tmp_path)
    _write(ctl, _config(start_step=1, active=4, prof_dir=str(tmp_path / "a")))
    _steps(ctl, 2)
    assert ctl.status.state == "capturing"
    _write(ctl, _config(start_step=0, active=1, prof_dir=str(tmp_path / "b")))   # asks for "now"
    _steps(ctl, 8)
    first, second = ctl.status.captures
    assert first.recorded_steps == [1, 2, 3, 4] and first.state == "done"
    assert second.recorded_steps == [5] and second.state == "done"     # right after the first one
    ctl.close()


def test_bad_configs_warn_once_and_keep_the_last_valid_one(tmp_path, caplog):
    ctl = _controller(tmp_path)
    _write(ctl, _config(start_step=20, active=1, prof_dir=str(tmp_path / "p")))
    with caplog.at_level(logging.WARNING, logger="npuprof"):
        for bad in ("{\"start_step\": ", _config(start_step="ten"), _config(bogus=1)):
            _write(ctl, bad)
            assert "the last valid config stays in effect" in ctl.status.error
            _write(ctl, bad)      # the same content again: not a change, no second warning
    assert sum("stays in effect" in r.message for r in caplog.records) == 3
    assert "start_step='ten'" in caplog.text and "bogus" in caplog.text
    _steps(ctl, 25)
    assert [c.recorded_steps for c in ctl.status.captures] == [[20]]     # the valid one still ran
    ctl.close()


def test_an_unwritable_prof_dir_is_refused_when_read(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    ctl = _controller(tmp_path)
    _write(ctl, _config(prof_dir=str(blocker / "sub")))
    assert "invalid prof_dir=" in ctl.status.error and "is a file" in ctl.status.error
    _steps(ctl, 3)
    assert ctl.status.captures == []
    ctl.close()


def test_deleted_config_is_said_and_recreating_it_works(tmp_path):
    ctl = _controller(tmp_path)
    ctl.config_path.unlink()
    ctl._watcher.check_now()
    assert "deleted" in ctl.status.error
    _write(ctl, _config(start_step=2, active=1, prof_dir=str(tmp_path / "p")))
    _steps(ctl, 4)
    assert ctl.status.captures[0].state == "done"
    ctl.close()


def test_rank_list_limits_the_ranks_that_capture(tmp_path):
    text = _config(start_step=1, active=1, is_rank=True, rank_list=[1], prof_dir=str(tmp_path / "p"))
    for rank, expected in ((0, 0), (1, 1)):
        ctl = _controller(tmp_path / f"r{rank}", rank=rank)
        _write(ctl, text)
        _steps(ctl, 3)
        assert len(ctl.status.captures) == expected
        if not expected:
            assert "rank 0 is not in rank_list [1]" in ctl.status.error
        ctl.close()


def test_mindspore_dialect_refuses_a_start_already_past_and_before_the_last_stop(tmp_path):
    ctl = _controller(tmp_path, dialect="mindspore", first_step=1, apply_existing=True,
                      default_prof_dir=tmp_path / "out")
    _write(ctl, json.dumps(dict(MINDSPORE_TEMPLATE, start_step=2, stop_step=3)))
    _steps(ctl, 5)
    (cap,) = ctl.status.captures
    assert cap.recorded_steps == [2, 3] and Path(cap.run_dirs[0]).parent.name == "rank0_start2_stop3"
    _write(ctl, json.dumps(dict(MINDSPORE_TEMPLATE, start_step=4, stop_step=9)))    # step 6 runs: past
    _steps(ctl, 1)
    assert "already past" in ctl.status.error and len(ctl.status.captures) == 1
    ctl.close()


def test_start_from_code_applies_the_file_now(tmp_path, monkeypatch):
    import npuprof.dynamic_profile as dp

    monkeypatch.chdir(tmp_path)
    ctl = dp.init(tmp_path / "cfg", poll_interval=3600)
    try:
        _steps(ctl, 4)
        (tmp_path / "other.json").write_text(_config(start_step=0, active=2, prof_dir="p"))
        dp.start(tmp_path / "other.json")
        _steps(ctl, 3)
        (cap,) = ctl.status.captures
        assert cap.recorded_steps == [4, 5] and cap.state == "done"
        assert Path(cap.run_dirs[0]).parent == tmp_path / "p"
        assert json.loads((tmp_path / "cfg" / "profiler_config.json").read_text()) == TEMPLATE   # not rewritten
    finally:
        dp.finalize()


def test_init_refuses_a_file_and_a_second_directory(tmp_path):
    import npuprof.dynamic_profile as dp
    from npuprof.errors import ProfilerStateError

    (tmp_path / "f").write_text("")
    with pytest.raises(ProfilerConfigError, match="path"):
        dp.init(tmp_path / "f")
    with pytest.raises(ProfilerConfigError, match="poll_interval"):
        dp.init(tmp_path / "d", poll_interval=0)
    dp.init(tmp_path / "d", poll_interval=3600)
    try:
        with pytest.raises(ProfilerStateError, match="finalize"):
            dp.init(tmp_path / "e")
        assert json.loads((tmp_path / "d" / "profiler_config.json").read_text()) == TEMPLATE
    finally:
        dp.finalize()


def test_the_captures_first_step_begins_after_the_capture_is_announced(tmp_path, monkeypatch):
    """#34.1: the status file (written with an fsync) and the log line come before the capture's
    Profiler starts, so neither lands in its first recorded step."""
    ctl = _controller(tmp_path)
    written = []
    original = DynamicController._write_status

    def write_status(self):
        original(self)
        written.append(time.perf_counter_ns())

    monkeypatch.setattr(DynamicController, "_write_status", write_status)
    _steps(ctl, 2)
    _write(ctl, _config(start_step=3, active=2, prof_dir=str(tmp_path / "p")))
    while ctl.status.state != "capturing":      # up to the step() that begins the capture
        _steps(ctl, 1)
    assert ctl.step_num == 3 and ctl._capture._step_t0 >= max(written)
    ctl.close()


# -- a config left from the previous job (#34.6) ------------------------------------------------------------------
def test_a_config_present_at_init_is_the_baseline_as_in_torch_npu(tmp_path, monkeypatch):
    import npuprof.dynamic_profile as dp

    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "profiler_config.json").write_text(_config(start_step=2, active=1, prof_dir="old"))
    ctl = dp.init(tmp_path / "cfg", poll_interval=3600)
    try:
        _steps(ctl, 6)
        assert ctl.status.captures == [] and not (tmp_path / "old").exists()   # the previous job's request
        _write(ctl, _config(start_step=8, active=1, prof_dir="new"))          # a change: captured
        _steps(ctl, 4)
        (cap,) = ctl.status.captures
        assert cap.recorded_steps == [8] and cap.state == "done"
    finally:
        dp.finalize()


DROP_IN_BASELINE = """
import json, sys
from pathlib import Path
from npuprof.integrations.mindspore import DynamicProfilerMonitor
from npuprof.dynamic_profile.request import MINDSPORE_TEMPLATE
cfg, out = Path(sys.argv[1]), Path(sys.argv[2])
monitor = DynamicProfilerMonitor(cfg_path=str(cfg), output_path=str(out), poll_interval=3600)
ctl = monitor.controller
for _ in range(6):
    monitor.step()
left = len(ctl.status.captures)
(cfg / "profiler_config.json").write_text(json.dumps(dict(MINDSPORE_TEMPLATE, start_step=20, stop_step=21)))
ctl._watcher.check_now()
monitor.step()
print(json.dumps({"left": left, "scheduled": [c.recorded_steps for c in ctl.status.captures]}))
ctl.close()
"""


def test_the_mindspore_drop_in_takes_a_config_present_at_start_as_the_baseline(tmp_path):
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "profiler_config.json").write_text(json.dumps(dict(MINDSPORE_TEMPLATE, start_step=2, stop_step=3)))
    done = subprocess.run([sys.executable, "-c", DROP_IN_BASELINE, str(cfg), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"left": 0, "scheduled": [[20, 21]]}    # the left file captured nothing, a change did
    assert not list(tmp_path.rglob("rank0_start2_stop3"))


def test_apply_existing_applies_a_config_present_at_start(tmp_path):
    """The other rule (MindSpore's own monitor), still available to the controller."""
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "profiler_config.json").write_text(
        json.dumps(dict(MINDSPORE_TEMPLATE, start_step=3, stop_step=3)))
    ctl = _controller(tmp_path, dialect="mindspore", first_step=1, apply_existing=True,
                      default_prof_dir=tmp_path / "out")
    ctl.start_watching()
    _steps(ctl, 4)
    (cap,) = ctl.status.captures
    assert cap.recorded_steps == [3] and cap.state == "done"
    ctl.close()


@pytest.mark.parametrize("argv, where", [
    (["--dialect", "mindspore", "--start-step", "300", "--stop-step", "304"],
     "into the job's output_path (DynamicProfilerMonitor(output_path=...)), in rank<r>_start300_stop304/"),
    (["--dialect", "mindspore", "--start-step", "300", "--stop-step", "304", "--prof-dir", "rel"],
     "into rel under the job's working directory, in rank<r>_start300_stop304/"),
    (["--start-step", "3", "--active", "2"], "into ./npuprof_data under the job's working directory"),
    (["--start-step", "3", "--active", "2", "--prof-dir", "{abs}"], "into {abs}"),
])
def test_cli_start_says_where_the_job_writes(tmp_path, argv, where):
    absolute = str(tmp_path / "abs")
    argv = [a.replace("{abs}", absolute) for a in argv]
    done = subprocess.run(CLI + ["dynamic", "start", str(tmp_path / "cfg"), *argv], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith(where.replace("{abs}", absolute)), done.stdout
    assert str(tmp_path) + "\n" not in done.stdout + "\n"       # never the command's own working directory


# -- the command line -----------------------------------------------------------------------------------------------
def test_cli_start_validates_before_writing_and_status_reports(tmp_path):
    cfg = tmp_path / "cfg"
    ok = subprocess.run(CLI + ["dynamic", "start", str(cfg), "--start-step", "7", "--active", "2", "--ranks", "0-1",
                               "--set", "profiler_level=Level1", "--prof-dir", str(tmp_path / "p")],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    written = json.loads((cfg / "profiler_config.json").read_text())
    assert (written["start_step"], written["active"], written["rank_list"], written["is_rank"]) == (7, 2, [0, 1], True)
    assert written["experimental_config"]["profiler_level"] == "Level1"
    bad = subprocess.run(CLI + ["dynamic", "start", str(cfg), "--active", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "active" in bad.stderr and ">= 1" in bad.stderr
    assert json.loads((cfg / "profiler_config.json").read_text()) == written     # untouched
    ctl = DynamicController(cfg, poll_interval=3600, rank=3, apply_existing=True)
    ctl.start_watching()
    ctl.close()
    status = subprocess.run(CLI + ["dynamic", "status", str(cfg)], capture_output=True, text=True)
    assert status.returncode == 0 and "rank 3" in status.stdout and "not in rank_list [0, 1]" in status.stdout


# -- real processes, config changed while they run -------------------------------------------------------------------
def _two_captures(job: RunningJob, make_config, first_step: int = 0) -> tuple:
    """Config A, a broken file, config B - each written while the job trains; returns the final status."""
    def ask(tag: str, st: dict) -> int:
        if job.kind not in HOLDABLE:  # a script without npuprof cannot say its step: 20 steps ahead of the last status
            start = st["step"] + 20
            job.write_config(make_config(start, tag))
            return start
        start = job.hold() + 2        # held while the config is written and read: ahead, whatever the load
        job.write_config_read_while_held([job], make_config(start, tag))
        job.release()
        return start

    a = ask("a", job.wait_for("the first steps", lambda s: s.get("step", -1) >= first_step + 3))
    job.wait_for("capture A", captures_done(1))
    job.write_config('{"start_step": ')                        # an editor's half-written save
    b = ask("b", job.wait_for("the broken file reported", lambda s: "stays in effect" in (s.get("error") or "")))
    st = job.wait_for("capture B", captures_done(2))
    assert job.finish() == 0, job.stderr()
    assert job.stderr().count("stays in effect") == 1
    return st, a, b


def _analysed_steps(run_dir: str) -> list:
    (res,) = npuprof.analyse(run_dir)
    return [int(r[0]) for r in res.tables["step_trace_time"].rows()], res


@pytest.mark.slow
def test_numpy_loop_with_init_and_step(tmp_path):
    job = RunningJob("numpy", tmp_path / "cfg", tmp_path / "job")
    st, a, b = _two_captures(job, lambda start, tag: _config(start_step=start, warmup=1, active=2,
                                                             prof_dir=str(tmp_path / tag), analyse=tag == "b",
                                                             async_mode=tag == "b"))
    for cap, start, tag in zip(st["captures"], (a, b), "ab"):
        assert cap["recorded_steps"] == [start + 1, start + 2]
        (run_dir,) = cap["run_dirs"]
        assert Path(run_dir).parent == tmp_path / tag
        own = Path(run_dir) / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
        if tag == "a":
            assert not own.exists()           # analyse false: raw data only
        else:                                 # analysed in a child process, joined before the job exited
            assert [line.split(",")[0] for line in own.read_text().splitlines()[1:]] == [str(start + 1),
                                                                                           str(start + 2)]
        steps, res = _analysed_steps(run_dir)
        assert steps == [start + 1, start + 2]
        assert res.tables["range_statistic"].records()[0]["Name"] == "train_step"


@pytest.mark.slow
def test_mindspore_model_train_with_the_drop_in_monitor(tmp_path):
    job = RunningJob("mindspore", tmp_path / "cfg", tmp_path / "job", delay=0.1)

    def ms_config(start: int, tag: str) -> str:
        cfg = dict(MINDSPORE_TEMPLATE, start_step=start, stop_step=start + 1, analyse=False)
        if tag == "b":   # MindSpore's legacy int forms
            cfg.update(profiler_level=1, activities=1, export_type=1, analyse_mode=0, analyse=True)
        return json.dumps(cfg)

    st, a, b = _two_captures(job, ms_config, first_step=1)
    out = tmp_path / "job" / "dyn_profile_data"
    for cap, start in zip(st["captures"], (a, b)):
        assert cap["recorded_steps"] == [start, start + 1]
        (run_dir,) = cap["run_dirs"]
        assert Path(run_dir).parent == out / f"rank0_start{start}_stop{start + 1}"
        steps, res = _analysed_steps(run_dir)
        assert steps == [start, start + 1]
        ops = {r["OP Type"] for r in res.tables["op_statistic"].records()}
        assert {"MatMul", "BiasAdd"} <= ops, ops      # MindSpore's own CPU kernels of those steps
    second = run_info(st["captures"][1]["run_dirs"][0])["npuprof"]
    assert second["dynamic"]["dialect"] == "mindspore" and second["dynamic"]["config"]["profiler_level"] == 1
    assert any((Path(st["captures"][1]["run_dirs"][0]) / "ASCEND_PROFILER_OUTPUT").glob("*.db"))   # export_type 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["keras", "zero_code", "zero_code_mindspore", "zero_code_tf1"])
def test_keras_callback_and_framework_steps_hooked_without_code_changes(tmp_path, kind):
    if kind.startswith("zero_code"):
        from npuprof.dynamic_profile.autostart import PTH_NAME, site_packages

        assert (site_packages() / PTH_NAME).exists(), "the start-up hook is not installed: npuprof dynamic hook install"
    job = RunningJob(kind, tmp_path / "cfg", tmp_path / "job", delay=0.1 if "mindspore" in kind else 0.05)
    st, a, b = _two_captures(job, lambda start, tag: _config(start_step=start, active=2, analyse=tag == "b",
                                                             prof_dir=str(tmp_path / tag)))
    for cap, start in zip(st["captures"], (a, b)):
        assert cap["recorded_steps"] == [start, start + 1]
        steps, res = _analysed_steps(cap["run_dirs"][0])
        assert steps == [start, start + 1]
        assert len(res.tables["op_statistic"]) > 0          # the framework's own ops of those steps


def test_the_startup_hook_costs_nothing_without_the_variable():
    env = {k: v for k, v in os.environ.items() if k != "NPUPROF_CONFIG_PATH"}
    out = subprocess.run([sys.executable, "-c", "import sys; print('npuprof' in sys.modules)"],
                         capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_two_ranks_capture_the_same_steps_and_rank_list_limits_them(tmp_path):
    cfg = tmp_path / "cfg"
    jobs = [RunningJob("numpy", cfg, tmp_path / f"rank{r}", env={"RANK_ID": str(r)}) for r in (0, 1)]
    try:
        for j in jobs:
            j.wait_for("the first steps", lambda s: s.get("step", -1) >= 3)
        # held while the config is written and read: its start is ahead of both, whatever the load
        start = max(j.hold() for j in jobs) + 2
        jobs[0].write_config_read_while_held(jobs, _config(start_step=start, active=2, prof_dir=str(tmp_path / "p")))
        for j in jobs:
            j.release()
        done = [j.wait_for("the capture", captures_done(1)) for j in jobs]
        for rank, st in enumerate(done):
            (cap,) = st["captures"]
            assert cap["recorded_steps"] == [start, start + 1]
            info = run_info(cap["run_dirs"][0])["npuprof"]
            assert info["steps"] == [start, start + 1] and info["dynamic"]["rank"] == rank
        jobs[1].write_config('{"start_step": 1, "active": ')      # broken: both keep the last valid config
        for j in jobs:
            j.wait_for("the broken file reported", lambda s: "stays in effect" in (s.get("error") or ""))
        later = max(j.status()["step"] for j in jobs) + 10
        jobs[0].write_config(_config(start_step=later, active=1, is_rank=True, rank_list=[1],
                                     prof_dir=str(tmp_path / "p")))
        jobs[1].wait_for("rank 1's second capture", captures_done(2))
        jobs[0].wait_for("rank 0 told it is left out", lambda s: "not in rank_list [1]" in (s.get("error") or ""))
    finally:
        codes = [j.finish() for j in jobs]
    assert codes == [0, 0]
    assert len(jobs[0].status()["captures"]) == 1


def test_zero_code_hook_with_an_unusable_directory_warns_once_and_training_goes_on(tmp_path, monkeypatch, caplog):
    from npuprof.dynamic_profile import autostart

    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv(autostart.ENV_VAR, str(tmp_path / "a_file"))
    monkeypatch.setattr(autostart, "_gave_up", False)
    with caplog.at_level(logging.WARNING, logger="npuprof"):
        for _ in range(3):
            autostart._step_hooked()          # a framework step ends
    assert sum("cannot be watched" in r.message for r in caplog.records) == 1
    assert npuprof.dynamic_profile.active_controller() is None


_json = st.recursive(st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                     max_leaves=12)
_fields = st.sampled_from(sorted(set(TEMPLATE) | set(MINDSPORE_TEMPLATE) | {"experimental_config"}))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_fields, _json, max_size=6), st.sampled_from(["npuprof", "mindspore"]))
def test_any_json_gives_a_request_or_a_config_error(tmp_path_factory, fields, dialect):
    base = dict(TEMPLATE if dialect == "npuprof" else MINDSPORE_TEMPLATE)
    base.update(fields)
    try:
        parse_config_text(json.dumps(base), dialect, base_dir=tmp_path_factory.getbasetemp())
    except ProfilerConfigError:
        pass
