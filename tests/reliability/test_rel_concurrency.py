"""Concurrency: many threads recording at once lose and corrupt nothing; one
running profiler per output directory (same or other process), a lock that
a crashed owner never leaves stuck, one running Profiler per process, and a
forked child that cannot disturb its parent's run.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import rel_support as rs
from npuprof import EventKind, Profiler, ProfilerStateError, mstx, record_function, schedule
from npuprof.analysis.pipeline import analyse_run
from npuprof.rawstore import RAW_DIR, read_raw_dir
from rel_support import counts_summary  # noqa: F401

HOLDER = textwrap.dedent("""
    import os, sys, time
    from npuprof import Profiler, ProfilerStateError
    out, hold, fork_child = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    try:
        prof = Profiler(output_path=out, flush_interval=0.05)
    except ProfilerStateError as e:
        print("REFUSED", e, flush=True)
        sys.exit(0)
    if fork_child != "none":
        if fork_child == "c":        # fork(2) called from C: no os.register_at_fork hook runs
            import ctypes
            pid = ctypes.PyDLL(None).fork()
        else:
            pid = os.fork()
        if pid == 0:                 # a forked worker that outlives its parent
            time.sleep(30)
            os._exit(0)
        print("CHILD", pid, flush=True)
    print("STARTED", flush=True)
    time.sleep(hold)
    prof.stop()
