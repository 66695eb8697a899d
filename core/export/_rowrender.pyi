"""The interface of ``npuprof.export._rowrender`` (core/export/_rowrender.c): ``RowBuilder.render``
of :mod:`npuprof.export.textrows`, compiled; the pieces are described in the C source.

Example::

    render(2, [(0, b"a,"), (2, np.array([1, 2]), None), (0, b"\\n")])   # b"a,1\\na,2\\n"
"""
from typing import Any

PUBLIC_CAPI_ONLY: int
"""1 when built with ``-DNPUPROF_PUBLIC_CAPI_ONLY``: no ``_PyBytes_Resize`` (see the C source)."""

def render(n: int, pieces: list[tuple[Any, ...]], /) -> bytes:
    """``n`` rows, each the pieces in order: ``(0, text)``, ``(1, codes, blob, offsets, present)``,
    ``(2, values, present)`` or ``(3, values, present, strip)``."""
