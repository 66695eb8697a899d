"""A small column table for analyzer output (what becomes one CSV).

Two kinds share one interface (``name``, ``columns``, ``len()``,
``column()``, ``rows()``, ``records()``, ``block(lo, hi)``, ``head(n)``):

- :class:`Table`: columns held in ``data`` (numpy arrays or lists), for the
  summaries (a few rows per type, step or API);
- :class:`EventRowsTable`: one row per event (kernel_details), computed from
  the event columns block by block, so writing a 10M-row CSV never holds 10M
  Python objects. Asking it for ``data``/``rows()`` builds everything (fine
  for small runs and tests).

A block maps each column to a numpy array, a list, or a column object with
``tolist()`` (string codes, fixed-point times) that the CSV writer can
render without per-row Python.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np


@dataclass
class Table:
    """Named columns of equal length; values are numpy arrays or lists.

    Example::

        >>> t = Table("op_statistic", ["OP Type", "Count"], {"OP Type": ["MatMul"], "Count": [3]})
        >>> t.rows()
        [['MatMul', 3]]
    """

    name: str
    columns: list
    data: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.data[self.columns[0]]) if self.columns and self.columns[0] in self.data else 0

    def column(self, name: str) -> Sequence[Any]:
        return self.data[name]

    def rows(self) -> list[list]:
        cols = [python_values(self.data[c]) for c in self.columns]
        return [list(r) for r in zip(*cols)]

    def records(self) -> list[dict]:
        return [dict(zip(self.columns, r)) for r in self.rows()]

    def block(self, lo: int, hi: int) -> dict:
        """Columns of rows ``lo:hi``."""
        return {c: self.data[c][lo:hi] for c in self.columns}

    def head(self, n: int) -> list[list]:
        """The first ``n`` rows (cheap on an :class:`EventRowsTable` of millions of rows)."""
        blk = self.block(0, min(n, len(self)))
        cols = [python_values(blk[c]) for c in self.columns]
        return [list(r) for r in zip(*cols)]


class EventRowsTable(Table):
    """A table with one row per event, built on demand (see module doc).

    Subclasses implement :meth:`block`.
    """

    def __init__(self, name: str, columns: list, n: int) -> None:  # noqa: D107 - no dataclass init
        self.name = name
        self.columns = list(columns)
        self._n = n
        self._data: dict | None = None

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self._n} rows>"

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__

    @property  # type: ignore[override]
    def data(self) -> dict:
        if self._data is None:
            blk = self.block(0, self._n)
            self._data = {c: _materialise(blk[c]) for c in self.columns}
        return self._data

    def block(self, lo: int, hi: int) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError


def _materialise(values: Any) -> Any:
    if isinstance(values, (list, np.ndarray)):
        return values
    return values.tolist()


def python_values(values: Any) -> list:
    """A column as Python values: floats rounded to the tools' 3 decimals, NaN (not measured) as None, which
    the writers show as an empty CSV cell and JSON null, never as a number."""
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "f":
            return [None if x != x else round(x, 3) for x in values.tolist()]
        return values.tolist()
    if isinstance(values, list):
        return values
    if hasattr(values, "tolist"):
        return values.tolist()
    return list(values)
