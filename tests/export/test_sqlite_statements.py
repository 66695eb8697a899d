"""The database writer's statement thread: statements run in the order given, an error is raised in the
caller, and a database whose writing failed is not left under its name."""
from __future__ import annotations

import sqlite3

import pytest

from npuprof.export.sqlite_db import building_db, create_table, statement_thread


def test_statements_run_in_order_on_their_own_thread(tmp_path):
    path = tmp_path / "t.db"
    with building_db(path) as con, statement_thread(con) as sql:
        create_table(sql, "t", [("a", "INTEGER")])
        for lo in range(0, 10_000, 1000):
            sql.executemany("INSERT INTO t VALUES (?)", ([i] for i in range(lo, lo + 1000)))
        sql.execute("INSERT INTO t VALUES (?)", (-1,))
    rows = [a for (a,) in sqlite3.connect(path).execute("SELECT a FROM t ORDER BY rowid")]
    assert rows == list(range(10_000)) + [-1]


def test_an_error_of_a_statement_reaches_the_caller_and_no_file_is_left(tmp_path):
    path = tmp_path / "t.db"
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        with building_db(path) as con, statement_thread(con) as sql:
            sql.execute("INSERT INTO missing VALUES (1)")
            for _ in range(5):   # raised at a later call or at the end, never lost
                sql.execute("SELECT 1")
    assert list(tmp_path.iterdir()) == []
