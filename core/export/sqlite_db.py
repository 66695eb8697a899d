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
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..fileio import FILE_MODE, secure_mkdir

INSERT_ROWS = 100_000   # rows turned into Python tuples at a time: bounds memory of the writers


@contextmanager
def building_db(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to ``path``'s temporary sibling; committed and renamed to ``path`` on success."""
    secure_mkdir(path.parent)
    tmp = path.with_name(path.name + f".tmp.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(tmp, check_same_thread=False)   # statements may run on a StatementThread
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


def create_table(con: "sqlite3.Connection | StatementThread", name: str, columns: Sequence[tuple[str, str]]) -> None:
    """``CREATE TABLE name (col TYPE, ...)`` from (column, declaration) pairs."""
    con.execute(f"CREATE TABLE {name} ({','.join(f'{c} {t}' for c, t in columns)})")


def insert_rows(con: sqlite3.Connection, name: str, width: int, rows: Iterable[Sequence]) -> None:
    con.executemany(f"INSERT INTO {name} VALUES ({','.join('?' * width)})", rows)


class StatementThread:
    """A connection's statements run on one thread of their own, in the order given, while the caller
    builds the next ones: SQLite executes a statement without Python's lock, so building rows (numpy,
    Python lists) and storing them take two cores. At most ``depth`` statements wait behind the one
    running (each holds its rows: bounded memory); a statement's error is raised at the next call.

    Example::

        with building_db(path) as con, statement_thread(con) as sql:
            sql.execute("CREATE TABLE t (a INTEGER)")
            sql.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    """

    def __init__(self, con: sqlite3.Connection, depth: int = 1) -> None:
        self.con = con
        self.depth = depth
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="npuprof-sqlite")
        self._pending: deque[Future] = deque()
        self._inline = False

    def execute(self, sql: str, params: Sequence = ()) -> None:
        self._submit(self.con.execute, sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence]) -> None:
        self._submit(self.con.executemany, sql, rows)

    def _submit(self, fn: Callable[..., Any], *args: Any) -> None:
        while len(self._pending) > self.depth:
            self._pending.popleft().result()
        if self._inline:
            _closed_here(fn, *args)
            return
        try:
            self._pending.append(self._pool.submit(_closed_here, fn, *args))
        except RuntimeError:   # the interpreter is exiting (a window saved at exit): no new threads
            self._inline = True
            self.drain()
            _closed_here(fn, *args)

    def drain(self) -> None:
        """Wait until every statement ran; raise the first error."""
        while self._pending:
            self._pending.popleft().result()


def _closed_here(fn: Callable[..., sqlite3.Cursor], *args: Any) -> None:
    """Run a statement and close its cursor on this thread: a cursor finalised on another thread resets
    the cached statement this thread may be running again meanwhile (SQLite: API misuse)."""
    fn(*args).close()


@contextmanager
def statement_thread(con: sqlite3.Connection, depth: int = 1) -> Iterator[StatementThread]:
    """A :class:`StatementThread` on ``con``, drained on success; on error the statements not yet
    started are dropped and the running one waited for (the connection is the caller's to close)."""
    statements = StatementThread(con, depth)
    try:
        yield statements
        statements.drain()
    finally:
        statements._pool.shutdown(wait=True, cancel_futures=True)
