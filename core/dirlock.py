"""One running profiler per output directory and rank, across processes.

Invariant: while a Profiler runs, its process holds an exclusive POSIX record lock (``lockf``) on
``output_path/.npuprof.rank{rank}.lock`` (the ranks of one job may share the directory). The kernel
drops the lock when its owner dies, so a crashed run never leaves it stuck; a forked child never
inherits it, even one forked from C (dataset workers) where ``os.register_at_fork`` hooks do not run,
so a worker that outlives a killed trainer cannot keep the directory locked. The one trap of record
locks, that closing any descriptor of the file drops the lock, cannot bite: only :meth:`DirLock.acquire`
opens the file.

Example::

    lock = DirLock.acquire(Path("./prof"), rank=0)    # ProfilerStateError when another profiler holds it
    ...
    lock.release()
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Optional

from .errors import ProfilerStateError
from .fileio import open_private, secure_mkdir

LOCK_FILE = ".npuprof.rank{rank}.lock"


class DirLock:
    """The held lock of one output directory and rank."""

    def __init__(self, fd: int) -> None:
        self._fd: Optional[int] = fd

    @classmethod
    def acquire(cls, out: Path, rank: int) -> "DirLock":
        """Take the lock (the file records the owner's pid, for the message of the next one who tries)."""
        secure_mkdir(out)
        name = LOCK_FILE.format(rank=rank)
        try:
            fd = open_private(out / name, os.O_RDWR | os.O_CREAT)
        except OSError as e:
            raise ProfilerStateError(f"output_path {out}: cannot create the lock file {name} ({e.strerror})") from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = os.pread(fd, 64, 0).decode(errors="replace").strip()
            os.close(fd)
            raise ProfilerStateError(f"output_path {out} is in use by another running profiler of rank {rank}"
                                     f"{' (pid ' + owner + ')' if owner else ''}; use another output_path "
                                     "or stop that profiler first") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass   # the pid is only informative; a full disk must not stop the lock
        return cls(fd)

    def release(self) -> None:
        """Unlock and close (idempotent)."""
        if self._fd is not None:
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    def forget_after_fork(self) -> None:
        """In a forked child: close the copied descriptor without unlocking (the child holds no lock)."""
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
