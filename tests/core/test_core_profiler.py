"""Profiler lifecycle: windows, on_trace_ready, partial windows, warnings."""
import json
import logging
import threading

import pytest

import npuprof
from npuprof import Profiler, ProfilerStateError, hookimpl, mstx, record_function, schedule, trace_api
from npuprof.analysis.pipeline import load_events
from npuprof.plugins.manager import get_plugin_host
from npuprof.events import EventKind


def step_names(run_dir):
    events, _, _ = load_events(run_dir)
    steps = events.of_kind(EventKind.STEP)
    return sorted(int(n.split("#")[1]) for n in steps.column_strings("name"))


def test_on_trace_ready_once_per_saved_window_with_its_steps(tmp_path):
    calls = []
    with Profiler(output_path=tmp_path, schedule=schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1),
                  on_trace_ready=lambda p: calls.append(p.saved_runs[-1])) as prof:
        for _ in range(12):
            with record_function("work"):
                pass
            prof.step()
    assert len(calls) == 2
    assert [step_names(d) for d in calls] == [[3, 4], [7, 8]]
    info = json.loads((calls[0] / "profiler_info_0.json").read_text())
    assert info["npuprof"]["state"] == "stopped" and info["npuprof"]["partial"] is False
    assert info["npuprof"]["steps"] == [3, 4]


def test_every_step_saved_when_active_is_one(tmp_path):
    ready = []
    with Profiler(output_path=tmp_path, schedule=schedule(wait=0, active=1),
                  on_trace_ready=lambda p: ready.append(1)) as prof:
        for _ in range(4):
            prof.step()
    # steps 0..3 each saved at their step(); the 5th window (step 4) is left in RAS -> saved partial
    assert len(ready) == 5
    assert len(prof.saved_runs) == 5


def test_leaving_in_record_saves_partial_window(tmp_path):
    ready = []
    with Profiler(output_path=tmp_path, schedule=schedule(wait=0, active=5),
                  on_trace_ready=lambda p: ready.append(p.saved_runs[-1])) as prof:
        for _ in range(2):
            with record_function("x"):
                pass
            prof.step()
    assert len(ready) == 1
    info = json.loads((ready[0] / "profiler_info_0.json").read_text())
    assert info["npuprof"]["partial"] is True
    assert step_names(ready[0]) == [0, 1, 2]


def test_leaving_in_warmup_discards_with_a_log_line(tmp_path, caplog):
    ready = []
    with caplog.at_level(logging.INFO, logger="npuprof"):
        with Profiler(output_path=tmp_path, schedule=schedule(wait=1, warmup=3, active=1),
                      on_trace_ready=lambda p: ready.append(1)) as prof:
            for _ in range(2):
                prof.step()
    assert ready == []
    assert not [p for p in tmp_path.iterdir() if p.name.endswith("_ascend_ms")]
    assert any("WARMUP" in r.getMessage() for r in caplog.records)


def test_schedule_without_step_warns(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="npuprof"):
        with Profiler(output_path=tmp_path, schedule=schedule(wait=0, active=2)):
            pass
    assert any("step() was never called" in r.getMessage() for r in caplog.records)


def test_no_schedule_single_window_and_analyse(tmp_path):
    prof = Profiler(output_path=tmp_path, host_sys=["cpu", "mem"], host_sys_usage_freq=200)

    @trace_api(level="Python")
    def load():
        return sum(range(1000))

    for _ in range(30):
        load()
        mstx.mark("tick")
        rid = mstx.range_start("r", domain="io")
        mstx.range_end(rid)
    import time
    time.sleep(0.1)
    prof.stop()
    results = prof.analyse()
    assert len(results) == 1
    res = results[0]
    api = res.tables["api_statistic"].records()
    assert api[0]["Count"] == 30 and api[0]["Level"] == "Python" and api[0]["Avg(us)"] > 0
    rng = res.tables["range_statistic"].records()
    assert rng[0]["Name"] == "r" and rng[0]["Domain"] == "io" and rng[0]["Count"] == 30
    marks = res.events.of_kind(EventKind.MARK)
    assert len(marks) == 30
    usage = {r["Series"]: r for r in res.tables["host_usage"].records()}
    assert {"CPU Usage(%)", "Memory Usage(%)"} <= set(usage)
    assert 0 <= usage["CPU Usage(%)"]["Max"] <= 100 and usage["Memory Usage(%)"]["Avg"] > 0


