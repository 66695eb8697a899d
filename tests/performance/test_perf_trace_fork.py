"""trace_view.json rendered by a forked child while the parent analyses and writes the CSVs: the same bytes
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
    monkeypatch.setattr(trace_json, "_only_daemon_threads", lambda: True)   # whatever other tests left running


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
    assert trace_json.start_forked_trace(events, path)
    assert trace_json.has_forked_trace(path, events) and not trace_json.has_forked_trace(path, make_events(10))
    trace_json.discard_forked_traces()
    assert not (tmp_path / "out").exists()
    assert trace_json.take_forked_trace(path, events) is None


def test_no_fork_below_the_threshold_when_asked_or_beside_a_live_thread(tmp_path, monkeypatch):
    import threading

    events = make_events(100)
    assert not trace_json.start_forked_trace(events, tmp_path / "t.json")
    monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 1)
    monkeypatch.setenv("NPUPROF_NO_FORK", "1")
    assert not trace_json.start_forked_trace(events, tmp_path / "t.json")
    monkeypatch.delenv("NPUPROF_NO_FORK")
    release = threading.Event()
    worker = threading.Thread(target=release.wait)   # not a daemon: its locks could be held at the fork
    worker.start()
    try:
        assert not trace_json.start_forked_trace(events, tmp_path / "t.json")
    finally:
        release.set()
        worker.join()
    assert list(tmp_path.iterdir()) == []


def _digests(folder: Path) -> dict:
    return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_analyse_writes_the_same_outputs_with_the_forked_trace(tmp_path, monkeypatch):
    from synth import make_run

    run = make_run(tmp_path / "runs", 30_000)
    monkeypatch.setattr(textrows, "MATRIX_BYTES", 1)   # chunks decide the grouping of kinds: the same in both
    monkeypatch.setattr(WriteBehind, "WINDOW", 4096)
    monkeypatch.setenv("NPUPROF_NO_FORK", "1")
    analyse_and_export(run)
    out = run / "ASCEND_PROFILER_OUTPUT"
    before = _digests(out)
    for p in out.iterdir():
        p.unlink()
    monkeypatch.delenv("NPUPROF_NO_FORK")
    monkeypatch.setattr(trace_json, "_only_daemon_threads", lambda: True)
    monkeypatch.setattr(trace_json, "FORK_MIN_EVENTS", 1)
    started = []
    real = trace_json.ForkedTrace
    monkeypatch.setattr(trace_json, "ForkedTrace", lambda *a: started.append(1) or real(*a))
    (exported,) = analyse_and_export(run)
    assert started == [1]
    assert _digests(out) == before
    assert exported.outputs[0] == out / "trace_view.json" and not exported.failures
    assert not trace_json._forked


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
