"""One output file written by a forked child process, beside the parent's other work.

A child forked from the analysing process shares its tables copy-on-write
(it only reads them) and renders with its own interpreter lock, so a long
file (kernel_details.csv at 10M events) is written on a second core while
the parent runs the analyzers and renders the trace. The child writes into a
temporary name beside the file; the parent renames it in place once the
child has exited cleanly, and raises the child's error otherwise: a file is
either complete or absent, never half-written under its name. The fork, the
child's run, the reaping and the discarding (:class:`ForkedChild`) and the
messages between parent and child (:func:`send`, :func:`receive`) are the ones
of :class:`~npuprof.export.trace_json.ForkedTrace` too.

Example::

    job = ForkedFile(out_dir / "kernel_details.csv", lambda fh: write_csv_to(fh, table))
    ...                                   # the parent goes on meanwhile
    path = job.finish()                   # renamed in place, or the child's error raised here
"""
from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import warnings
from pathlib import Path
from typing import IO, Callable, Optional

from ..fileio import open_private, secure_mkdir, temporary_name

# held from making a child's pipes to closing the parent's copies of the child's ends: a child forked
# by another thread meanwhile would hold a write end open, and the parent would read no end of file
# from its own child until that other child exits
PIPES_LOCK = threading.Lock()
_running = 0   # ForkedFile children started and not yet collected
_collected = threading.Condition()


def send(fd: int, kind: bytes, payload: bytes = b"") -> None:
    """One message to the other process: a kind byte, the payload's length (8 bytes) and the payload."""
    view = memoryview(kind + len(payload).to_bytes(8, "little") + payload)
    while view:
        view = view[os.write(fd, view):]


def receive(fd: int) -> tuple[bytes, bytes]:
    """One message (kind, payload) from the other process; (b"", b"") at end of file."""
    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            data = os.read(fd, n - len(buf))
            if not data:
                return buf
            buf += data
        return buf

    head = exactly(9)
    if len(head) < 9:
        return b"", b""
    return head[:1], exactly(int.from_bytes(head[1:], "little"))


def error_payload(e: BaseException) -> bytes:
    """``e`` pickled, or a RuntimeError saying what it was when it does not survive pickling."""
    try:
        payload = pickle.dumps(e)
        pickle.loads(payload)
        return payload
    except Exception:
        return pickle.dumps(RuntimeError(f"{type(e).__name__}: {e}"))


