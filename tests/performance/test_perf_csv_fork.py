"""A long CSV written by a forked child while the parent analyses: the same bytes as written here, the
child's errors (or its death) raised in the parent with no file left, and the analysis failing clearly,
never with a table silently missing."""
from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
from pathlib import Path

import pytest

from npuprof.analysis.table import Table
from npuprof.cli import EXIT_DATA, main
from npuprof.export import csvfiles, writer
from npuprof.export.forked import ForkedFile
from npuprof.plugins import analyzers as builtin_analyzers

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _table(n: int = 50_000) -> Table:
    import numpy as np

    rng = np.random.default_rng(1)
    return Table("t", ["Name", "Count"], {"Name": [f"op,{i % 7}" for i in range(n)],
                                          "Count": rng.integers(-5, 10**9, n)})


def test_forked_file_is_the_file_written_here(tmp_path):
    table = _table()
    here = csvfiles.write_csv(table, tmp_path / "here.csv")
    job = ForkedFile(tmp_path / "out" / "there.csv", lambda fh: csvfiles.write_csv_to(fh, table))
    assert job.finish() == tmp_path / "out" / "there.csv"
    assert (tmp_path / "out" / "there.csv").read_bytes() == here.read_bytes()
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["there.csv"]


def test_the_child_s_error_is_raised_here_and_leaves_no_file(tmp_path):
    def broken(fh):
        fh.write(b"half a file")
        raise ValueError("column 'Count' holds objects")

    job = ForkedFile(tmp_path / "t.csv", broken)
    with pytest.raises(ValueError, match="column 'Count' holds objects"):
        job.finish()
    assert list(tmp_path.iterdir()) == []


def test_a_child_that_dies_is_an_error_naming_the_file(tmp_path):
    def killed(fh):
        fh.write(b"half a file")
        fh.flush()
        os.kill(os.getpid(), signal.SIGKILL)   # as the kernel's out-of-memory killer would

    job = ForkedFile(tmp_path / "kernel_details.csv", killed)
    with pytest.raises(RuntimeError, match=r"writing kernel_details.csv ended with wait status 9 before the file "
                                           r"was complete"):
        job.finish()
    assert list(tmp_path.iterdir()) == []


def test_discard_stops_the_child_and_removes_its_file(tmp_path):
    def slow(fh):
        fh.write(b"x")
        fh.flush()
        signal.pause()   # until killed

    job = ForkedFile(tmp_path / "t.csv", slow)
    job.discard()
    with pytest.raises(ChildProcessError):
        os.waitpid(job.pid, os.WNOHANG)   # reaped
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("rows, cores, safe, forked", [(300_000, 2, True, True), (1000, 2, True, False),
                                                       (300_000, 1, True, False), (300_000, 2, False, False)])
def test_start_csv_forks_a_long_table_where_a_second_core_is_there_and_forking_is_safe(tmp_path, monkeypatch,
                                                                                    rows, cores, safe, forked):
    monkeypatch.setattr(csvfiles, "FORK_MIN_ROWS", 100_000)
    monkeypatch.setattr(csvfiles, "available_cores", lambda: cores)
    job = csvfiles.start_csv(_table(rows), tmp_path / "t.csv", lambda: safe)
    assert (job is not None) == forked
    if job is not None:
        assert job.finish().read_bytes() == csvfiles.write_csv(_table(rows), tmp_path / "here.csv").read_bytes()


@pytest.fixture
def forking(monkeypatch):
    """This test's small run written as a large one: exporters beside the analyzers, every CSV forked."""
    monkeypatch.setattr(writer, "CONCURRENT_MIN_EVENTS", 1)
    monkeypatch.setattr(csvfiles, "FORK_MIN_ROWS", 1)
    monkeypatch.setattr(csvfiles, "available_cores", lambda: 2)
    monkeypatch.setattr(writer, "fork_is_safe", lambda: True)   # whatever other tests left running
    started = []
    real = csvfiles.ForkedFile
    monkeypatch.setattr(csvfiles, "ForkedFile", lambda *a: started.append(a[0].name) or real(*a))
    return started


def _digests(folder: Path) -> dict:
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.name != writer.ANALYSIS_RECORD}


def test_analyse_writes_the_same_csvs_forked(tmp_path, monkeypatch):
    from synth import make_run

    run = make_run(tmp_path / "runs", 30_000)
    writer.analyse_and_export(run)
    out = run / "ASCEND_PROFILER_OUTPUT"
    before = _digests(out)
    for p in out.iterdir():
        p.unlink()
    monkeypatch.setattr(writer, "CONCURRENT_MIN_EVENTS", 1)
    monkeypatch.setattr(csvfiles, "FORK_MIN_ROWS", 1)
    monkeypatch.setattr(csvfiles, "available_cores", lambda: 2)
    monkeypatch.setattr(writer, "fork_is_safe", lambda: True)
    started = []
    real = csvfiles.ForkedFile
    monkeypatch.setattr(csvfiles, "ForkedFile", lambda *a: started.append(a[0].name) or real(*a))
    (exported,) = writer.analyse_and_export(run)
    assert "kernel_details.csv" in started and "step_trace_time.csv" in started
    assert _digests(out) == before
    assert not exported.failures and out / "kernel_details.csv" in exported.outputs


