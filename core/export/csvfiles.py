"""CSV and JSON writers for analyzer tables.

Small tables go through the :mod:`csv` module. Tables with many rows
(kernel_details: one row per compute event) are rendered block by block with
:mod:`npuprof.export.textrows`, producing the same text the :mod:`csv`
module would (minimal quoting, ``\\n`` line ends, floats as
``repr(round(x, 3))``) without one Python object per cell. The largest may
be written by a forked child (:func:`start_csv`), off this interpreter's lock.

Example::

    write_csv(result.tables["op_statistic"], out_dir / "op_statistic.csv")
"""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import IO, Any, Callable, Optional

import numpy as np

from ..analysis.table import Table
from ..events import distinct_codes, is_constant_column
from .textrows import BackgroundWriter, Pool, RowBuilder
from ..fileio import atomic_write
from .forked import ForkedFile, available_cores

VECTOR_MIN_ROWS = 1_000    # below this the csv module is as fast and simpler
BLOCK_ROWS = 16_384        # keeps one block's byte matrix near textrows.MATRIX_BYTES
FORK_MIN_ROWS = 250_000    # larger tables may be written by a forked child (see start_csv)
LONG_CELL = 256            # a string this long is quoted once per distinct value (see rows_text)


def _csv_line(values: list) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue()


_SPECIAL = frozenset(',"\r\n')


def csv_cell(text: str) -> str:
    """One field as the csv module writes it (quoted only when needed)."""
    if _SPECIAL.isdisjoint(text):
        return text
    return _csv_line([text, ""])[:-2]


def rows_text(rows: list[list]) -> str:
    """``rows`` as the :mod:`csv` module writes them (minimal quoting, ``\\n`` line ends).

    Where the first row holds a string of :data:`LONG_CELL` characters or more (a job's rank set in every
    row of cluster_communication_matrix: its bytes grow with the ranks squared), each distinct string is
    quoted once and the rows are joined; the csv module would scan every copy again.

    Example::

        rows_text([["(0, 1)", 2, 0.5, None]]) == '"(0, 1)",2,0.5,\\n'
    """
    if not rows or len(rows[0]) < 2 or not any(isinstance(v, str) and len(v) >= LONG_CELL for v in rows[0]):
        buf = io.StringIO()   # (a one-field row of "" is quoted by the csv module: left to it)
        csv.writer(buf, lineterminator="\n").writerows(rows)
        return buf.getvalue()
    strings: dict = {}

    def cell(v: Any) -> str:
        if isinstance(v, str):
            text = strings.get(v)
            if text is None:
                text = strings[v] = csv_cell(v)
            return text
        if v is None:
            return ""
        # as the csv module converts them: a float (numpy's float64 too, whose repr names its type) by float's repr
        text = float.__repr__(v) if isinstance(v, float) else str(v)
        return text if _SPECIAL.isdisjoint(text) else csv_cell(text)

    return "".join([",".join([cell(v) for v in row]) + "\n" for row in rows])


