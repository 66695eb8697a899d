"""The Profiler's lifecycle: one state, moved only through npuprof.lifecycle's transition table."""
from __future__ import annotations

from npuprof import Profiler, schedule
from npuprof.lifecycle import FAILED, LIFECYCLE, STARTED, Event, State


def test_the_table_answers_every_state_and_event():
    assert set(LIFECYCLE) == {(s, e) for s in State for e in Event}
    assert STARTED == {State.RUNNING, State.FAILED, State.HALTED}
    assert FAILED == {State.FAILED, State.HALTED, State.STOPPED_AFTER_FAILURE}
    # from a failed state no event leads back to a running one: a failure is kept until stop
    for state in FAILED:
        assert all(LIFECYCLE[(state, e)] in FAILED for e in Event)


def test_start_stop_and_start_again(tmp_path):
    prof = Profiler(output_path=tmp_path, start_profile=False)
    assert prof.state is State.CREATED and not prof.started
    prof.start()
    assert prof.state is State.RUNNING and prof.started
    prof.step()
    prof.stop()
    assert prof.state is State.STOPPED and not prof.started and not prof.failed
    prof.start()
    prof.step()
    prof.stop()
    assert prof.state is State.STOPPED and len(prof.saved_runs) == 2


def test_a_failure_halts_the_window_and_no_window_opens_after_it(tmp_path):
    def failing(step):
        if step == 2:
            raise RuntimeError("schedule bug")
        return schedule(wait=0, warmup=0, active=1)(step)

    prof = Profiler(output_path=tmp_path, schedule=failing)
    prof.step()
    assert prof.state is State.RUNNING
    prof.step()                                    # schedule(2) fails: collection stops
    assert prof.state is State.FAILED and prof.failed and prof.started
    saved = list(prof.saved_runs)
    prof.step()                                    # the next step stops what is left, once
    assert prof.state is State.HALTED
    for _ in range(3):
        prof.step()
    assert prof.saved_runs == saved, "no window opens after a failure"
    prof.stop()
    assert prof.state is State.STOPPED_AFTER_FAILURE and prof.failed and not prof.started
    prof.start()
    assert prof.state is State.HALTED
    prof.step()
    prof.stop()
    assert prof.saved_runs == saved


def test_stop_from_on_trace_ready_waits_for_the_step_and_opens_no_window(tmp_path):
    seen = []

    def ready(prof):
        prof.stop()
        seen.append(prof.started)       # stopped once the operation that saved the window ends

    prof = Profiler(output_path=tmp_path, schedule=schedule(wait=0, warmup=0, active=1, repeat=3),
                    on_trace_ready=ready)
    prof.step()                                    # saves window 1 and would open window 2
    assert seen == [True]
    assert prof.state is State.STOPPED and len(prof.saved_runs) == 1
    assert prof.current_session is None and not prof._waiting
