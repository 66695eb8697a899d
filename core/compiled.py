"""npuprof's compiled modules, and the one switch that turns them all off.

``pip install`` builds them (``setup.py``, each optional): the annotation hot
paths (``npuprof._hotpath``, twin of ``recorder.py``'s Python code) and the
row renderer (``npuprof.export._rowrender``, twin of ``textrows.CellRows``).
Each Python twin is the reference and the fallback: it runs where the module
was not built, and everywhere when ``NPUPROF_PURE_PYTHON`` is set (not "0").

Example::

    >>> renderer = load_compiled("npuprof.export._rowrender")   # None where it was not built
    >>> renderer is None or hasattr(renderer, "render")
    True
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Optional

PURE_PYTHON_ENV = "NPUPROF_PURE_PYTHON"


def load_compiled(name: str) -> Optional[ModuleType]:
    """The compiled module ``name``, or None: not built here, or ``NPUPROF_PURE_PYTHON`` is set."""
    if os.environ.get(PURE_PYTHON_ENV, "0") not in ("", "0"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
