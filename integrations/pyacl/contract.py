"""Process-wide bookkeeping of the pyACL profiling contract.

pyACL profiling control is process-wide, so this state is too: one
:data:`CONTRACT` per process. Every npuprof wrapper asks it before calling
``acl.prof.*`` (``check_*``, raising :class:`AclProfilingError` naming the
broken rule) and tells it what succeeded (``on_*``). What acl did before
npuprof could watch (see :mod:`.tracking`) is "unknown" and not pre-checked;
the library's own return code then decides.

Example::

    >>> from npuprof.integrations.pyacl.contract import ProcessContract
    >>> c = ProcessContract()
    >>> c.acl_initialised = True
    >>> c.check_start(config=1, devices=(0,), mask=2)
    Traceback (most recent call last):
    ...
    npuprof.integrations.pyacl.errors.AclProfilingError: acl.prof.start: rule broken: ...
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Iterable, Optional

from . import constants as C
from .errors import AclProfilingError


@dataclass
class Started:
    """A configuration between acl.prof.start and acl.prof.stop."""

    config: int
    devices: tuple
    mask: int


def external_profiling_source() -> Optional[str]:
    """The environment variable that switches CANN profiling on outside the API, if any."""
    if os.environ.get("PROFILER_SAMPLECONFIG"):
        return "the msprof command line (environment PROFILER_SAMPLECONFIG)"
    if os.environ.get("PROFILING_MODE", "").lower() == "true":
        return "the environment (PROFILING_MODE=true / PROFILING_OPTIONS)"
    return None


@dataclass
class ProcessContract:
    """What npuprof knows of this process's acl / acl.prof state."""

    acl_initialised: Optional[bool] = None  # None: acl.init happened before tracking, or unknown
    loaded_models: set = field(default_factory=set)
    models_ever_loaded: int = 0
    cmd_source: Optional[str] = None  # acl.json that switched profiling on
    prof_initialised: bool = False
    prof_pairs: int = 0  # completed init/finalize pairs
    init_path: Optional[str] = None
    started: dict = field(default_factory=dict)  # config -> Started
    device_owner: dict = field(default_factory=dict)  # device -> config
    subscribed: set = field(default_factory=set)
    push_depth: dict = field(default_factory=dict)  # thread id -> open pushes
    live_stamps: set = field(default_factory=set)
    live_ranges: set = field(default_factory=set)
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    # -- external profiling (CMD mode) --------------------------------------------
    def cmd_mode(self) -> Optional[str]:
        return self.cmd_source or external_profiling_source()

    # -- init / finalize ----------------------------------------------------------
    def check_init(self, path: str) -> None:
        call = "acl.prof.init"
        if not isinstance(path, str) or not path:
            raise AclProfilingError.for_rule("VALID_PATH", call, f"path={path!r}")
        if len(path) > C.MAX_INIT_PATH_LEN:
            raise AclProfilingError.for_rule("VALID_ARGUMENT", call,
                                             f"path is {len(path)} characters, at most {C.MAX_INIT_PATH_LEN}")
        if self.acl_initialised is False:
            raise AclProfilingError.for_rule("INIT_AFTER_ACL_INIT", call, "acl.init has not been called "
                                             "(or acl.finalize was called)")
        src = self.cmd_mode()
        if src:
            raise AclProfilingError.for_rule("CMD_MODE_ACTIVE", call, f"profiling was switched on by {src}")
        if self.subscribed:
            raise AclProfilingError.for_rule("NO_INIT_WHILE_SUBSCRIBED", call,
                                             f"subscribed model ids: {sorted(self.subscribed)}")
        if self.prof_initialised:
            raise AclProfilingError.for_rule("ONE_INIT_PAIR", call, f"acl.prof.init({self.init_path!r}) "
                                             "is already in effect")
        if self.prof_pairs:
            raise AclProfilingError.for_rule("ONE_INIT_PAIR", call, "an init/finalize pair was already used in "
                                             "this process (a second one may change the output path)")
        if self.models_ever_loaded:
            raise AclProfilingError.for_rule("INIT_BEFORE_MODEL_LOAD", call,
                                             f"{self.models_ever_loaded} model(s) were loaded already")

    def on_init(self, path: str) -> None:
        self.prof_initialised = True
        self.init_path = path

    def _need_api(self, call: str) -> None:
        src = self.cmd_mode()
        if src and not self.prof_initialised:
            raise AclProfilingError.for_rule("CMD_MODE_ACTIVE", call, f"profiling was switched on by {src}")
        if not self.prof_initialised:
            raise AclProfilingError.for_rule("START_NEEDS_INIT", call)

    def check_finalize(self, force: bool = False) -> None:
        self._need_api("acl.prof.finalize")
        if self.started and not force:
            open_cfgs = ", ".join(f"devices {list(s.devices)}" for s in self.started.values())
            raise AclProfilingError.for_rule("START_STOP_PAIRED", "acl.prof.finalize",
                                             f"still started: {open_cfgs}")

    def on_finalize(self) -> None:
        self.prof_initialised = False
        self.prof_pairs += 1
        self.started.clear()
        self.device_owner.clear()
        self.push_depth.clear()
        self.live_ranges.clear()

    def check_set_config(self, config_type: int, value: str) -> None:
        self._need_api("acl.prof.set_config")

    # -- start / stop -------------------------------------------------------------
    def check_start(self, config: int, devices: Iterable[int], mask: int) -> None:
        call = "acl.prof.start"
        self._need_api(call)
        devices = tuple(devices)
        if config in self.started:
            raise AclProfilingError.for_rule("NO_DUPLICATE_CONFIG", call, "this configuration was started and "
                                             "not stopped")
        busy = sorted(d for d in devices if d in self.device_owner)
        if busy:
            raise AclProfilingError.for_rule("NO_DUPLICATE_DEVICE", call,
                                             f"device(s) {busy} already started by another configuration")

    def on_start(self, config: int, devices: Iterable[int], mask: int) -> None:
        devices = tuple(devices)
        self.started[config] = Started(config, devices, mask)
        for d in devices:
            self.device_owner[d] = config

    def check_stop(self, config: int, devices: Iterable[int], mask: int) -> None:
        call = "acl.prof.stop"
        self._need_api(call)
        started = self.started.get(config)
        if started is None:
            owners = {self.device_owner[d] for d in devices if d in self.device_owner}
            detail = "this configuration was never started"
            if owners:
                detail += f"; device(s) {sorted(d for d in devices if d in self.device_owner)} were started " \
                          "with another configuration"
            raise AclProfilingError.for_rule("STOP_SAME_CONFIG", call, detail)
        if started.mask != mask or started.devices != tuple(devices):
            raise AclProfilingError.for_rule("STOP_SAME_CONFIG", call,
                                             f"started with devices {list(started.devices)} mask {hex(started.mask)}, "
                                             f"stopped with devices {list(devices)} mask {hex(mask)}")

    def on_stop(self, config: int) -> None:
        started = self.started.pop(config, None)
        if started is not None:
            for d in started.devices:
                self.device_owner.pop(d, None)
        if not self.tx_enabled():
            self.push_depth.clear()

    # -- subscription --------------------------------------------------------------
    def check_subscription_call(self, call: str) -> None:
        src = self.cmd_mode()
        if src:
            raise AclProfilingError.for_rule("CMD_MODE_ACTIVE", call, f"profiling was switched on by {src}")
        if self.prof_initialised:
            raise AclProfilingError.for_rule("NO_SUBSCRIBE_IN_API_MODE", call,
                                             f"acl.prof.init({self.init_path!r}) is in effect")

    def check_subscribe(self, model_id: int) -> None:
        self.check_subscription_call("acl.prof.model_subscribe")
        if model_id in self.subscribed:
            raise AclProfilingError.for_rule("NO_REPEAT_SUBSCRIBE", "acl.prof.model_subscribe",
                                             f"model {model_id} is subscribed")

    def check_unsubscribe(self, model_id: int) -> None:
        self.check_subscription_call("acl.prof.model_unsubscribe")
        if model_id not in self.subscribed:
            raise AclProfilingError.for_rule("UNSUBSCRIBE_SUBSCRIBED", "acl.prof.model_unsubscribe",
                                             f"model {model_id} is not subscribed")

    # -- msproftx -------------------------------------------------------------------
    def tx_enabled(self) -> bool:
        return any(s.mask & C.ACL_PROF_MSPROFTX for s in self.started.values())

    def check_tx(self, call: str) -> None:
        if not self.tx_enabled():
            if self.started:
                detail = "no started configuration includes ACL_PROF_MSPROFTX"
            else:
                detail = "no acl.prof.start is in effect"
            raise AclProfilingError.for_rule("MSPROFTX_IN_START", call, detail)

    def check_pop(self) -> None:
        self.check_tx("acl.prof.pop")
        if self.push_depth.get(threading.get_ident(), 0) <= 0:
            raise AclProfilingError.for_rule("PUSH_POP_SAME_THREAD", "acl.prof.pop",
                                             f"thread {threading.current_thread().name!r} has no open push")

    def on_push(self) -> None:
        tid = threading.get_ident()
        self.push_depth[tid] = self.push_depth.get(tid, 0) + 1

    def on_pop(self) -> None:
        tid = threading.get_ident()
        self.push_depth[tid] = self.push_depth.get(tid, 1) - 1

    def check_stamp(self, stamp: int, call: str) -> None:
        if stamp not in self.live_stamps:
            raise AclProfilingError.for_rule("STAMP_PAIRS", call, f"stamp {stamp!r} was not created by "
                                             "acl.prof.create_stamp or was destroyed")

    def check_range(self, range_id: int) -> None:
        self.check_tx("acl.prof.range_stop")
        if range_id not in self.live_ranges:
            raise AclProfilingError.for_rule("STAMP_PAIRS", "acl.prof.range_stop",
                                             f"range id {range_id!r} is not open")

    # -- what tracking saw ---------------------------------------------------------------
    def on_acl_init(self, cmd_source: Optional[str]) -> None:
        self.acl_initialised = True
        self.cmd_source = cmd_source

    def on_acl_finalize(self) -> None:
        self.acl_initialised = False
        self.cmd_source = None

    def on_model_load(self, model_id: int) -> None:
        self.loaded_models.add(model_id)
        self.models_ever_loaded += 1

    def on_model_unload(self, model_id: int) -> None:
        self.loaded_models.discard(model_id)
        self.subscribed.discard(model_id)

    def reset(self) -> None:
        """Forget everything (tests only, together with the acl double's reset)."""
        fresh = ProcessContract()
        for name in ("acl_initialised", "loaded_models", "models_ever_loaded", "cmd_source", "prof_initialised",
                     "prof_pairs", "init_path", "started", "device_owner", "subscribed", "push_depth",
                     "live_stamps", "live_ranges"):
            setattr(self, name, getattr(fresh, name))


CONTRACT = ProcessContract()
