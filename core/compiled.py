"""npuprof's compiled modules, and the one switch that turns them all off.

``pip install`` builds them (``setup.py``, each optional): the annotation hot
paths (``npuprof._hotpath``, twin of ``recorder.py``'s Python code), the
row renderer (``npuprof.export._rowrender``, twin of ``textrows.CellRows``)
and the trace scanner (``npuprof.readers._tracescan``, twin of
``trace_decode``'s msgspec structs for Kineto traces and trace_view.json).
Each Python twin is the reference and the fallback: it runs where the module
was not built, everywhere when ``NPUPROF_PURE_PYTHON`` is set (not "0"), and on
a free-threaded Python (3.13t) running with the GIL off: the compiled modules
need the GIL (they declare so, ``Py_MOD_GIL_USED``), and loading one would turn
it on for the whole process, the program being profiled included. The twins
only need each list operation to be atomic, which the free-threaded build keeps
with per-object locks. :func:`compiled_status` says which is in use and why,
:func:`gil_status` what the GIL is doing and why (``npuprof doctor``).

Example::

    >>> renderer = load_compiled("npuprof.export._rowrender")   # None where it was not built
    >>> renderer is None or hasattr(renderer, "render")
    True
"""
from __future__ import annotations

import importlib
import logging
import os
import sys
import sysconfig
from dataclasses import dataclass
from types import ModuleType
from typing import Optional

from .private_api import gil_enabled

PURE_PYTHON_ENV = "NPUPROF_PURE_PYTHON"
# npuprof's compiled modules and what each one's Python twin is
COMPILED_MODULES = {"npuprof._hotpath": "annotations (record_function, mstx, trace_api)",
                    "npuprof.export._rowrender": "text rows of trace_view.json and the CSV files",
                    "npuprof.readers._tracescan": "reading Kineto traces and trace_view.json"}


@dataclass(frozen=True)
class FallbackCost:
    """What the pure-Python fallback costs, as ``make bench`` measured it (not measured here)."""

    annotation_python_ns: float   # record_function, sustained at full rate, median per annotation
    annotation_compiled_ns: float
    rows_python_per_s: float      # synthetic 10M-event analysis to every output, events per second
    rows_compiled_per_s: float
    measured_on: str

    def line(self) -> str:
        return (f"record_function {self.annotation_python_ns / 1000:.2f} µs per annotation instead of "
                f"{self.annotation_compiled_ns / 1000:.2f} µs ({self.annotation_python_ns / self.annotation_compiled_ns:.1f}x), "
                f"analysis to every output {self.rows_python_per_s / 1e6:.2f}M instead of "
                f"{self.rows_compiled_per_s / 1e6:.2f}M events/s (measured by `make bench`, {self.measured_on})")


# benchmarks/results/latest.json (tests/platform/test_doctor.py checks these against it)
FALLBACK_COST = FallbackCost(annotation_python_ns=658.4, annotation_compiled_ns=293.6,
                             rows_python_per_s=1.47e6, rows_compiled_per_s=2.41e6,
                             measured_on="2-core x86-64 VM, Python 3.11, 2026-11-27")


@dataclass(frozen=True)
class CompiledStatus:
    """Whether one compiled module is in use, and why not when it is not."""

    name: str
    loaded: bool
    reason: str      # "" when loaded


_why_not: dict[str, str] = {}
# modules left unloaded because the GIL was off when npuprof first asked for them: the code that asked runs
# their twin from then on, so they stay "not loaded" even where something turns the GIL on later
_declined_for_gil: set[str] = set()


def free_threaded_build() -> bool:
    """Whether this CPython was built free-threaded (``--disable-gil``, "3.13t")."""
    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


# the GIL when npuprof started importing (npuprof/__init__ imports this module first): a free-threaded
# Python whose GIL is on later had it turned on by npuprof's imports (orjson on 3.13) or after them
GIL_ON_BEFORE_NPUPROF = gil_enabled()


