"""trace_view.json rendered by a forked child while the analyzers run and the CSVs are written: the same bytes
as written in one process, whoever renders which chunks; the child's errors raised in the parent; nothing
left behind when the trace is not taken."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from npuprof.export import textrows, trace_json
from npuprof.fileio import WriteBehind
from npuprof.export.writer import analyse_and_export

from test_perf_trace import make_events

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _one_process(events, tmp_path, **settings) -> bytes:
    path = tmp_path / "single.json"
    trace_json.write_trace(events, path, **settings)
    return path.read_bytes()


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(textrows, "MATRIX_BYTES", 1)   # 1024 rows per chunk: many chunks to share
    monkeypatch.setattr(WriteBehind, "WINDOW", 4096)   # written behind at every few blocks
    monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 1)


@pytest.mark.parametrize("help", [True, False])
def test_forked_trace_is_the_one_process_trace(tmp_path, small_chunks, help):
    events = make_events(6000, seed=3)
    settings = {"rank": 2, "world_size": 4, "metadata": {"partial": False}, "host_pid": 100}
    path = tmp_path / "out" / "trace_view.json"
    job = trace_json.ForkedTrace(events, path, settings)
    assert job.finish(help=help) == path
    assert path.read_bytes() == _one_process(events, tmp_path, **settings)
    assert sorted(p.name for p in path.parent.iterdir()) == ["trace_view.json"]


def test_parent_renders_what_the_child_has_not_reached(tmp_path, small_chunks, monkeypatch):
    events = make_events(20000, seed=5)
    path = tmp_path / "trace_view.json"
    appended = []
    real_append = trace_json._append_file
    monkeypatch.setattr(trace_json, "_append_file", lambda *a: appended.append(a[2]) or real_append(*a))
    job = trace_json.ForkedTrace(events, path, {})
    os.kill(job.pid, 19)             # SIGSTOP right after the fork, before the child reaches its last chunk
    try:
        os.write(job._ctl, b"s")     # asked before it renders on: it stops at the next chunk
    finally:
        os.kill(job.pid, 18)         # SIGCONT
    assert job.finish() == path      # asks again: the child skips the second request
    assert path.read_bytes() == _one_process(events, tmp_path)
    assert len(appended) == 1 and 0 < appended[0] < path.stat().st_size   # the parent's half, after the child's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["single.json", "trace_view.json"]


def test_child_error_is_raised_here_and_leaves_no_file(tmp_path, small_chunks):
    events = make_events(3000)
    blocker = tmp_path / "file"
    blocker.write_text("")
    job = trace_json.ForkedTrace(events, blocker / "trace_view.json", {})   # its folder cannot be made
    with pytest.raises(Exception, match="symbolic link or a file"):
        job.finish()
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def test_discard_stops_the_child_and_removes_its_file(tmp_path, small_chunks):
    events = make_events(20000)
    path = tmp_path / "out" / "trace_view.json"
    job = trace_json.ForkedTrace(events, path, {})
    job.discard()
    with pytest.raises(ChildProcessError):
        os.waitpid(job.pid, os.WNOHANG)   # reaped
    assert not (tmp_path / "out").exists()


def test_forked_only_above_the_threshold_and_where_the_caller_says_it_is_safe(tmp_path, monkeypatch):
    started = []
    real = trace_json.ForkedTrace
    monkeypatch.setattr(trace_json, "ForkedTrace", lambda *a: started.append(1) or real(*a))
    events = make_events(100)
    one = _one_process(events, tmp_path)
    assert trace_json.write_trace_beside(events, tmp_path / "a.json", may_fork=True).read_bytes() == one
    monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 1)
    assert trace_json.write_trace_beside(events, tmp_path / "b.json", may_fork=False).read_bytes() == one
    assert started == []
    assert trace_json.write_trace_beside(events, tmp_path / "c.json", may_fork=True).read_bytes() == one
    assert started == [1]


def test_fork_is_safe_beside_export_threads_only():
    """An exporter may fork beside the writer's own threads (and the one waiting for them), never beside
    a live thread of someone else's (its locks could be held at the fork)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from npuprof.export import writer

    release = threading.Event()
    user = threading.Thread(target=release.wait)   # not a daemon: its locks could be held at the fork
    with ThreadPoolExecutor(2, thread_name_prefix=writer.EXPORT_THREAD_PREFIX) as pool:
        waiting = pool.submit(release.wait)   # another exporter thread, busy
        me = threading.get_ident()
        with writer._exporting_lock:
            writer._exporting.add(me)   # this thread waits for the exporters, as write_outputs does
        try:
            assert pool.submit(writer.fork_is_safe).result() is _no_other_threads()
            user.start()
            assert pool.submit(writer.fork_is_safe).result() is False
        finally:
            release.set()
            user.join()
            waiting.result()
            with writer._exporting_lock:
                writer._exporting.discard(me)


