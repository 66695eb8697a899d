"""Writing cluster tables as CSV, JSON and Parquet.

Parquet (pyarrow, ``npuprof[cluster]``) keeps the CSV column names, so
DuckDB or Spark query them with quoted identifiers::

    duckdb -c "SELECT Index AS rank, avg(\\"Computing\\") FROM 'npuprof_cluster/cluster_step_trace_time.parquet' GROUP BY 1"

Column types are fixed per column from the values (int64, float64, bool,
string), so equal tables give equal Parquet schemas.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..analysis.table import Table
from ..errors import ProfilerConfigError
from ..export.json_text import dumps_indented
from ..fileio import atomic_write

FORMATS = ("csv", "json", "parquet")


def _arrow_type(values: list) -> Any:
    import pyarrow as pa

    vals = [v for v in values if v is not None]
    if vals and all(isinstance(v, bool) for v in vals):
        return pa.bool_()
    if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        return pa.int64()
    if vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return pa.float64()
    return pa.string()


def write_parquet(table: Table, path: Path) -> Path:
    """Write ``table`` as one Parquet file (atomic)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = {}
    fields = []
    for c in table.columns:
        values = list(table.data[c].tolist() if hasattr(table.data[c], "tolist") else table.data[c])
        typ = _arrow_type(values)
        if typ == pa.string():
            values = [None if v is None else str(v) for v in values]
        elif typ == pa.float64():
            values = [None if v is None else float(v) for v in values]   # None: not measured
        cols[c] = pa.array(values, type=typ)
        fields.append(pa.field(c, typ))
    at = pa.Table.from_pydict(cols, schema=pa.schema(fields))
    return atomic_write(path, lambda fh: pq.write_table(at, fh, compression="zstd"))


def write_tables(tables: dict, out_dir: Path, formats: tuple, json_elsewhere: tuple = ()) -> list[Path]:
    """Each table in each format; Parquet needs pyarrow. ``json_elsewhere``: tables whose ``<name>.json``
    the caller writes itself (a file of the same name in another layout), left out here."""
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise ProfilerConfigError("formats", bad, ", ".join(FORMATS))
    if "parquet" in formats:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ProfilerConfigError("formats", "parquet", "csv, json (pyarrow is not installed)",
                                      hint="pip install 'npuprof[cluster]'") from None
    from ..export.csvfiles import write_csv     # its number tables are built on import: not before it writes

    written = []
    for name, table in tables.items():
        if "csv" in formats:
            written.append(write_csv(table, out_dir / f"{name}.csv"))
        if "json" in formats and name not in json_elsewhere:
            written.append(atomic_write(out_dir / f"{name}.json", json.dumps(table.records(), indent=1)))
        if "parquet" in formats:
            written.append(write_parquet(table, out_dir / f"{name}.parquet"))
    return written


def write_json(obj: Any, path: Path) -> Path:
    """``obj`` as ``json.dumps(obj, indent=2, default=str)`` writes it (atomic), encoded in C where the text is
    the same (:func:`~npuprof.export.json_text.dumps_indented`)."""
    return atomic_write(path, dumps_indented(obj))
