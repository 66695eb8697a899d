"""File writing rules: private permissions, no symlink games, atomic outputs.

Directories are created 0750 and files 0640 whatever the umask. Outputs are
written to ``<name>.tmp.<pid>`` and renamed, so a reader never sees half a file.

Example::

    atomic_write(out_dir / "op_statistic.csv", csv_text)
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable, IO, Union

from .errors import ProfilerDataError

DIR_MODE = 0o750
FILE_MODE = 0o640
MAX_INPUT_FILE_SIZE = 10 << 30  # 10 GiB, as the Ascend tools


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
            if not path.is_dir():
                raise ProfilerDataError(path, "exists and is not a directory") from None
        else:
            os.chmod(path, DIR_MODE)  # umask may have removed bits; never add more than 0750
    return path


def open_private(path: Union[str, Path], flags: int) -> int:
    """``os.open`` with mode 0640 and O_NOFOLLOW; returns the fd."""
    fd = os.open(path, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return fd


def atomic_write(path: Union[str, Path], data: Union[bytes, str, Callable[[IO[bytes]], None]]) -> Path:
    """Write ``data`` (bytes, text or a writer callback) to ``path`` atomically."""
    path = Path(path)
    secure_mkdir(path.parent)
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
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


def check_input_file(path: Union[str, Path], force: bool = False,
                     max_size: int = MAX_INPUT_FILE_SIZE) -> Path:
    """Checks before reading a file for analysis: regular file, size limit."""
    path = Path(path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise ProfilerDataError(path, f"cannot be read ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise ProfilerDataError(path, "is not a regular file")
    if st.st_size > max_size and not force:
        raise ProfilerDataError(path, f"is {st.st_size} bytes, over the {max_size}-byte limit (use force=True / --force)")
    return path