def _no_other_threads() -> bool:
    """True when no thread of another test is still alive (then the writer's threads alone are safe)."""
    import threading

    from npuprof.export import writer
    return all(t is threading.main_thread() or t.daemon or t.name.startswith(writer.EXPORT_THREAD_PREFIX)
               for t in threading.enumerate())


def _digests(folder: Path) -> dict:
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("threads", [True, False])
def test_analyse_writes_the_same_outputs_with_the_forked_trace(tmp_path, monkeypatch, threads):
    """The trace forked by an exporter thread while the analyzers run (the writer's schedule from its
    concurrency size), or forked here once they are done (a smaller run's): the same files."""
    from npuprof.export import writer
    from synth import make_run

    run = make_run(tmp_path / "runs", 30_000)
    monkeypatch.setattr(textrows, "MATRIX_BYTES", 1)   # chunks decide the grouping of kinds: the same in both
    monkeypatch.setattr(WriteBehind, "WINDOW", 4096)
    monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 10**12)   # rendered on the exporter's thread alone
    analyse_and_export(run)
    out = run / "ASCEND_PROFILER_OUTPUT"
    before = _digests(out)
    for p in out.iterdir():
        p.unlink()
    monkeypatch.setattr(writer, "fork_is_safe", lambda: True)   # whatever other tests left running
    monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 1)
    if threads:
        monkeypatch.setattr(writer, "CONCURRENT_MIN_EVENTS", 1)
    started = []
    real = trace_json.ForkedTrace
    monkeypatch.setattr(trace_json, "ForkedTrace", lambda *a: started.append(1) or real(*a))
    (exported,) = analyse_and_export(run)
    assert started == [1]
    assert _digests(out) == before
    assert out / "trace_view.json" in exported.outputs and not exported.failures


def test_a_fork_refused_by_the_system_is_raised_with_no_pipe_left_open(tmp_path, monkeypatch):
    from npuprof.export import forked

    def no_process():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(forked, "fork_child", no_process)
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    with pytest.raises(BlockingIOError):
        trace_json.ForkedTrace(make_events(100), tmp_path / "trace_view.json", {})
    assert fds is None or len(os.listdir("/proc/self/fd")) == fds   # both its pipes closed
    assert list(tmp_path.iterdir()) == []


def test_a_fork_refused_by_the_system_renders_the_trace_here(tmp_path, monkeypatch):
    from npuprof.export import forked

    def no_process():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    events = make_events(2000, seed=3)
    trace_json.write_trace(events, tmp_path / "expected.json")
    monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 1)
    monkeypatch.setattr(forked, "fork_child", no_process)
    helped = []
    written = trace_json.write_trace_beside(events, tmp_path / "out" / "trace_view.json", may_fork=True,
                                            help_after=lambda: helped.append(1))
    assert helped == [1]
    assert written.read_bytes() == (tmp_path / "expected.json").read_bytes()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["trace_view.json"]   # no temporary left