@dataclass(frozen=True)
class GilStatus:
    """The GIL here: a free-threaded build or not, on or off now, and why."""

    free_threaded: bool
    enabled: bool
    reason: str

    def line(self) -> str:
        if not self.free_threaded:
            return "on (not a free-threaded build)"
        return f"{'on' if self.enabled else 'off'} (free-threaded build): {self.reason}"


def gil_status() -> GilStatus:
    """What the GIL is doing here and why (``npuprof doctor``'s ``gil`` line).

    Example::

        >>> gil_status().line()          # on a Python that is not free-threaded
        'on (not a free-threaded build)'
    """
    free, on = free_threaded_build(), gil_enabled()
    if not free:
        return GilStatus(False, True, "")
    if not on:
        return GilStatus(True, False, "npuprof's compiled modules are not loaded (they need the GIL); their "
                                      "Python twins run")
    forced = os.environ.get("PYTHON_GIL", "")
    if forced == "1" or getattr(sys, "_xoptions", {}).get("gil") == "1":
        why = "PYTHON_GIL=1 / -X gil=1 turns it on"
    elif GIL_ON_BEFORE_NPUPROF:
        why = "it was on before npuprof was imported (a module imported earlier needs it)"
    else:
        orjson = sys.modules.get("orjson")
        why = ("npuprof's imports turned it on: " + (
            f"orjson {getattr(orjson, '__version__', '?')} declares it needs the GIL on Python 3.13" if orjson
            is not None and sys.version_info[:2] == (3, 13) else "a module it imports declares it needs the GIL")
            + "; PYTHON_GIL=0 keeps it off (npuprof then runs its Python twins)")
    return GilStatus(True, True, why)


def pure_python_forced() -> bool:
    """Whether ``NPUPROF_PURE_PYTHON`` turns the compiled modules off."""
    return os.environ.get(PURE_PYTHON_ENV, "0") not in ("", "0")


def load_compiled(name: str) -> Optional[ModuleType]:
    """The compiled module ``name``, or None: not built here, or ``NPUPROF_PURE_PYTHON`` is set."""
    if pure_python_forced():
        _why_not[name] = f"{PURE_PYTHON_ENV}={os.environ[PURE_PYTHON_ENV]} turns it off"
        return None
    if name in _declined_for_gil or not gil_enabled():     # off: only a free-threaded build can say so
        _declined_for_gil.add(name)
        _why_not[name] = ("free-threaded Python with the GIL off: the module needs the GIL, and loading it "
                          "would turn the GIL on for the whole process")
        return None
    try:
        module = importlib.import_module(name)
    except ImportError as e:
        _why_not[name] = (f"not built for this Python ({e}); with a C compiler and Python headers, "
                          "pip install --no-cache-dir --force-reinstall npuprof builds it")
        return None
    _why_not.pop(name, None)
    return module


def compiled_status(name: str) -> CompiledStatus:
    """Whether npuprof runs ``name`` compiled here (loading it as npuprof does), and why not.

    Example::

        >>> compiled_status("npuprof._hotpath").name
        'npuprof._hotpath'
    """
    loaded = load_compiled(name) is not None
    return CompiledStatus(name, loaded, "" if loaded else _why_not.get(name, "not loaded"))


def fallback_in_use() -> list[CompiledStatus]:
    """The compiled modules npuprof runs on their Python fallback here."""
    return [s for s in (compiled_status(n) for n in COMPILED_MODULES) if not s.loaded]


_fallback_said = False
# how the one fallback line starts (tests and log filters tell it from the warnings about a run)
FALLBACK_LINE_PREFIX = "npuprof: running on the pure-Python fallback of "


def log_fallback_once(logger: logging.Logger) -> Optional[str]:
    """Log, once per process, one line saying which compiled modules run on their Python fallback and
    what that costs (the bench's figures); returns the line, or None when all are compiled or it was said."""
    global _fallback_said
    if _fallback_said:
        return None
    missing = fallback_in_use()
    if not missing:
        return None
    _fallback_said = True
    line = (FALLBACK_LINE_PREFIX + "; ".join(f"{s.name} ({s.reason})" for s in missing)
            + f": {FALLBACK_COST.line()}; `npuprof doctor` says more")
    logger.warning(line)
    return line
