"""File writing rules: private permissions, no symlink games, atomic outputs.

Directories are created 0750 and files 0640 whatever the umask. Outputs are
written to ``<name>.tmp.<pid>.<n>`` and renamed, so a reader never sees half
a file, and a failed write (full disk) leaves no empty or partial file under
the final name. Input files for analysis are checked before they are read:
a regular file, under the size limit (10 GiB, or ``NPUPROF_MAX_INPUT_BYTES``)
unless reading is forced.

Example::

    atomic_write(out_dir / "op_statistic.csv", csv_text)
    with forced_reading():                 # what ``npuprof analyse --force`` does
        check_input_file(huge_trace)       # no size limit inside the block

Long outputs (a trace, kernel_details.csv) are written behind
(:class:`WriteBehind`): the page cache keeps only their last few windows.
"""
from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import stat
import threading
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Optional, Union

from .errors import ProfilerDataError
from .libc import libc_function

DIR_MODE = 0o750
FILE_MODE = 0o640
MAX_INPUT_FILE_SIZE = 10 << 30  # 10 GiB, as the Ascend tools
MAX_INPUT_ENV = "NPUPROF_MAX_INPUT_BYTES"

_force_reading: contextvars.ContextVar[bool] = contextvars.ContextVar("npuprof_force_reading", default=False)
_tmp_counter = itertools.count()


def secure_mkdir(path: Union[str, Path]) -> Path:
    """Create ``path`` (and parents) with mode 0750; refuse a symlink."""
    path = Path(path)
    if path.is_symlink():
        raise ProfilerDataError(path, "is a symbolic link; refusing to write through it")
    if not path.is_dir():
        parent = path.parent
        if parent != path and not parent.is_dir():
            secure_mkdir(parent)
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            # someone else created it meanwhile: accept a real directory only
            if path.is_symlink() or not path.is_dir():
                raise ProfilerDataError(path, "appeared as a symbolic link or a file while being created") \
                    from None
        else:
            os.chmod(path, DIR_MODE)  # umask may have removed bits; never add more than 0750
    return path


def open_private(path: Union[str, Path], flags: int) -> int:
    """``os.open`` with mode 0640 and O_NOFOLLOW; returns the fd."""
    fd = os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def temporary_name(path: Path) -> Path:
    """A name beside ``path`` unique per process and call, for a file renamed to ``path`` once complete."""
    return path.with_name(f"{path.name}.tmp.{os.getpid()}.{next(_tmp_counter)}")


def atomic_write(path: Union[str, Path], data: Union[bytes, str, Callable[[IO[bytes]], None]]) -> Path:
    """Write ``data`` (bytes, text or a writer callback) to ``path`` atomically.

    The temporary name is unique per process and call, so two threads writing
    the same file never interleave; on any error the temporary file is removed
    and the previous content of ``path`` (if any) stays as it was.
    """
    path = Path(path)
    secure_mkdir(path.parent)
    tmp = temporary_name(path)
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(data):
                data(fh)
            else:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


class WriteBehind:
    """Starts writing a long output to disk as it grows and lets the page
    cache drop the windows already on their way, so a multi-GB output does not
    fill the cache (a 10M analysis left 175-245 MB of its 2.4 GB cached).

    Why: a buffered write allocates a fresh page-cache page for every 4 KiB.
    On a VM whose free memory goes back to the host, each of those pages is
    a host fault, and a multi-GB output pays one per page; pages dropped
    behind the writer are free again for the next windows, so the output
    reuses the same few (``make bench`` measures both: docs/performance.md).

    Writeback of each window is started (``sync_file_range``) and the window
    two back is dropped (``POSIX_FADV_DONTNEED``, which leaves pages still
    dirty or under writeback in the cache). Starting writeback blocks once
    the disk's queue is full, so both calls run in a thread of their own, on
    a duplicate of the descriptor: the writer never waits for the disk. While
    that thread is busy, windows add up and go over together when it is free;
    on a disk slower than the writer the file stays cached, as a plain write
    leaves it. Both calls are advice: where either is missing (not Linux, not
    a regular file) or fails, this does nothing more and the write goes on.

    Example::

        with WriteBehind(fh.fileno()) as behind:
            for block in blocks:
                fh.write(block)
                behind.update()          # from the fd's position
    """

    WINDOW = 32 << 20

    def __init__(self, fd: int, start: int = 0, window: Optional[int] = None) -> None:
        self.fd = fd
        self.window = window or self.WINDOW
        self._started = self._previous = self._dropped = start
        self._sync = _sync_file_range() if _is_regular(fd) else None
        self._cond = threading.Condition()
        self._task: Optional[tuple[int, int, int, int]] = None   # (start, end, drop from, drop to), handed over
        self._closed = False
        self._thread: Optional[threading.Thread] = None

    @property
    def active(self) -> bool:
        return self._sync is not None

    def update(self, end: Optional[int] = None) -> None:
        """The file is written up to ``end`` (default: the fd's position)."""
        if self._sync is None:
            return
        try:
            if end is None:
                end = os.lseek(self.fd, 0, os.SEEK_CUR)
        except (OSError, ValueError):
            self._sync = None
            return
        if end - self._started < self.window or (self._thread is None and not self._start_thread()):
            return
        with self._cond:
            if self._task is not None:   # still busy with the last windows: these go with the next ones
                return
            self._task = (self._started, end, self._dropped, self._previous)
            self._cond.notify()
        self._dropped, self._previous, self._started = self._previous, self._started, end

    def _start_thread(self) -> bool:
        """The advice thread, on its own duplicate of the descriptor; False (and no advice) if not."""
        fd = -1
        try:
            fd = os.dup(self.fd)
            self._thread = threading.Thread(target=self._advise, args=(fd, self._sync),
                                            name="npuprof-write-behind", daemon=True)
            self._thread.start()
            return True
        except (OSError, RuntimeError):
            if fd >= 0:
                os.close(fd)
            self._thread, self._sync = None, None
            return False

    def close(self) -> None:
        """No more windows; the advice thread ends after the one it is on (not waited for)."""
        with self._cond:
            self._closed = True
            self._cond.notify()

    def __enter__(self) -> "WriteBehind":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _advise(self, fd: int, sync: Callable[[int, int, int, int], int]) -> None:
        try:
            while True:
                with self._cond:
                    while self._task is None and not self._closed:
                        self._cond.wait()
                    if self._task is None:
                        return
                    start, end, drop_from, drop_to = self._task
                try:
                    if sync(fd, start, end - start, _SYNC_FILE_RANGE_WRITE) != 0:
                        raise OSError("sync_file_range")
                    if drop_to > drop_from:
                        os.posix_fadvise(fd, drop_from, drop_to - drop_from, os.POSIX_FADV_DONTNEED)
                except (OSError, ValueError):
                    self._sync = None
                    return
                finally:
                    with self._cond:
                        self._task = None
        finally:
            os.close(fd)