def test_second_profiler_in_process_is_refused(tmp_path):
    with Profiler(output_path=tmp_path / "a"):
        with pytest.raises(ProfilerStateError, match="already running"):
            Profiler(output_path=tmp_path / "b")


def test_threads_record_into_the_same_window(tmp_path):
    n_threads, per_thread = 4, 2000

    def work():
        for i in range(per_thread):
            with record_function("t"):
                pass

    with Profiler(output_path=tmp_path) as prof:
        threads = [threading.Thread(target=work) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    events, _, _ = load_events(prof.saved_runs[0])
    ranges = events.of_kind(EventKind.RANGE)
    assert len(ranges) == n_threads * per_thread
    assert len(set(ranges["tid"].tolist())) == n_threads
    assert (ranges["dur"] >= 0).all()


def test_with_stack_records_call_stacks(tmp_path):
    with Profiler(output_path=tmp_path, with_stack=True) as prof:
        with record_function("stacked"):
            pass
    events, _, _ = load_events(prof.saved_runs[0])
    args = [json.loads(a) for a in events.of_kind(EventKind.RANGE).column_strings("args")]
    assert "test_with_stack_records_call_stacks" in args[0]["Call stack"]


def test_metadata_written(tmp_path):
    with Profiler(output_path=tmp_path) as prof:
        prof.add_metadata("job", "demo")
        prof.add_metadata_json("cfg", '{"lr": 0.1}')
    meta = json.loads((prof.saved_runs[0] / "profiler_metadata.json").read_text())
    assert meta == {"job": "demo", "cfg": {"lr": 0.1}}


def test_record_function_as_decorator_and_outside_profiler(tmp_path):
    @record_function("decorated")
    def f(x):
        return x + 1

    assert f(1) == 2  # no profiler: still works
    with Profiler(output_path=tmp_path) as prof:
        f(2)
    events, _, _ = load_events(prof.saved_runs[0])
    assert events.of_kind(EventKind.RANGE).column_strings("name") == ["decorated"]


def test_profile_alias_and_start_profile_false(tmp_path):
    prof = npuprof.profile(output_path=tmp_path, start_profile=False)
    assert prof.current_session is None
    prof.start()
    prof.stop()
    assert len(prof.saved_runs) == 1


def test_failing_on_trace_ready_does_not_break_training(tmp_path, caplog):
    def bad(_):
        raise RuntimeError("handler bug")

    with caplog.at_level(logging.WARNING, logger="npuprof"):
        with Profiler(output_path=tmp_path, schedule=schedule(wait=0, active=1), on_trace_ready=bad) as prof:
            prof.step()
    assert any("handler bug" in r.getMessage() for r in caplog.records)


def test_ranks_of_one_job_share_an_output_path(tmp_path):
    import subprocess
    import sys

    code = ("import sys, time; from npuprof import Profiler, record_function\n"
            "with Profiler(output_path=sys.argv[1], rank=int(sys.argv[2]), world_size=2):\n"
            "    time.sleep(1.0)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(r)], stderr=subprocess.PIPE)
             for r in (0, 1)]
    errs = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    runs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert len(runs) == 2 and "-rank0_" in runs[0] and "-rank1_" in runs[1]


def test_profile_rank_ids_leaves_other_ranks_inert(tmp_path):
    prof = Profiler(output_path=tmp_path / "out", rank=3, world_size=4, profile_rank_ids=[0, 1])
    prof.step()
    prof.stop()
    assert prof.excluded and prof.saved_runs == [] and not (tmp_path / "out").exists()
    with Profiler(output_path=tmp_path / "out", rank=1, world_size=4, profile_rank_ids="0-1") as kept:
        assert npuprof.running_profiler() is kept
    assert len(kept.saved_runs) == 1 and npuprof.running_profiler() is None


def test_every_host_series_and_process_memory_are_sampled(tmp_path):
    import time

    with Profiler(output_path=tmp_path, host_sys=["cpu", "mem", "disk", "network"], profile_memory=True,
                  host_sys_usage_freq=200) as prof:
        deadline = time.monotonic() + 120     # until 10 samples were taken, however slow the machine
        while prof._sampler.samples < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
    (res,) = prof.analyse()
    usage = {r["Series"]: r for r in res.tables["host_usage"].records()}
    assert set(usage) == {"CPU Usage(%)", "Memory Usage(%)", "Disk Usage(B/s)", "Network Usage(B/s)",
                          "Process RSS(B)"}
    assert all(r["Samples"] >= 10 for r in usage.values())
    assert usage["Process RSS(B)"]["Min"] > 10e6          # this interpreter holds numpy: tens of MB
    assert usage["Disk Usage(B/s)"]["Min"] >= 0 and usage["Network Usage(B/s)"]["Min"] >= 0


# -- the first recorded step holds none of the start-up (#34.1) ----------------------------------------------------
class _SlowToStart:
    """A backend whose start takes time, as a framework profiler's does; its start is recorded as a range."""

    @hookimpl
    def npuprof_start(self, session):
        from npuprof import record_function

        with record_function("backend start"):
            sum(range(200_000))


@pytest.mark.parametrize("how", ["start", "step"])
def test_the_first_recorded_step_begins_after_collection_started(tmp_path, how):
    """Opening the window and starting the backends happen between two steps: ProfilerStep#N begins
    once they are done (as torch enters ProfilerStep#N after its transition), on start() and on the
    step() that begins a window."""
    host = get_plugin_host()
    host.register(_SlowToStart(), name="slow_to_start")
    try:
        sched = schedule(wait=0, active=2, repeat=1) if how == "start" else schedule(wait=2, active=2, repeat=1)
        prof = Profiler(output_path=tmp_path, schedule=sched)
        prof.start()
        for _ in range(4):
            sum(range(1000))
            prof.step()
        prof.stop()
    finally:
        host.unregister("slow_to_start")
    (res,) = prof.analyse()
    events = res.events
    names = [events.strings[n] for n in events["name"]]
    (start,) = [i for i, n in enumerate(names) if n == "backend start"]
    steps = sorted((int(events["ts"][i]), n) for i, n in enumerate(names) if n.startswith("ProfilerStep#"))
    first_ts, first = steps[0]
    assert first == ("ProfilerStep#0" if how == "start" else "ProfilerStep#2")
    assert first_ts >= int(events["ts"][start]) + int(events["dur"][start])


def test_the_steps_of_one_window_are_contiguous(tmp_path):
    """Within a window each ProfilerStep ends where the next begins (RECORD -> RECORD_AND_SAVE opens nothing),
    so the steps' Stage adds up to the window's span as the Ascend tools' E2E time counts it."""
    prof = Profiler(output_path=tmp_path, schedule=schedule(wait=1, active=3, repeat=1))
    prof.start()
    for _ in range(5):
        sum(range(1000))
        prof.step()
    prof.stop()
    (res,) = prof.analyse()
    events = res.events
    steps = sorted((int(events["ts"][i]), int(events["ts"][i] + events["dur"][i]))
                   for i in range(len(events)) if events.strings[events["name"][i]].startswith("ProfilerStep#"))
    assert len(steps) == 3
    assert all(end == nxt for (_, end), (nxt, _) in zip(steps, steps[1:])), steps
