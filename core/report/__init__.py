"""The HTML report (``npuprof report``).

Example::

    from npuprof.report import write_report
    write_report("./prof").path   # -> ./prof/npuprof_report.html
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .page import WrittenReport, render, write_report


def __getattr__(name: str) -> Any:
    """The page's names, imported on first use (every npuprof command loads the ``report`` plugin
    in this package; only ``npuprof report`` renders)."""
    if name not in ("WrittenReport", "render", "write_report"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import page

    return getattr(page, name)


__all__ = ["WrittenReport", "render", "write_report"]