def _render_block(columns: list, block: dict, n: int, cells: dict, one_block: bool = False) -> Optional[bytes]:
    """CSV lines of one block, or None when a column needs the csv module.

    ``cells`` caches the CSV form of each string pool across blocks; a table that is ``one_block`` lays out
    only the strings its rows use.
    """
    rows = RowBuilder(n)
    for i, name in enumerate(columns):
        if i:
            rows.literal(",")
        col = block[name]
        kind = type(col).__name__
        if kind == "_Codes" and one_block:    # only the strings it uses (a run's pool is mostly other texts)
            used, at = distinct_codes(np.asarray(col.codes), len(col.pool))
            rows.pooled(at, [csv_cell(str(col.pool[c])) for c in used.tolist()])
        elif kind == "_Codes":                # the whole pool laid out once, for every block
            cached = cells.get(id(col.pool))
            if cached is None or cached[0] is not col.pool:  # the pool is held, so its id stays unique
                cached = cells[id(col.pool)] = (col.pool, Pool([csv_cell(str(s)) for s in col.pool]))
            rows.pooled(col.codes, cached[1])
        elif kind == "_Fixed3":
            rows.fixed3(col.values, strip=col.strip)
        elif kind == "_StreamIds":       # few distinct streams: rendered as a pool ("N/A" where none)
            if is_constant_column(col.values):   # one stream throughout (a host run): no np.unique per block
                uniq, inv = col.values[:1], np.zeros(n, np.int64)
            else:
                uniq, inv = np.unique(col.values, return_inverse=True)
            rows.pooled(inv.reshape(-1), [str(v) if v >= 0 else "N/A" for v in uniq.tolist()])
        elif isinstance(col, np.ndarray) and col.dtype.kind in "iu":
            if is_constant_column(col):   # one value in every row (a one-value event column): written as text once
                rows.literal(str(int(col[0])))
            else:
                rows.integer(col)
        else:
            return None
    rows.literal("\n")
    return rows.render()


def write_csv_to(fh: IO[bytes], table: Table) -> None:
    """Header and rows of ``table`` as CSV bytes."""
    fh.write(_csv_line(list(table.columns)).encode("utf-8"))
    n = len(table)
    if n < VECTOR_MIN_ROWS:
        fh.write(rows_text(table.rows()).encode("utf-8"))
        return
    cells: dict = {}
    with BackgroundWriter(fh) as out:   # render the next block while this one is written
        for lo in range(0, n, BLOCK_ROWS):
            hi = min(n, lo + BLOCK_ROWS)
            block = table.block(lo, hi)
            text = _render_block(table.columns, block, hi - lo, cells, one_block=n <= BLOCK_ROWS)
            if text is None:  # a column of Python objects: rendered as the csv module does
                cols = [python_values(block[c]) for c in table.columns]
                text = rows_text(list(zip(*cols))).encode("utf-8")
            out.write(text)


def python_values(values: Any) -> list:
    from ..analysis.table import python_values as conv

    return conv(values)


def write_csv(table: Table, path: Path) -> Path:
    """Write ``table`` as CSV with its header row, atomically."""
    return atomic_write(path, lambda fh: write_csv_to(fh, table))


def start_csv(table: Table, path: Path, may_fork: Callable[[], bool]) -> Optional[ForkedFile]:
    """``table`` being written to ``path`` by a forked child that shares it copy-on-write
    (:class:`~npuprof.export.forked.ForkedFile`: ``finish()`` renames the file in place or raises the
    child's error), or None: then write it here (:func:`write_csv`). A child is forked for a table of
    at least :data:`FORK_MIN_ROWS` rows, where this process may run on two cores or more and
    ``may_fork()`` says no live thread holds a lock the child would take
    (:func:`npuprof.export.writer.fork_is_safe`). On one core the parent would only wait for it; where
    the system has no process to give (``fork`` fails), the table is written here all the same.

    Example::

        job = start_csv(table, out / "kernel_details.csv", fork_is_safe)
        path = job.finish() if job is not None else write_csv(table, out / "kernel_details.csv")
    """
    if len(table) < FORK_MIN_ROWS or not hasattr(os, "fork") or available_cores() < 2 or not may_fork():
        return None
    try:
        return ForkedFile(path, lambda fh: write_csv_to(fh, table))
    except OSError:
        return None


def write_json(table: Table, path: Path) -> Path:
    """Write ``table`` as a JSON list of row objects, atomically."""
    return atomic_write(path, json.dumps(table.records(), indent=1, default=str))


def write_if_rows(table: Table, path: Path) -> Optional[Path]:
    """Write ``table`` as CSV when it has rows; an empty table writes no file (None).

    For tables that exist only with optional data, e.g. operator_details.csv
    without recorded shapes.

    Example::

        write_if_rows(result.tables["operator_details"], out_dir / "operator_details.csv")
    """
    if not len(table):
        return None
    return write_csv(table, path)
