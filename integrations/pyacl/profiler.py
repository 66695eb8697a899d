"""AclProfiler: file-based pyACL profiling in the documented call order.

``init`` -> ``start(devices)`` -> (load and run models) -> ``stop(handle)``
-> ... -> ``finalize``, each step checked against the contract before acl is
called (see :mod:`.checked`). Each ``start`` makes CANN write one ``PROF_*``
directory under ``output_path``; :attr:`AclProfiler.prof_dirs` lists them
and ``npuprof analyse <output_path>`` imports them.

Example (the documented recommended sequence, two models)::

    import acl
    from npuprof.integrations.pyacl import AclProfiler, track_acl

    track_acl()
    acl.init()
    with AclProfiler("./prof", profiler_level="Level1") as prof:   # prof.init
        h = prof.start(devices=[0, 1])
        model1 = load_and_run("model1.om")
        prof.stop(h)
        h = prof.start(devices=[1, 2])
        model2 = load_and_run("model2.om")
        prof.stop(h)
    # leaving the block: prof.finalize
    acl.finalize()
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Literal, Mapping, Optional, Union

from npuprof.errors import ProfilerConfigError
from npuprof.validate import check_bool, check_output_path
from npuprof.types import AicMetricsLike, PathLike, ProfilerLevelLike

from . import constants as C
from .acl_json import precedence
from .checked import CheckedProf, check_set_config_value, shared_prof
from .errors import AclProfilingError
from .flags import aicore_metrics_id, data_type_mask, level_devices
from .tracking import before_acl_finalize, remove_before_acl_finalize, track_acl

log = logging.getLogger("npuprof")


@dataclass(frozen=True)
class StartedConfig:
    """Handle of a started configuration: pass it to :meth:`AclProfiler.stop`."""

    config: int  # the aclprofConfig pointer
    devices: tuple
    mask: int
    aicore_metrics: int

    @property
    def flags(self) -> list:
        return C.flag_names(self.mask)


def list_prof_dirs(path: Union[str, Path]) -> list:
    p = Path(path)
    if not p.is_dir():
        return []
    return sorted(x for x in p.iterdir() if x.is_dir() and x.name.startswith("PROF_"))


class AclProfiler:
    """File-based collection with acl.prof (see module doc).

    Parameters: ``output_path`` (the acl.prof.init path; created), and the
    defaults for :meth:`start`: ``profiler_level`` (LevelNone/Level0/1/2),
    ``aic_metrics`` (name, e.g. "PipeUtilization"), ``mstx``, ``l2_cache``,
    ``profile_memory``, ``data_types`` (extra raw flag bits, passed through);
    ``settings`` maps ``acl.prof.set_config`` types to values, applied after
    init; ``acl_json`` is the acl.json the app gave acl.init, checked for a
    profiler section that would take precedence; ``acl`` the module to use
    (default ``import acl``).
    """

    def __init__(self, output_path: PathLike, *, profiler_level: ProfilerLevelLike = "Level0",
                 aic_metrics: Optional[AicMetricsLike] = None, mstx: bool = False, l2_cache: bool = False,
                 profile_memory: bool = False, data_types: int = 0, settings: Optional[Mapping[int, str]] = None,
                 acl_json: Optional[PathLike] = None, acl: Optional[ModuleType] = None) -> None:
        self.output_path = check_output_path("output_path", output_path)
        self.level = getattr(profiler_level, "value", profiler_level)
        self.aicore_metrics = aicore_metrics_id(aic_metrics, self.level)
        self.mask = data_type_mask(self.level, self.aicore_metrics, mstx=check_bool("mstx", mstx),
                                   l2_cache=check_bool("l2_cache", l2_cache),
                                   profile_memory=check_bool("profile_memory", profile_memory), extra=data_types)
        self.settings = dict(settings or {})
        for key, value in self.settings.items():
            try:
                check_set_config_value(key, value)
            except AclProfilingError as e:
                raise ProfilerConfigError("settings", {key: value}, "acl.prof.set_config types and values",
                                          hint=str(e)) from None
        self.acl_json = None if acl_json is None else str(acl_json)
        self._prof: Optional[CheckedProf] = None
        self._acl = acl
        self.handles: list[StartedConfig] = []
        self.prof_dirs: list[Path] = []
        self.initialised = False
        self.finalized = False

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def prof(self) -> CheckedProf:
        if self._prof is None:
            self._prof = shared_prof(self._acl)
            track_acl(self._prof.acl)
        return self._prof

    def init(self) -> "AclProfiler":
        """acl.prof.init(output_path) and the ``settings`` (set_config)."""
        prof = self.prof
        if self.acl_json is not None:
            p = precedence(self.acl_json)
            if not p.api_usable:
                raise AclProfilingError.for_rule("CMD_MODE_ACTIVE", "acl.prof.init", p.report())
        os.makedirs(self.output_path, mode=0o750, exist_ok=True)
        prof.init(str(self.output_path))
        self.initialised = True
        before_acl_finalize(self._before_acl_finalize)
        for key, value in self.settings.items():
            prof.set_config(key, value)
        return self

    def set_config(self, config_type: int, value: str) -> None:
        """acl.prof.set_config (after init, before the start it should affect)."""
        self.prof.set_config(config_type, value)

    def start(self, devices: Iterable[int] = (0,), *, profiler_level: Any = None, aic_metrics: Any = None,
              mstx: Optional[bool] = None, data_types: Optional[int] = None) -> StartedConfig:
        """Create a configuration for ``devices`` and start it; returns its handle.

        Keyword arguments override the constructor's defaults for this start;
        ``data_types`` replaces the whole mask when given.
        """
        level = self.level if profiler_level is None else getattr(profiler_level, "value", profiler_level)
        metrics = self.aicore_metrics if aic_metrics is None and profiler_level is None \
            else aicore_metrics_id(aic_metrics, level)
        if data_types is not None:
            mask = data_types
            if isinstance(mask, bool) or not isinstance(mask, int) or mask <= 0:
                raise ProfilerConfigError("data_types", data_types, "a positive integer bit mask")
        elif profiler_level is None and aic_metrics is None and mstx is None:
            mask = self.mask
        else:
            mask = data_type_mask(level, metrics, mstx=bool(mstx) if mstx is not None
                                  else bool(self.mask & C.ACL_PROF_MSPROFTX))
        devs = level_devices(level, list(devices))
        prof = self.prof
        with prof.contract.lock:  # the contract first: no acl call for a start that must fail
            prof.contract.check_start(-1, devs, mask)
        before = set(list_prof_dirs(self.output_path))
        cfg = prof.create_config(devs, metrics, 0, mask)
        try:
            prof.start(cfg)
        except BaseException:
            prof.destroy_config(cfg)
            raise
        handle = StartedConfig(cfg, tuple(devs), mask, metrics)
        self.handles.append(handle)
        self.prof_dirs.extend(d for d in list_prof_dirs(self.output_path) if d not in before)
        return handle

    def stop(self, handle: StartedConfig) -> None:
        """acl.prof.stop with the configuration ``handle`` came from, then destroy it."""
        if not isinstance(handle, StartedConfig):
            raise AclProfilingError.for_rule("STOP_SAME_CONFIG", "acl.prof.stop",
                                             f"expected the handle start() returned, got {handle!r}")
        prof = self.prof
        prof.stop(handle.config)
        if handle in self.handles:
            self.handles.remove(handle)
        prof.destroy_config(handle.config)

    def finalize(self, force: bool = False) -> None:
        """acl.prof.finalize. With ``force``, open handles are stopped first."""
        if self.finalized:
            return
        prof = self.prof
        if force:
            for handle in list(reversed(self.handles)):
                try:
                    self.stop(handle)
                except AclProfilingError as e:
                    log.warning("npuprof: stopping %s before finalize failed: %s", handle, e)
        prof.finalize(force=force)
        self.finalized = True
        self.initialised = False
        remove_before_acl_finalize(self._before_acl_finalize)

    def _before_acl_finalize(self) -> None:
        if self.initialised and not self.finalized:
            log.info("npuprof: acl.finalize called with acl.prof still initialised; finalizing acl.prof first")
            self.finalize(force=True)

    def __enter__(self) -> "AclProfiler":
        return self.init()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Literal[False]:
        if not self.initialised:
            return False
        if exc_type is None:
            self.finalize(force=bool(self.handles))
            return False
        try:  # the body failed: clean up, but never hide the original error
            self.finalize(force=True)
        except Exception as e:
            log.warning("npuprof: acl.prof cleanup after an error failed: %s", e)
        return False

    def __repr__(self) -> str:
        state = "finalized" if self.finalized else "initialised" if self.initialised else "new"
        return f"<AclProfiler {self.output_path} {self.level} mask={hex(self.mask)} {state}>"