_SYNC_FILE_RANGE_WRITE = 2
_sync_file_range_fn: Any = None


def _sync_file_range() -> Optional[Callable[[int, int, int, int], int]]:
    """libc's ``sync_file_range`` where it and ``posix_fadvise`` exist (Linux), else None."""
    global _sync_file_range_fn
    if _sync_file_range_fn is None:
        _sync_file_range_fn = hasattr(os, "posix_fadvise") and libc_function(
            "sync_file_range", "c_int", "c_longlong", "c_longlong", "c_uint") or False
    return _sync_file_range_fn or None


def _is_regular(fd: int) -> bool:
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def forced_reading(enabled: bool = True) -> Iterator[None]:
    """Inside the block :func:`check_input_file` skips the size limit
    (``analyse(..., force=True)`` / ``npuprof analyse --force``)."""
    token = _force_reading.set(bool(enabled) or _force_reading.get())
    try:
        yield
    finally:
        _force_reading.reset(token)


def max_input_size() -> int:
    """The input size limit: ``NPUPROF_MAX_INPUT_BYTES`` ("2GB", "4096") or 10 GiB."""
    raw = os.environ.get(MAX_INPUT_ENV)
    if raw is None or raw.strip() == "":
        return MAX_INPUT_FILE_SIZE
    from .validate import parse_size

    return parse_size(MAX_INPUT_ENV, raw, minimum=1)


def check_input_file(path: Union[str, Path], force: Optional[bool] = None,
                     max_size: Optional[int] = None) -> Path:
    """Checks before reading a file for analysis: it exists, is a regular
    file (not a device, FIFO or directory) and is under the size limit unless
    ``force`` (default: inside :func:`forced_reading`). Raises
    :class:`ProfilerDataError` naming the file and the problem."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise ProfilerDataError(path, f"cannot be read ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise ProfilerDataError(path, "is not a regular file")
    limit = max_input_size() if max_size is None else max_size
    forced = _force_reading.get() if force is None else force
    if st.st_size > limit and not forced:
        raise ProfilerDataError(path, f"is {st.st_size} bytes, over the {limit}-byte input limit "
                                      f"(use force=True / --force, or set {MAX_INPUT_ENV})")
    return path


def check_private_file(path: Union[str, Path], what: str = "credentials file") -> Path:
    """Refuse a secret (an SSH key, a password file) that others could read.

    The file must be a regular file (not a symlink), owned by the current
    user (or root) and not readable or writable by group or others, like
    ssh's own rule. The message names the file and the fix, never its content.
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except OSError as e:
        raise ProfilerDataError(path, f"{what} cannot be read ({e.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise ProfilerDataError(path, f"{what} is a symbolic link; give the real file")
    if not stat.S_ISREG(st.st_mode):
        raise ProfilerDataError(path, f"{what} is not a regular file")
    if st.st_uid not in (os.getuid(), 0):
        raise ProfilerDataError(path, f"{what} belongs to uid {st.st_uid}, not to you")
    if st.st_mode & 0o077:
        raise ProfilerDataError(path, f"{what} is accessible by group or others (mode "
                                      f"{oct(st.st_mode & 0o777)}); run chmod 600 {path}")
    return path
