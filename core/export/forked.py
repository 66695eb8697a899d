"""One output file written by a forked child process, beside the parent's other work.

A child forked from the analysing process shares its tables copy-on-write
(it only reads them) and renders with its own interpreter lock, so a long
file (kernel_details.csv at 10M events) is written on a second core while
the parent runs the analyzers and renders the trace. The child writes into a
temporary name beside the file; the parent renames it in place once the
child has exited cleanly, and raises the child's error otherwise: a file is
either complete or absent, never half-written under its name. The messages
between parent and child (:func:`send`, :func:`receive`) are the ones of
:class:`~npuprof.export.trace_json.ForkedTrace` too.

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


class ForkedFile:
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
        with PIPES_LOCK:
            msg_r, msg_w = os.pipe()
            try:
                pid = fork_child()
            except BaseException:   # no process to be had (EAGAIN, ENOMEM): nothing is left open
                os.close(msg_r)
                os.close(msg_w)
                raise
            if pid == 0:   # the child: never returns
                code = 1
                try:
                    os.close(msg_r)
                    code = self._child(msg_w, write)
                finally:
                    os._exit(code)
            os.close(msg_w)
        self.pid, self._msg = pid, msg_r
        self._status: Optional[int] = None
        global _running
        with _collected:
            _running += 1

    def _child(self, msg: int, write: Callable[[IO[bytes]], None]) -> int:
        # a parent's thread may hold the lock of its stdout/stderr: the child never writes there
        sys.stdout = sys.stderr = open(os.devnull, "w")
        warnings.simplefilter("ignore")
        try:
            fd = open_private(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with os.fdopen(fd, "wb") as fh:
                write(fh)
        except BaseException as e:
            send(msg, b"E", error_payload(e))
            return 1
        send(msg, b"K")
        return 0

    def _wait(self) -> tuple[bool, Optional[BaseException]]:
        """(the child said the file is complete, its error), once it has exited and been reaped."""
        done, error = False, None
        try:
            kind, payload = receive(self._msg)   # its one message, or end of file when it died first
            if kind == b"E":
                try:
                    error = pickle.loads(payload)
                except Exception:
                    error = RuntimeError(payload.decode("utf-8", "replace"))
            done = kind == b"K"
        finally:
            self._reap()
        return done, error

    def _reap(self) -> None:
        global _running
        if self._status is None:
            os.close(self._msg)
            try:
                self._status = os.waitpid(self.pid, 0)[1]
            finally:
                with _collected:
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

    def discard(self) -> None:
        """Stop the child and remove what it wrote."""
        if self._status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
            self._reap()
        self._remove()

    def _remove(self) -> None:
        try:
            os.unlink(self.tmp)
        except OSError:
            pass
