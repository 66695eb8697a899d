"""CSV and JSON writers for analyzer tables."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from ..analysis.table import Table
from ..fileio import atomic_write


def table_csv(table: Table) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(table.columns)
    w.writerows(table.rows())
    return buf.getvalue()


def write_csv(table: Table, path: Path) -> Path:
    """Write ``table`` as CSV with its header row, atomically."""
    return atomic_write(path, table_csv(table))


def write_json(table: Table, path: Path) -> Path:
    """Write ``table`` as a JSON list of row objects, atomically."""
    return atomic_write(path, json.dumps(table.records(), indent=1, default=str))
