"""Small argument checkers that raise ProfilerConfigError with the name,
the value and what is allowed. Shared by the core config and integrations
(profiling_options, acl.json, CLI flags).

Example::

    >>> check_int("active", 0, minimum=1)
    Traceback (most recent call last):
    ...
    npuprof.errors.ProfilerConfigError: invalid active=0: expected an integer >= 1
"""
from __future__ import annotations

import enum
import os
import re
import stat
from pathlib import Path
from typing import Any, Iterable, Optional, Type, TypeVar

from .errors import ProfilerConfigError

E = TypeVar("E", bound=enum.Enum)

MAX_PATH_LENGTH = 4096
MAX_FILE_NAME_LENGTH = 255
# Characters accepted in output paths: Ascend's path manager set (letters, digits,
# CJK, ``. / _ - ~`` and spaces), widened to any Unicode letter and ``: + @ = , # %``
# which real paths use. Shell and quoting characters (; | & $ ` ' " < > * ? ! \\ ( ) [ ] { } ^)
# are refused: they break the msprof tools and scripts that handle the path.
_PATH_CHAR_RE = re.compile(r"[\w./\- ~:+@=,#%]", re.UNICODE)


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ProfilerConfigError(name, value, "True or False")
    return value


def check_int(name: str, value: Any, minimum: Optional[int] = None, maximum: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProfilerConfigError(name, value, _int_range(minimum, maximum))
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ProfilerConfigError(name, value, _int_range(minimum, maximum))
    return value


def check_number(name: str, value: Any, minimum: float, maximum: Optional[float] = None,
                 exclusive_min: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        ok = (value > minimum if exclusive_min else value >= minimum) and (maximum is None or value <= maximum)
    if not ok:
        lo = f"> {minimum}" if exclusive_min else f">= {minimum}"
        hi = f" and <= {maximum}" if maximum is not None else ""
        raise ProfilerConfigError(name, value, f"a number {lo}{hi}")
    return float(value)


def _int_range(minimum: Optional[int], maximum: Optional[int]) -> str:
    if minimum is not None and maximum is not None:
        return f"an integer in [{minimum}, {maximum}]"
    if minimum is not None:
        return f"an integer >= {minimum}"
    if maximum is not None:
        return f"an integer <= {maximum}"
    return "an integer"


def check_enum(name: str, value: Any, enum_cls: Type[E]) -> E:
    """Accept an enum member, its value or its member name (case-sensitive).

    Another library's member of an enum with the same names and values
    (``mindspore.profiler.ProfilerActivity.CPU``) is taken by its value, then
    its name; nothing of that library is imported.
    """
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, enum.Enum) and not isinstance(value, str):
        candidates = [c for c in (value.value, value.name) if isinstance(c, str)]
    elif isinstance(value, str):
        candidates = [value]
    else:
        candidates = []
    for text in candidates:
        for member in enum_cls:
            if text == member.value or text == member.name:
                return member
    allowed = ", ".join(repr(m.value) for m in enum_cls)
    raise ProfilerConfigError(name, value, f"one of {allowed}")


def check_enum_list(name: str, value: Any, enum_cls: Type[E], allow_empty: bool = True) -> list[E]:
    if isinstance(value, (str, enum.Enum)):
        value = [value]
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise ProfilerConfigError(name, value, f"a list of {enum_cls.__name__} values")
    out: list[E] = []
    for v in value:
        member = check_enum(name, v, enum_cls)
        if member not in out:
            out.append(member)
    if not out and not allow_empty:
        raise ProfilerConfigError(name, value, f"a non-empty list of {enum_cls.__name__} values")
    return out


def check_str(name: str, value: Any, max_len: int = 1024, pattern: Optional[str] = None,
              allowed: str = "") -> str:
    if not isinstance(value, str) or len(value) > max_len or (pattern and not re.fullmatch(pattern, value)):
        raise ProfilerConfigError(name, value, allowed or f"a string of at most {max_len} characters")
    return value


def check_callable(name: str, value: Any) -> Any:
    if value is not None and not callable(value):
        raise ProfilerConfigError(name, value, "a callable or None")
    return value


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    choices = list(choices)
    if value not in choices:
        raise ProfilerConfigError(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def check_output_path(name: str, value: Any, file: bool = False) -> Path:
    """Validate a directory we will write into (it may not exist yet); with
    ``file=True``, a file to write (replaced if it exists), checked the same
    way and its directory as the output directory.

    Refuses, with the reason: a non-string; a path over 4096 characters or
    with a component over 255; control characters or characters outside
    letters, digits, spaces and ``. / _ - ~ : + @ = , # %`` (the Ascend tools'
    set, widened); an existing file in the way; a symbolic link as the output
    directory or as the directory it would be created in; any other symbolic
    link on the path unless root placed it in a root-only directory (system
    layouts such as ``/home -> /data/home``); and any existing directory on
    the path that is world-writable without the sticky bit (another user
    could swap the path under us).

    Example::

        >>> check_output_path("output_path", "/tmp/prof;rm -rf ~")
        Traceback (most recent call last):
        ...
        npuprof.errors.ProfilerConfigError: invalid output_path='/tmp/prof;rm -rf ~': expected a path ...
    """
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise ProfilerConfigError(name, value, "a non-empty path string")
    if len(value) > MAX_PATH_LENGTH:
        raise ProfilerConfigError(name, value[:40] + "...", f"a path of at most {MAX_PATH_LENGTH} characters")
    bad = sorted({c for c in value if ord(c) < 32 or ord(c) == 127})
    if bad:
        raise ProfilerConfigError(name, value, "a path without control characters",
                                  hint=f"found {', '.join(repr(c) for c in bad)}")
    bad = sorted({c for c in value if not _PATH_CHAR_RE.match(c)})
    if bad:
        raise ProfilerConfigError(name, value, "a path of letters, digits, spaces and . / _ - ~ : + @ = , # %",
                                  hint=f"found {' '.join(bad)}")
    path = Path(os.path.expanduser(value))
    for part in path.parts:
        if len(part) > MAX_FILE_NAME_LENGTH:
            raise ProfilerConfigError(name, value, f"path components of at most {MAX_FILE_NAME_LENGTH} characters",
                                      hint=f"{part[:40]}... has {len(part)}")
    path = Path(os.path.abspath(path))
    if file and (os.path.isdir(path) or not path.name):
        raise ProfilerConfigError(name, value, "a file path (a directory is in the way)")
    # The nearest existing part of the path: the directory itself, or where it will be created.
    probe = path.parent if file else path
    while not os.path.lexists(probe):
        probe = probe.parent
    if os.path.islink(probe):
        where = "the output directory" if probe == path else "the directory it would be created in"
        raise ProfilerConfigError(name, value, "a real directory, not a symbolic link",
                                  hint=f"{probe} ({where}) links to {os.path.realpath(probe)}; give that path")
    if not os.path.isdir(probe):
        raise ProfilerConfigError(name, value, "a directory path (an existing file is in the way)",
                                  hint=f"{probe} is a file")
    for part in [probe, *probe.parents]:
        st = os.lstat(part)
        if stat.S_ISLNK(st.st_mode):
            parent_st = os.stat(part.parent)
            trusted = st.st_uid == 0 and parent_st.st_uid == 0 and not parent_st.st_mode & 0o022
            if not trusted:
                raise ProfilerConfigError(name, value, "a path without symbolic links",
                                          hint=f"{part} links to {os.path.realpath(part)}; give the real path "
                                               f"{os.path.realpath(path)}")
            continue
        if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            raise ProfilerConfigError(name, value, "a path with no world-writable directory lacking the sticky bit",
                                      hint=f"{part} is mode {oct(st.st_mode & 0o7777)}; any user could replace "
                                           "what is inside (chmod o-w or +t)")
    return path


_SIZE_RE = re.compile(r"^\s*(\d+)\s*(B|KB|MB|GB|TB)?\s*$", re.IGNORECASE)
_UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def parse_size(name: str, value: Any, minimum: int = 0) -> int:
    """Parse "200MB", "1GB", 4096 into bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str) and _SIZE_RE.match(value):
        m = _SIZE_RE.match(value)
        size = int(m.group(1)) * _UNITS[(m.group(2) or "B").upper()]
    else:
        raise ProfilerConfigError(name, value, "a size such as 200MB, 1GB or a byte count")
    if size < minimum:
        raise ProfilerConfigError(name, value, f"a size of at least {minimum} bytes")
    return size


def parse_rank_list(name: str, value: Any) -> Optional[list[int]]:
    """Parse ``"0,2,4-7"`` / ``[0, 2]`` / ``None`` ("all") into sorted ranks; the one rank-list
    parser (Profiler's ``profile_rank_ids``, cluster ``--ranks``, timeline filters). A reversed
    range (``"4-2"``), a negative or a non-number is an error naming ``name``.

    Example::

        >>> parse_rank_list("ranks", "0,2,4-6")
        [0, 2, 4, 5, 6]
        >>> parse_rank_list("profile_rank_ids", "4-2")
        Traceback (most recent call last):
        ...
        npuprof.errors.ProfilerConfigError: invalid profile_rank_ids='4-2': expected rank numbers >= 0 as a list or a string like '0,2,4-7' (or 'all') (range 4-2 is reversed)
    """
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "all")):
        return None
    allowed = "rank numbers >= 0 as a list or a string like '0,2,4-7' (or 'all')"
    out: set[int] = set()
    if isinstance(value, str):
        for part in value.split(","):
            part = part.strip()
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if not m:
                raise ProfilerConfigError(name, value, allowed)
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            if hi < lo:
                raise ProfilerConfigError(name, value, allowed, hint=f"range {part} is reversed")
            out.update(range(lo, hi + 1))
    elif isinstance(value, (list, tuple, set, frozenset, range)):
        for v in value:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ProfilerConfigError(name, value, allowed)
            out.add(v)
    elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        out.add(value)
    else:
        raise ProfilerConfigError(name, value, allowed)
    return sorted(out)