def test_a_forked_csv_that_fails_fails_the_analysis_by_name(tmp_path, monkeypatch, forking):
    """The child's error reaches the export: the exporter is reported failed with the error, no
    analyse.done, no half file, and the command line's exit code says so."""
    from synth import make_run

    run = make_run(tmp_path / "runs", 20_000)
    real_write = csvfiles.write_csv_to

    def broken_in_the_child(fh, table):
        if table.name == "kernel_details":
            raise OSError(28, "No space left on device")
        real_write(fh, table)

    monkeypatch.setattr(csvfiles, "write_csv_to", broken_in_the_child)
    (exported,) = writer.analyse_and_export(run)
    assert "kernel_details.csv" in forking
    assert [f.exporter for f in exported.failures] == ["exporters"]
    assert "No space left on device" in exported.failures[0].error
    out = run / "ASCEND_PROFILER_OUTPUT"
    names = sorted(p.name for p in out.iterdir())
    assert "kernel_details.csv" not in names and writer.DONE_MARK not in names
    assert not [n for n in names if ".tmp." in n]


def test_a_forked_csv_of_an_analysis_that_fails_later_is_stopped_and_removed(tmp_path, monkeypatch, forking):
    from synth import make_run

    run = make_run(tmp_path / "runs", 20_000)

    def broken(events):
        raise MemoryError("out of memory in an analyzer")

    # range_statistic runs after kernel_details, whose CSV is forked by then
    monkeypatch.setattr(builtin_analyzers, "BUILTIN_ANALYZERS", tuple(
        dataclasses.replace(a, compute=broken) if a.table == "range_statistic" else a
        for a in builtin_analyzers.BUILTIN_ANALYZERS))
    with pytest.raises(MemoryError):
        writer.analyse_and_export(run)
    assert "kernel_details.csv" in forking
    out = run / "ASCEND_PROFILER_OUTPUT"
    assert not out.exists() or not any(out.iterdir())


def test_the_cli_fails_when_a_forked_csv_fails(tmp_path, monkeypatch, forking, capsys):
    from synth import make_run

    run = make_run(tmp_path / "runs", 20_000)

    def broken_in_the_child(fh, table):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(csvfiles, "write_csv_to", broken_in_the_child)
    assert main(["analyse", str(run)]) == EXIT_DATA
    assert "failed: OSError: [Errno 28] No space left on device" in capsys.readouterr().err


def test_a_fork_refused_by_the_system_writes_the_table_here(tmp_path, monkeypatch):
    from npuprof.export import forked

    def no_process():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(csvfiles, "FORK_MIN_ROWS", 1)
    monkeypatch.setattr(csvfiles, "available_cores", lambda: 2)
    monkeypatch.setattr(forked, "fork_child", no_process)
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    assert csvfiles.start_csv(_table(100), tmp_path / "t.csv", lambda: True) is None
    assert fds is None or len(os.listdir("/proc/self/fd")) == fds   # its pipe closed
    assert list(tmp_path.iterdir()) == []


def test_the_trace_s_parent_helps_only_once_every_csv_child_is_collected(tmp_path):
    """wait_for_forked_files (what the trace's parent waits for before taking its share) returns only
    once the CSV children started so far are collected."""
    import threading

    from npuprof.export import forked

    r, w = os.pipe()

    def held(fh):
        os.read(r, 1)   # until the test lets it go
        fh.write(b"done")

    job = ForkedFile(tmp_path / "t.csv", held)
    returned = threading.Event()
    waiter = threading.Thread(target=lambda: (forked.wait_for_forked_files(), returned.set()))
    waiter.start()
    try:
        assert not returned.wait(0.3)
        os.write(w, b"x")
        assert job.finish().read_bytes() == b"done"
        assert returned.wait(10)
    finally:
        job.discard()   # a no-op once finished; else the child (which holds the pipe itself) is stopped
        os.close(r)
        os.close(w)
        waiter.join(10)


def test_the_forked_trace_takes_its_share_after_the_csv_children_and_without_a_fork_waits_for_none(
        tmp_path, monkeypatch):
    import threading

    from npuprof.export import forked, trace_json
    from test_perf_trace import make_events

    monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 1)
    monkeypatch.setattr(trace_json, "_cores", lambda: 2)
    running_at_finish = []
    real_finish = trace_json.ForkedTrace.finish
    monkeypatch.setattr(trace_json.ForkedTrace, "finish",
                        lambda self, help=True: running_at_finish.append(forked._running) or real_finish(self, help))
    r, w = os.pipe()
    job = ForkedFile(tmp_path / "t.csv", lambda fh: os.read(r, 1))
    try:
        events = make_events(3000, seed=2)
        # without a fork the trace is written here at once, the CSV child still running
        trace_json.write_trace_beside(events, tmp_path / "a.json", may_fork=False)
        collector = threading.Timer(0.3, lambda: (os.write(w, b"x"), job.finish()))
        collector.start()
        trace_json.write_trace_beside(events, tmp_path / "b.json", may_fork=True)
        collector.join(10)
        assert running_at_finish == [0]   # asked for its share once the CSV child was collected
        assert (tmp_path / "b.json").read_bytes() == (tmp_path / "a.json").read_bytes()
    finally:
        job.discard()
        os.close(r)
        os.close(w)


def test_an_interrupted_finish_stops_the_child_at_once_and_counts_it_out_once(tmp_path):
    """Ctrl-C while finish() waits: the child is killed (not waited for to the end of its file), its file
    removed, the running count back where it was, and a second discard changes nothing."""
    import threading

    from npuprof.export import forked

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    r, w = os.pipe()
    before = forked._running
    job = ForkedFile(tmp_path / "t.csv", lambda fh: (fh.write(b"x"), fh.flush(), os.read(r, 1)))
    release = threading.Timer(20, lambda: os.write(w, b"x"))   # a child not stopped ends here, with status 0
    release.start()
    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt):
            job.finish()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        release.cancel()
    try:
        assert os.WIFSIGNALED(job._status) and os.WTERMSIG(job._status) == signal.SIGKILL
        assert forked._running == before and list(tmp_path.iterdir()) == []
        job.discard()
        assert forked._running == before and list(tmp_path.iterdir()) == []
    finally:
        os.close(r)
        os.close(w)
