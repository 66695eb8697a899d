"""The summary tables another tool wrote into its run (torch_npu's and
MindSpore's ``ASCEND_PROFILER_OUTPUT/*.csv``), read as they are, for display.

Example::

    tables = read_own_tables(Path("rank0_ascend_pt"), ["step_trace_time", "op_statistic"])
    print(tables["op_statistic"].columns)
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterable

from ..analysis.table import Table
from ..errors import ProfilerDataError
from ..fileio import check_input_file
from ..runinfo import OUTPUT_DIR


def read_own_tables(run_dir: Path, names: Iterable[str]) -> dict[str, Table]:
    """Each ``<name>.csv`` of the run's ``ASCEND_PROFILER_OUTPUT`` that exists and
    reads as CSV, as a :class:`Table` of strings (a damaged file is left out)."""
    out: dict[str, Table] = {}
    for name in names:
        path = Path(run_dir) / OUTPUT_DIR / f"{name}.csv"
        if not path.is_file():
            continue
        try:
            check_input_file(path)
            with open(path, newline="", encoding="utf-8-sig") as fh:
                rows = list(csv.reader(fh))
        except (OSError, ValueError, csv.Error, ProfilerDataError):
            continue
        if not rows:
            continue
        header, body = rows[0], [r for r in rows[1:] if r]
        out[name] = Table(name, header, {col: [r[i] if i < len(r) else "" for r in body]
                                         for i, col in enumerate(header)})
    return out