def fork_child() -> int:
    """``os.fork()``, without Python 3.12+'s warning about threads: the callers fork only where
    :func:`npuprof.export.writer.fork_is_safe` says no live thread holds a lock the child takes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def wait_for_forked_files() -> None:
    """Return once every :class:`ForkedFile` child started so far has been collected (finished or
    discarded): from then on its core is free. The trace's parent helps its child only then
    (:func:`npuprof.export.trace_json.write_trace_beside`): taking a share of the trace while a file's
    child still runs would only take a core from that child and add the copy of the share."""
    with _collected:
        _collected.wait_for(lambda: _running == 0)


def available_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class ForkedChild:
    """The lifecycle every forked writer shares, written once: the fork (with a message pipe, and a
    control pipe when asked), the child's run (``E`` and its error, or ``K``, sent; then ``os._exit``),
    the reaping and :meth:`discard`. A subclass starts it with the child's work (which may send
    messages of its own) and names its ``temporaries`` (the files :meth:`discard` removes).

    Example::

        class Job(ForkedChild):
            def __init__(self, path):
                self.temporaries = (temporary_name(path),)
                self._start(self._write)
            def _write(self, msg, ctl):
                ...                       # in the child: write self.temporaries[0]; raise on error
    """

    temporaries: tuple[Path, ...] = ()

    def _start(self, run: Callable[[int, int], None], control: bool = False) -> None:
        """Fork the child; it runs ``run(msg, ctl)`` (the write end of its messages, the read end of the
        control pipe or -1; it raises on error) and exits. Sets ``pid``, ``_msg`` (the read end of the
        child's messages) and ``_ctl`` (the write end of the control pipe, or -1)."""
        with PIPES_LOCK:
            msg_r, msg_w = os.pipe()
            ctl_r = ctl_w = -1
            try:
                if control:
                    ctl_r, ctl_w = os.pipe()
                pid = fork_child()
            except BaseException:   # no process to be had (EAGAIN, ENOMEM): nothing is left open
                for fd in (msg_r, msg_w, ctl_r, ctl_w):
                    if fd >= 0:
                        os.close(fd)
                raise
            if pid == 0:   # the child: never returns
                code = 1
                try:
                    os.close(msg_r)
                    if ctl_w >= 0:
                        os.close(ctl_w)
                    code = self._child(run, msg_w, ctl_r)
                finally:
                    os._exit(code)
            os.close(msg_w)
            if ctl_r >= 0:
                os.close(ctl_r)
        self.pid, self._msg, self._ctl = pid, msg_r, ctl_w
        self._status: Optional[int] = None   # the child's wait status, once reaped

    def _child(self, run: Callable[[int, int], None], msg: int, ctl: int) -> int:
        # a parent's thread may hold the lock of its stdout/stderr: the child never writes there
        sys.stdout = sys.stderr = open(os.devnull, "w")
        warnings.simplefilter("ignore")
        try:
            run(msg, ctl)
        except BaseException as e:
            send(msg, b"E", error_payload(e))
            return 1
        send(msg, b"K")
        return 0

    @staticmethod
    def _child_error(payload: bytes) -> BaseException:
        """The error an ``E`` message carries."""
        try:
            return pickle.loads(payload)
        except Exception:
            return RuntimeError(payload.decode("utf-8", "replace"))

    def _reap(self) -> int:
        """Close the control pipe, read the child's messages to their end and wait for its exit: its
        wait status (at once when reaped already)."""
        if self._status is None:
            if self._ctl >= 0:
                os.close(self._ctl)
                self._ctl = -1
            try:
                while self._msg >= 0 and receive(self._msg)[0]:
                    pass
            finally:
                if self._msg >= 0:   # closed once: a second call (discard after an interrupt) skips it
                    os.close(self._msg)
                    self._msg = -1
                try:
                    self._status = os.waitpid(self.pid, 0)[1]
                finally:
                    self._reaped()
        return self._status

    def _reaped(self) -> None:
        """Called after each wait for the child, whether or not it returned."""

    def discard(self) -> None:
        """Stop the child and remove what it wrote."""
        if self._status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            self._reap()
        self._remove()

    def _remove(self, *paths: Path) -> None:
        """Unlink ``paths`` (by default every temporary file), those there are."""
        for p in paths or self.temporaries:
            try:
                os.unlink(p)
            except OSError:
                pass


class ForkedFile(ForkedChild):
    """``write(fh)`` run by a forked child on a temporary file beside ``path``; :meth:`finish` waits
    for it and renames the file in place or raises the child's error (the temporary file removed),
    :meth:`discard` stops the child and removes what it wrote.

    The child sends ``E`` (its error, pickled) or ``K`` (the file written and closed), then exits;
    an exit without ``K`` (killed, out of memory) is an error naming the file.
    """

    def __init__(self, path: Path, write: Callable[[IO[bytes]], None]) -> None:
        self.path = Path(path)
        secure_mkdir(self.path.parent)
        self.tmp = temporary_name(self.path)
        self.temporaries = (self.tmp,)
        self._start(lambda msg, ctl: self._write(write))
        global _running
        with _collected:
            _running += 1
            self._counted = True

    def _write(self, write: Callable[[IO[bytes]], None]) -> None:
        fd = open_private(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "wb") as fh:
            write(fh)

    def _wait(self) -> tuple[bool, Optional[BaseException]]:
        """(the child said the file is complete, its error), once it has exited and been reaped. Interrupted,
        the child is left to :meth:`finish`'s :meth:`discard`, which stops it rather than waiting for it."""
        kind, payload = receive(self._msg)   # its one message, or end of file when it died first
        self._reap()
        return kind == b"K", self._child_error(payload) if kind == b"E" else None

    def _reaped(self) -> None:
        global _running
        with _collected:
            if self._counted:   # once, though a wait interrupted is tried again
                self._counted = False
                _running -= 1
                _collected.notify_all()

    def finish(self) -> Path:
        """Wait for the child; ``path`` once its file is complete, else the child's error raised here
        (and no file). Interrupted (Ctrl-C), the child is stopped and its file removed."""
        try:
            done, error = self._wait()
        except BaseException:
            self.discard()
            raise
        if error is None and (not done or self._status != 0):
            error = RuntimeError(f"the process writing {self.path.name} ended with wait status {self._status} "
                                 "before the file was complete")
        if error is not None:
            self._remove()
            raise error
        os.replace(self.tmp, self.path)
        return self.path