""")


def _holder(out, hold: float, fork_child: str = "none") -> subprocess.Popen:
    """A process holding a profiler on ``out`` for ``hold`` seconds; with
    ``fork_child`` "python" or "c" it first forks a long-lived worker."""
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(out), str(hold), fork_child],
                            stdout=subprocess.PIPE, text=True)


def test_eight_threads_times_100k_events_all_accounted_for(tmp_path):
    n_threads, per_thread = 8, 100_000
    tids = {}
    barrier = threading.Barrier(n_threads)

    def work(k: int) -> None:
        tids[k] = threading.get_native_id()
        barrier.wait()
        name = f"thread{k}"
        for i in range(per_thread):
            if i % 5000 == 0:
                time.sleep(0.001)     # let the flusher in now and then, as real threads do
            if i % 10 == 0:
                mstx.mark(name)
            else:
                with record_function(name):
                    pass

    # a short flush interval: the flusher drains the buffers while they grow
    with Profiler(output_path=tmp_path / "out", flush_interval=0.01) as prof:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    (run,) = prof.saved_runs
    events, report = read_raw_dir(run / RAW_DIR)
    assert report.problems == [] and report.records >= 2   # drained at least once while threads appended
    names = events.string_array("name")
    for k in range(n_threads):
        mine = events.select((names == f"thread{k}"))
        assert len(mine) == per_thread, f"thread {k}: {len(mine)} of {per_thread} events"
        assert set(mine["tid"].tolist()) == {tids[k]}
        assert int((mine["kind"] == int(EventKind.MARK)).sum()) == per_thread // 10
        # in the thread's own order: starts never go back, ranges never overlap
        order = np.argsort(mine["ts"], kind="stable")
        ts, end = mine["ts"][order], (mine["ts"] + mine["dur"])[order]
        assert (np.diff(ts) >= 0).all() and (end[:-1] <= ts[1:]).all() and (mine["dur"] >= 0).all()
    res = analyse_run(run)
    assert len(res.events.select(res.events["kind"] != int(EventKind.STEP))) == n_threads * per_thread
    rs.COUNTS["concurrent events accounted for"] += n_threads * per_thread


def test_steps_from_many_threads_are_serialised(tmp_path):
    with Profiler(output_path=tmp_path / "out", flush_interval=0.05,
                  schedule=schedule(wait=1, warmup=1, active=2)) as prof:
        def stepper() -> None:
            for _ in range(250):
                mstx.mark("s")
                prof.step()

        threads = [threading.Thread(target=stepper) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert prof.step_num == 1000
    assert len(prof.saved_runs) == 250
    for run in prof.saved_runs[::25]:
        res = analyse_run(run)
        assert len(res.tables["step_trace_time"].rows()) == 2


def test_second_profiler_in_the_same_process_is_refused_clearly(tmp_path):
    with Profiler(output_path=tmp_path / "a"):
        for out in (tmp_path / "a", tmp_path / "b"):
            second = Profiler(output_path=out, start_profile=False)
            with pytest.raises(ProfilerStateError, match="already running in this process"):
                second.start()
            with pytest.raises(ProfilerStateError, match=str(tmp_path / "a")):
                Profiler(output_path=out)
    # once the first has stopped, the same directory is free again
    with Profiler(output_path=tmp_path / "a") as again:
        mstx.mark("ok")
    assert len(again.saved_runs) == 1


def test_profiler_in_another_process_on_the_same_directory_is_refused(tmp_path):
    out = tmp_path / "out"
    holder = _holder(out, 30)
    try:
        assert holder.stdout.readline().strip() == "STARTED"
        with pytest.raises(ProfilerStateError, match=rf"in use by another running profiler of rank 0 \(pid {holder.pid}\)"):
            Profiler(output_path=out)
        assert not list(out.glob(f"*_{os.getpid()}_*")), "the refused profiler must not create a run"
    finally:
        holder.kill()
        holder.wait()
    # the owner died (SIGKILL): the kernel dropped its lock; nothing is stuck
    with Profiler(output_path=out) as prof:
        mstx.mark("after the crash")
    assert len(prof.saved_runs) == 1


@pytest.mark.parametrize("fork_from", ["python", "c"])
def test_lock_of_a_killed_owner_is_free_even_while_its_forked_worker_lives(tmp_path, fork_from):
    # no waiting for the worker to run anything: a POSIX record lock is never inherited
    out = tmp_path / "out"
    holder = _holder(out, 30, fork_child=fork_from)
    worker = None
    try:
        worker = int(holder.stdout.readline().split()[1])
        assert holder.stdout.readline().strip() == "STARTED"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        os.kill(worker, 0)            # the forked worker is still alive
        with Profiler(output_path=out) as prof:
            mstx.mark("x")
        assert len(prof.saved_runs) == 1
    finally:
        if worker:
            try:
                os.kill(worker, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_processes_racing_for_one_directory_exactly_one_wins(tmp_path):
    out = tmp_path / "out"
    procs = [_holder(out, 2.0) for _ in range(4)]
    outputs = [p.communicate(timeout=60)[0] for p in procs]
    started = [o for o in outputs if "STARTED" in o]
    refused = [o for o in outputs if o.startswith("REFUSED")]
    assert len(started) == 1 and len(refused) == 3, outputs
    assert all("in use by another running profiler" in o for o in refused)


def test_forked_child_cannot_disturb_the_parents_run(tmp_path):
    out = tmp_path / "out"
    prof = Profiler(output_path=out, flush_interval=0.05)
    mstx.mark("parent-before")
    pid = os.fork()
    if pid == 0:   # child: annotations are no-ops, the parent's profiler is inert, a new one can start
        code = 0
        try:
            with record_function("child-range"):
                mstx.mark("child-mark")
            prof.step()
            prof.stop()
            with Profiler(output_path=tmp_path / "child") as own:
                mstx.mark("child-own")
            code = 0 if len(own.saved_runs) == 1 else 3
        except BaseException:
            code = 4
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # the parent still holds its directory and its window is untouched
    other = subprocess.run([sys.executable, "-c", f"from npuprof import Profiler; Profiler(output_path={str(out)!r})"],
                           capture_output=True, text=True)
    assert other.returncode != 0 and "in use by another running profiler" in other.stderr
    mstx.mark("parent-after")
    prof.stop()
    (run,) = prof.saved_runs
    res = analyse_run(run)
    names = set(rs.marks_of(res).tolist()) | set(res.events.column_strings("name"))
    assert {"parent-before", "parent-after"} <= names
    assert not {"child-mark", "child-range"} & names
    assert res.info.state == "stopped"


def test_stop_or_step_from_inside_on_trace_ready_is_safe(tmp_path, caplog):
    """A handler that stops the profiler after the first trace (or calls
    step()) must not leave a half-open window or a second recorder behind."""
    from npuprof.recorder import active_recorder

    calls = []

    def stop_after_first(prof):
        calls.append(len(prof.saved_runs))
        prof.step()          # ignored, with a warning
        prof.stop()          # takes effect once the current step() is done

    with Profiler(output_path=tmp_path / "out", schedule=schedule(wait=0, active=2),
                  on_trace_ready=stop_after_first) as prof:
        for _ in range(10):
            mstx.mark("m")
            prof.step()
    assert calls == [1] and prof.step_num == 2 and not prof.started
    assert active_recorder() is None
    runs = sorted((tmp_path / "out").glob("*_ascend_*"))
    assert runs == prof.saved_runs                       # no extra window was opened
    assert analyse_run(runs[0]).info.state == "stopped"
    messages = [r.getMessage() for r in caplog.records]
    assert any("prof.step() called from inside on_trace_ready" in m for m in messages)
    assert sum("step() takes no effect" in m for m in messages) == 1      # said once, not every step
    with Profiler(output_path=tmp_path / "out"):         # and the directory lock was released
        pass
