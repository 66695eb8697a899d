"""torch.profiler's ``key_averages()`` over npuprof's operator statistics.

``Profiler.key_averages()`` returns :class:`KeyAverages`: a saved window's
operators — ``op_statistic`` rows, or with ``group_by_input_shape=True``
``op_shape_statistic`` rows — and, as in torch, the user's
``record_function``/mstx ranges (``range_statistic``, core type ``RANGE``),
with torch's ``table(sort_by=..., row_limit=...)`` rendering. The sort keys
torch users type are accepted: ``*cpu_time_total`` sorts host rows by their
total time (device kernels after them), ``*device_time_total`` (also
``cuda_``/``npu_``/``xpu_``) the reverse, ``cpu_time``/``device_time`` by
average, ``count`` by calls; npuprof's own column names work too.

Example::

    >>> from npuprof.analysis.table import Table
    >>> ops = Table("op_statistic", ["OP Type", "Core Type", "Count", "Total Time(us)", "Avg Time(us)"],
    ...             {"OP Type": ["Add", "MatMul"], "Core Type": ["HOST_CPU", "AI_CORE"], "Count": [4, 2],
    ...              "Total Time(us)": [8.0, 30.0], "Avg Time(us)": [2.0, 15.0]})
    >>> print(KeyAverages(ops).table(sort_by="cpu_time_total"))
    Name    Core Type  Count  Total Time(us)  Avg Time(us)
    ------  ---------  -----  --------------  ------------
    Add     HOST_CPU       4           8.000         2.000
    MatMul  AI_CORE        2          30.000        15.000
    (2 of 2 rows)
"""
from __future__ import annotations

from typing import Any, Iterator, Optional

from ..errors import ProfilerConfigError
from .table import Table

TOTAL, AVG, COUNT = "Total Time(us)", "Avg Time(us)", "Count"
DEVICE_CORE, RANGE_CORE = "AI_CORE", "RANGE"
# torch's sort keys -> (column, which rows come first: "host", "device" or None for all alike)
DEVICE_PREFIXES = ("device", "cuda", "npu", "xpu", "privateuse1")
TORCH_SORT_KEYS = {
    "cpu_time_total": (TOTAL, "host"), "self_cpu_time_total": (TOTAL, "host"),
    "cpu_time": (AVG, "host"), "self_cpu_time": (AVG, "host"), "count": (COUNT, None),
    **{f"{self_}{dev}_time{total}": (column, "device") for dev in DEVICE_PREFIXES for self_ in ("", "self_")
       for total, column in (("_total", TOTAL), ("", AVG))},
}
NUMERIC_COLUMNS = ("Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)", "Max Time(us)")


class KeyAverages:
    """Operator and range statistics of one analysed window, torch's ``key_averages()`` shape.

    Iterating yields one dict per row (``Name``, the statistic's other
    columns); :meth:`table` renders them as text.
    """

    def __init__(self, ops: Table, ranges: Optional[Table] = None) -> None:
        self.columns = ["Name"] + [c for c in ops.columns if c not in ("Device_id", "OP Type", "Ratio(%)",
                                                                           "Type Share(%)")]
        rows = [dict(r, Name=r["OP Type"]) for r in ops.records()]
        if ranges is not None:
            rows += [dict(r, **{"Core Type": RANGE_CORE}) for r in ranges.records()]
        self._records = [{c: r.get(c, "") for c in self.columns} for r in rows]

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[dict]:
        return iter(self._records)

    def __str__(self) -> str:
        return self.table()

    def table(self, sort_by: Optional[str] = None, row_limit: int = 100, max_name_column_width: int = 55) -> str:
        """The rows as a text table, sorted descending by ``sort_by``, at most ``row_limit`` of them.

        ``sort_by=None`` keeps the statistics' order (operators by total
        time, then ranges); ``row_limit < 0`` shows every row.
        """
        ordered = self._sorted(sort_by)
        if not isinstance(row_limit, int) or isinstance(row_limit, bool):
            raise ProfilerConfigError("row_limit", row_limit, "an int (negative: every row)")
        shown = ordered if row_limit < 0 else ordered[:row_limit]
        cells = [[_cell(r[c], c, max_name_column_width) for c in self.columns] for r in shown]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(self.columns)]
        right = [c in NUMERIC_COLUMNS for c in self.columns]

        def line(values: list) -> str:
            return "  ".join(v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right)).rstrip()

        lines = [line(self.columns), line(["-" * w for w in widths])] + [line(row) for row in cells]
        lines.append(f"({len(shown)} of {len(ordered)} rows)")
        return "\n".join(lines)

    def _sorted(self, sort_by: Optional[str]) -> list:
        if sort_by is None:
            return list(self._records)
        if sort_by in TORCH_SORT_KEYS:
            column, first = TORCH_SORT_KEYS[sort_by]
        elif sort_by in self.columns and sort_by in NUMERIC_COLUMNS:
            column, first = sort_by, None
        else:
            allowed = ("cpu_time_total, self_cpu_time_total, cpu_time, device_time_total, device_time (also "
                       "cuda_/npu_/xpu_), count, or a column: " + ", ".join(c for c in self.columns
                                                                           if c in NUMERIC_COLUMNS))
            raise ProfilerConfigError("sort_by", sort_by, allowed)

        def key(r: dict) -> tuple:
            on_host = r["Core Type"] != DEVICE_CORE
            group = 0 if first is None or on_host == (first == "host") else 1
            return group, -float(r[column])

        return sorted(self._records, key=key)


def _cell(value: Any, column: str, width: int) -> str:
    if column in NUMERIC_COLUMNS and column != COUNT:
        return f"{float(value):.3f}"
    text = str(value)
    return text if len(text) <= width else text[:width - 3] + "..."
