"""Which profiler database a file is, and opening one read-only.

Example::

    >>> db_kind(Path("ascend_pytorch_profiler_1.db"))
    'torch_npu'
"""
from __future__ import annotations

import functools
import re
import sqlite3
from pathlib import Path
from typing import Optional
from urllib.parse import quote


SQLITE_MAGIC = b"SQLite format 3\x00"


TORCH_NPU_DB_RE = re.compile(r"^ascend_pytorch_profiler(?:_(\d+))?\.db$")


MINDSPORE_DB_RE = re.compile(r"^ascend_mindspore_profiler(?:_(\d+))?\.db$")


MSPROF_DB_RE = re.compile(r"^msprof_\d+\.db$")


ANALYSIS_DB = "analysis.db"


@functools.lru_cache(maxsize=4096)
def group_id(name: str) -> str:
    """The id the Ascend tools give a communication group in their summaries.

    Two 32-bit polynomial hashes of the name (multipliers 29 and 131), high
    and low word, as msprof-analyze's ``double_hash``; a name that is already
    an id (all digits) is kept.

    Example::

        >>> group_id("90.91.105.46%enp189s0f0_60000_0_1736410538306028")
        '17148521525495523210'
        >>> group_id("17522688603477080586")
        '17522688603477080586'
    """
    if name.isdigit():
        return name
    high = low = 0
    for ch in name:
        high = (high * 29 + ord(ch)) & 0xFFFFFFFF
        low = (low * 131 + ord(ch)) & 0xFFFFFFFF
    return str((high << 32) | low)


def db_kind(path: Path) -> Optional[str]:
    """Which tool wrote a profiler database, judged by its file name: the
    event ``source`` (``torch_npu``, ``mindspore``, ``cann``) or None.

    Example::

        >>> db_kind(Path("ascend_pytorch_profiler_1.db")), db_kind(Path("msprof_20250109080000.db"))
        ('torch_npu', 'cann')
        >>> db_kind(Path("analysis.db")) is None
        True
    """
    name = Path(path).name
    if TORCH_NPU_DB_RE.match(name):
        return "torch_npu"
    if MINDSPORE_DB_RE.match(name):
        return "mindspore"
    if MSPROF_DB_RE.match(name):
        return "cann"
    return None


def rank_in_name(path: Path) -> Optional[int]:
    """The rank in a framework database's name (``..._profiler_3.db`` -> 3), else None."""
    m = TORCH_NPU_DB_RE.match(Path(path).name) or MINDSPORE_DB_RE.match(Path(path).name)
    return int(m.group(1)) if m and m.group(1) is not None else None


def framework_dbs(output_dir: Path) -> list[Path]:
    """The torch_npu / MindSpore profiler databases in an ``ASCEND_PROFILER_OUTPUT`` folder."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return []
    return sorted(p for p in output_dir.iterdir()
                  if p.is_file() and (TORCH_NPU_DB_RE.match(p.name) or MINDSPORE_DB_RE.match(p.name)))


def open_readonly(path: Path) -> sqlite3.Connection:
    """An sqlite connection that cannot change ``path`` or write beside it
    (read-only, immutable: no journal, WAL or lock file)."""
    uri = f"file:{quote(str(Path(path).resolve()))}?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True)
