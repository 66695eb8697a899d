"""The C library's functions npuprof calls through ctypes where they exist (Linux, glibc): each
looked up once, with its argument and result types.

Example::

    trim = libc_function("malloc_trim", "c_size_t")
    if trim is not None:
        trim(0)
"""
from __future__ import annotations

import functools
from typing import Any, Optional

__all__ = ["libc_function"]


@functools.lru_cache(maxsize=None)
def libc_function(name: str, *argtypes: str, restype: str = "c_int") -> Optional[Any]:
    """libc's ``name`` taking ``argtypes`` and returning ``restype`` (names of ctypes types; errno
    kept for ``ctypes.get_errno``), or None where this C library has no such function or ctypes
    cannot load it."""
    try:
        import ctypes

        fn = getattr(ctypes.CDLL(None, use_errno=True), name)
    except (ImportError, OSError, AttributeError):
        return None
    fn.argtypes = [getattr(ctypes, t) for t in argtypes]
    fn.restype = getattr(ctypes, restype)
    return fn
