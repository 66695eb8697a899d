"""npuprof for pyACL apps: acl.prof collection, subscription, acl.json, CANN import.

Importing this package never imports ``acl``; each call that needs it
imports it then. NOTE: these paths were tested against a test double of
``acl`` (tests/acl), not on Ascend hardware.

Example::

    import acl
    from npuprof.integrations.pyacl import AclProfiler, OpSubscriber, track_acl

    track_acl()                 # lets npuprof check the call order from here on
    acl.init()
    with AclProfiler("./prof", profiler_level="Level1") as prof:
        handle = prof.start(devices=[0])
        run_model()
        prof.stop(handle)
"""
from __future__ import annotations

from typing import Any

from . import constants
from .errors import RULES, AclProfilingError, Rule

_LAZY = {
    "AclProfiler": ".profiler", "StartedConfig": ".profiler",
    "CheckedProf": ".checked", "shared_prof": ".checked",
    "OpSubscriber": ".subscribe", "OpEvent": ".subscribe",
    "MsprofTxSink": ".msproftx",
    "track_acl": ".tracking",
    "read_acl_json": ".acl_json", "read_profiler_section": ".acl_json", "write_acl_json": ".acl_json",
    "validate_profiler_section": ".acl_json", "section_from_config": ".acl_json", "precedence": ".acl_json",
    "parse_prof_dir": ".cann_import",
    "data_type_mask": ".flags", "aicore_metrics_id": ".flags",
    "CONTRACT": ".contract",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = ["AclProfilingError", "RULES", "Rule", "constants", *sorted(_LAZY)]
