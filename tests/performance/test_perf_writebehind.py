"""Long outputs are written behind (npuprof.fileio.WriteBehind): writeback of each window is started as the
file grows and the window two back is dropped from the page cache, in a thread of its own so the writer
never waits for the disk; the bytes written never change, and where the advice is missing or fails the
write goes on as a plain one."""
from __future__ import annotations

import io
import os
import threading
import time

import pytest

from npuprof import fileio
from npuprof.export.textrows import BackgroundWriter
from npuprof.fileio import WriteBehind

WINDOW = 64 << 10
BLOCK = bytes(range(256)) * 100   # 25,600 bytes: windows end between blocks, never on them


@pytest.fixture
def advice(monkeypatch):
    """Every sync_file_range and POSIX_FADV_DONTNEED call, recorded (and not made)."""
    calls = {"started": [], "dropped": [], "gate": None}

    def sync(fd, offset, length, flags):
        if calls["gate"] is not None:
            calls["gate"].wait()
        calls["started"].append((offset, offset + length, flags))
        return 0

    def fadvise(fd, offset, length, advice):
        calls["dropped"].append((offset, offset + length, advice))

    monkeypatch.setattr(fileio, "_sync_file_range_fn", sync)
    monkeypatch.setattr(os, "posix_fadvise", fadvise, raising=False)
    return calls


def _write(path, blocks: int, window: int = WINDOW) -> WriteBehind:
    """``blocks`` blocks written behind, each window's advice taken before the next block (a fast
    fake disk: no window waits for another); returns once the advice thread has ended."""
    with open(path, "wb") as fh:
        with WriteBehind(fh.fileno(), window=window) as behind:
            for i in range(blocks):
                fh.write(BLOCK)
                fh.flush()
                behind.update()
                _idle(behind)
    if behind._thread is not None:
        behind._thread.join(10)
        assert not behind._thread.is_alive()
    return behind


def _idle(behind: WriteBehind) -> None:
    """Wait until the advice thread has taken the advice it was given."""
    while behind._task is not None:
        time.sleep(0.001)


def test_each_window_is_started_once_and_dropped_two_windows_later(tmp_path, advice):
    behind = _write(tmp_path / "out", 40)     # 1,024,000 bytes: 13 windows of >= 64 KiB
    assert behind.active
    started = advice["started"]
    assert len(started) == 1_024_000 // (3 * len(BLOCK)) and started[0][0] == 0   # a window every third block
    assert all(a[1] == b[0] for a, b in zip(started, started[1:]))                  # no gap, no overlap
    assert all(end - lo >= WINDOW for lo, end, _ in started) and {f for *_, f in started} == {2}  # WRITE only
    dropped = advice["dropped"]
    assert dropped[0][0] == 0 and all(a[1] == b[0] for a, b in zip(dropped, dropped[1:]))
    assert dropped[-1][1] == started[-2][0]          # the last two windows stay cached
    assert {a for *_, a in dropped} == {os.POSIX_FADV_DONTNEED}
    assert (tmp_path / "out").read_bytes() == BLOCK * 40


def test_the_writer_never_waits_for_a_busy_disk(tmp_path, advice):
    """While starting writeback blocks (the disk's queue is full), the writes go on; the windows
    written meanwhile go over together once the thread is free again."""
    advice["gate"] = threading.Event()
    release = threading.Timer(20, advice["gate"].set)   # only if the writer did wait (the test then fails)
    release.start()
    try:
        with open(tmp_path / "out", "wb") as fh:
            behind = WriteBehind(fh.fileno(), window=WINDOW)
            for _ in range(20):
                fh.write(BLOCK)
                fh.flush()
                behind.update()
            assert not advice["gate"].is_set() and advice["started"] == []   # all written, the disk still busy
            advice["gate"].set()
            _idle(behind)
            for _ in range(20):
                fh.write(BLOCK)
                fh.flush()
                behind.update()
                _idle(behind)
            behind.close()
        behind._thread.join(10)
    finally:
        release.cancel()
    started = advice["started"]
    assert started[0] == (0, 3 * len(BLOCK), 2)                  # the first window, handed over at once
    assert started[1][0] == 3 * len(BLOCK) and started[1][1] >= 20 * len(BLOCK)   # then what piled up
    assert all(a[1] == b[0] for a, b in zip(started, started[1:]))
    assert (tmp_path / "out").read_bytes() == BLOCK * 40


def test_a_real_file_takes_the_advice_and_keeps_its_bytes(tmp_path):
    """The real system calls on the test's file system: no error turns the advice off."""
    if fileio._sync_file_range() is None:
        pytest.skip("no sync_file_range/posix_fadvise here (not Linux): nothing is written behind")
    behind = _write(tmp_path / "out", 400, window=4096)
    assert behind.active
    assert (tmp_path / "out").read_bytes() == BLOCK * 400


def test_failing_advice_turns_itself_off_and_the_write_goes_on(tmp_path, advice, monkeypatch):
    monkeypatch.setattr(fileio, "_sync_file_range_fn", lambda *a: advice["started"].append(a) or -1)
    behind = _write(tmp_path / "out", 40)
    assert not behind.active and len(advice["started"]) == 1 and not advice["dropped"]
    assert (tmp_path / "out").read_bytes() == BLOCK * 40


def test_nothing_is_written_behind_on_a_pipe_or_in_memory(advice):
    r, w = os.pipe()
    try:
        assert not WriteBehind(w).active
    finally:
        os.close(r)
        os.close(w)
    buf = io.BytesIO()
    with BackgroundWriter(buf) as out:
        for _ in range(40):
            out.write(BLOCK)
    assert buf.getvalue() == BLOCK * 40 and advice["started"] == advice["dropped"] == []


@pytest.mark.parametrize("write_behind", [True, False])
def test_background_writer_writes_behind_unless_told_not_to(tmp_path, advice, monkeypatch, write_behind):
    monkeypatch.setattr(WriteBehind, "WINDOW", WINDOW)
    with open(tmp_path / "out", "wb") as fh:
        with BackgroundWriter(fh, write_behind=write_behind) as out:
            for _ in range(40):
                out.write(BLOCK)
    thread = out._behind._thread
    if thread is not None:
        thread.join(10)
    assert bool(advice["started"]) == write_behind
    assert (tmp_path / "out").read_bytes() == BLOCK * 40


def test_the_advice_thread_closes_its_own_descriptor(tmp_path, advice):
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    _write(tmp_path / "out", 40)
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before


def test_no_thread_to_be_had_means_no_advice_and_no_descriptor_left(tmp_path, advice, monkeypatch):
    def refused(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    behind = _write(tmp_path / "out", 40)
    assert not behind.active and advice["started"] == []
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) == before
    assert (tmp_path / "out").read_bytes() == BLOCK * 40
