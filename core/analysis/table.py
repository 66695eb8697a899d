"""A small column table for analyzer output (what becomes one CSV)."""
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
        cols = [_pylist(self.data[c]) for c in self.columns]
        return [list(r) for r in zip(*cols)]

    def records(self) -> list[dict]:
        return [dict(zip(self.columns, r)) for r in self.rows()]


def _pylist(values: Any) -> list:
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "f":
            return [round(x, 3) for x in values.tolist()]
        return values.tolist()
    return list(values)
