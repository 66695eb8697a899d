"""The HTML report (``npuprof report``).

Example::

    from npuprof.report import write_report
    write_report("./prof").path   # -> ./prof/npuprof_report.html
"""
from __future__ import annotations

from .page import WrittenReport, render, write_report

__all__ = ["WrittenReport", "render", "write_report"]