def test_interrupted_while_rendering_the_rest_leaves_no_file_nor_child(tmp_path, small_chunks, monkeypatch):
    events = make_events(20000, seed=7)
    path = tmp_path / "out" / "trace_view.json"
    job = trace_json.ForkedTrace(events, path, {})

    def interrupted(self, first_chunk):
        raise KeyboardInterrupt

    monkeypatch.setattr(trace_json.ForkedTrace, "_render_part", interrupted)
    os.kill(job.pid, 19)             # SIGSTOP until asked: it stops before rendering on, the rest is ours
    os.write(job._ctl, b"s")
    os.kill(job.pid, 18)
    with pytest.raises(KeyboardInterrupt):
        job.finish(help=False)   # asked above: the child stops and the parent takes the second half
    with pytest.raises(ChildProcessError):
        os.waitpid(job.pid, os.WNOHANG)   # reaped
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_append_file_in_the_kernel_or_by_reads_and_writes(tmp_path, monkeypatch, kernel_copy):
    calls = []
    if not kernel_copy:
        def refused(*a):
            raise OSError(18, "Invalid cross-device link")
        monkeypatch.setattr(os, "copy_file_range", refused, raising=False)
    elif hasattr(os, "copy_file_range"):
        real = os.copy_file_range
        monkeypatch.setattr(os, "copy_file_range", lambda *a: calls.append(a) or real(*a))
    monkeypatch.setattr(WriteBehind, "WINDOW", 1 << 20)   # copied and written behind window by window
    src, dst = tmp_path / "part", tmp_path / "file"
    src.write_bytes(bytes(range(256)) * 40000)
    dst.write_bytes(b"head-" * 3)
    trace_json._append_file(src, dst, 15)
    assert dst.read_bytes() == b"head-" * 3 + bytes(range(256)) * 40000
    assert bool(calls) == (kernel_copy and hasattr(os, "copy_file_range"))   # the path the test names ran


@pytest.mark.parametrize("cores", [1, 2])
def test_this_thread_helps_the_child_only_where_a_second_core_is_there(tmp_path, small_chunks, monkeypatch, cores):
    asked = []
    real_finish = trace_json.ForkedTrace.finish
    monkeypatch.setattr(trace_json.ForkedTrace, "finish", lambda self, help=True: asked.append(help)
                        or real_finish(self, help))
    monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 1)
    monkeypatch.setattr(trace_json, "_cores", lambda: cores)
    events = make_events(6000, seed=11)
    path = trace_json.write_trace_beside(events, tmp_path / "out" / "trace_view.json", may_fork=True)
    assert asked == [cores > 1]
    assert path.read_bytes() == _one_process(events, tmp_path)


def test_an_error_in_the_parent_s_share_stops_the_child_at_once(tmp_path, small_chunks, monkeypatch):
    """The parent's share raising (Ctrl-C, a full disk) stops the child there: it is not waited for to the
    end of its own share, whose file would be removed anyway."""
    import time

    events = make_events(20000, seed=7)
    real_send = trace_json.send

    def slow_share(fd, kind, payload=b""):   # the child, its share rendered: it says so 30 s later
        if kind == b"P":
            time.sleep(30)
        real_send(fd, kind, payload)

    monkeypatch.setattr(trace_json, "send", slow_share)
    job = trace_json.ForkedTrace(events, tmp_path / "out" / "trace_view.json", {})

    def full_disk(self, first_chunk):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(trace_json.ForkedTrace, "_render_part", full_disk)
    os.kill(job.pid, 19)             # SIGSTOP until asked: it stops before rendering on, the rest is ours
    os.write(job._ctl, b"s")
    os.kill(job.pid, 18)
    with pytest.raises(OSError, match="No space left"):
        job.finish(help=False)
    assert os.WIFSIGNALED(job._status) and os.WTERMSIG(job._status) == 9   # killed, not waited for
    assert not (tmp_path / "out").exists()
