"""Writing one sqlite database file: under a temporary name, renamed when complete.

Shared by the Ascend profiler database (:mod:`npuprof.export.ascend_db_writer`) and
its ``analysis.db`` (:mod:`npuprof.export.analysis_db`). A database being
written is never visible under its final name, so a crash or a full disk
leaves no half-written file a tool could open. No rollback journal is kept:
the file is discarded on failure anyway.

Example::

    with building_db(Path("out/analysis.db")) as con:
        con.execute("CREATE TABLE t (a INTEGER)")
    # out/analysis.db now exists, complete
"""
from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from ..fileio import FILE_MODE, secure_mkdir

INSERT_ROWS = 100_000   # rows turned into Python tuples at a time: bounds memory of the writers


@contextmanager
def building_db(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to ``path``'s temporary sibling; committed and renamed to ``path`` on success."""
    secure_mkdir(path.parent)
    tmp = path.with_name(path.name + f".tmp.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(tmp)
    try:
        os.chmod(tmp, FILE_MODE)
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("PRAGMA locking_mode=EXCLUSIVE")
        con.execute("PRAGMA cache_size=-65536")   # 64 MiB of page cache at most
        yield con
        con.commit()
        con.close()
        os.replace(tmp, path)
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        raise


def create_table(con: sqlite3.Connection, name: str, columns: Sequence[tuple[str, str]]) -> None:
    """``CREATE TABLE name (col TYPE, ...)`` from (column, declaration) pairs."""
    con.execute(f"CREATE TABLE {name} ({','.join(f'{c} {t}' for c, t in columns)})")


def insert_rows(con: sqlite3.Connection, name: str, width: int, rows: Iterable[Sequence]) -> None:
    con.executemany(f"INSERT INTO {name} VALUES ({','.join('?' * width)})", rows)
