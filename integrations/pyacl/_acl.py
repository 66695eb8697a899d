"""Importing pyACL lazily (never at npuprof import time)."""
from __future__ import annotations

import sys
from types import ModuleType
from typing import Optional

from npuprof.errors import BackendUnavailable

FRAMEWORK_MODULES = ("mindspore", "npu_bridge", "torch_npu")


def load_acl(required: bool = True) -> Optional[ModuleType]:
    """The ``acl`` module, or BackendUnavailable (None when not ``required``)."""
    try:
        import acl  # noqa: PLC0415  (imported here on purpose: optional dependency)
    except ImportError as e:
        if required:
            raise BackendUnavailable(f"pyACL (the CANN 'acl' module) is not importable: {e}") from None
        return None
    if not hasattr(acl, "prof") or not hasattr(acl, "init"):
        if required:
            raise BackendUnavailable(f"the 'acl' module at {getattr(acl, '__file__', None) or acl!r} is not pyACL "
                                     "(no acl.prof)")
        return None
    return acl


def pyacl_app_running() -> Optional[str]:
    """None when this process is a pyACL app, else why not.

    A pyACL app has imported ``acl`` itself; a MindSpore/TF/torch_npu process
    drives CANN profiling through its own framework backend instead.
    """
    if "acl" not in sys.modules:
        return "the application has not imported pyACL ('acl')"
    for name in FRAMEWORK_MODULES:
        if name in sys.modules:
            return f"{name} is loaded; its own backend drives CANN profiling"
    return None
