"""The HTML report (``npuprof report``).

Example::

    from npuprof.report import write_report
    write_report("./prof")        # -> ./prof/npuprof_report.html
"""
from __future__ import annotations

from .page import render, write_report

__all__ = ["render", "write_report"]
