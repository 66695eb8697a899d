"""``acl.prof`` with the documented contract enforced.

:class:`CheckedProf` mirrors the ``acl.prof`` calls one to one. Each call
first checks the contract (:data:`~.contract.CONTRACT`), raising
:class:`~.errors.AclProfilingError` naming the broken rule without calling
the library; then calls acl and turns a non-zero return code into the same
error, with the rule that code means for that call. The higher-level
:class:`~.profiler.AclProfiler`, :class:`~.subscribe.OpSubscriber` and the
msproftx mapping are built on it.

Example::

    prof = CheckedProf()            # imports acl
    prof.init("./prof_out")
    cfg = prof.create_config([0], 0xFF, 0, ACL_PROF_ACL_API | ACL_PROF_TASK_TIME)
    prof.start(cfg)
    ...                             # run the model
    prof.stop(cfg)
    prof.destroy_config(cfg)
    prof.finalize()
"""
from __future__ import annotations

import re
import threading
from types import ModuleType
from typing import Any, Iterable, Optional

from . import constants as C
from ._acl import load_acl
from .contract import CONTRACT, ProcessContract
from .errors import AclProfilingError

# What a non-zero code means for a call, when the code alone is ambiguous.
_INIT_CODES = {C.ACL_ERROR_UNINITIALIZE: "INIT_AFTER_ACL_INIT", C.ACL_ERROR_PROF_ALREADY_RUN: "CMD_MODE_ACTIVE",
               C.ACL_ERROR_REPEAT_INITIALIZE: "ONE_INIT_PAIR", C.ACL_ERROR_PROF_API_CONFLICT: "NO_INIT_WHILE_SUBSCRIBED",
               C.ACL_ERROR_INVALID_FILE: "VALID_PATH", C.ACL_ERROR_INVALID_PARAM: "VALID_ARGUMENT"}
_API_CODES = {C.ACL_ERROR_PROF_NOT_RUN: "START_NEEDS_INIT", C.ACL_ERROR_PROF_ALREADY_RUN: "CMD_MODE_ACTIVE",
              C.ACL_ERROR_PROF_API_CONFLICT: "NO_INIT_WHILE_SUBSCRIBED",
              C.ACL_ERROR_INVALID_PROFILING_CONFIG: "STOP_SAME_CONFIG", C.ACL_ERROR_INVALID_PARAM: "VALID_ARGUMENT"}
_SUB_CODES = {C.ACL_ERROR_PROF_ALREADY_RUN: "CMD_MODE_ACTIVE", C.ACL_ERROR_PROF_API_CONFLICT: "NO_SUBSCRIBE_IN_API_MODE",
              C.ACL_ERROR_PROF_REPEAT_SUBSCRIBE: "NO_REPEAT_SUBSCRIBE",
              C.ACL_ERROR_INVALID_MODEL_ID: "UNSUBSCRIBE_SUBSCRIBED", C.ACL_ERROR_INVALID_PARAM: "VALID_ARGUMENT"}
_TX_CODES = {C.ACL_ERROR_INVALID_PARAM: "STAMP_PAIRS", C.ACL_ERROR_PROF_NOT_RUN: "MSPROFTX_IN_START"}

_INT_RANGES = {C.ACL_PROF_SYS_HARDWARE_MEM_FREQ: (1, 100), C.ACL_PROF_SYS_IO_FREQ: (1, 100),
               C.ACL_PROF_SYS_INTERCONNECTION_FREQ: (1, 50), C.ACL_PROF_DVPP_FREQ: (1, 100),
               C.ACL_PROF_HOST_SYS_USAGE_FREQ: (1, 50), C.ACL_PROF_LOW_POWER_FREQ: (1, 100),
               C.ACL_PROF_SYS_CPU_FREQ: (1, 50)}


def check_set_config_value(config_type: Any, value: Any) -> None:
    """The documented value rules of ``acl.prof.set_config`` (raises AclProfilingError)."""
    call = "acl.prof.set_config"
    if isinstance(config_type, bool) or config_type not in C.CONFIG_TYPES:
        raise AclProfilingError.for_rule("VALID_ARGUMENT", call, f"config_type={config_type!r}; known types: "
                                         + ", ".join(f"{k} ({v[0]})" for k, v in C.CONFIG_TYPES.items()))
    name, allowed = C.CONFIG_TYPES[config_type]
    if not isinstance(value, str) or not value or len(value) > C.MAX_SET_CONFIG_LEN or "\0" in value:
        raise AclProfilingError.for_rule("VALID_ARGUMENT", call, f"{name} value {value!r} must be a non-empty "
                                         f"string of at most {C.MAX_SET_CONFIG_LEN} characters")
    ok = True
    if config_type in _INT_RANGES:
        lo, hi = _INT_RANGES[config_type]
        ok = value.isdigit() and lo <= int(value) <= hi
    elif config_type == C.ACL_PROF_STORAGE_LIMIT:
        m = re.fullmatch(r"(\d+)MB", value)
        ok = bool(m) and 200 <= int(m.group(1)) <= 4294967295
    elif config_type == C.ACL_PROF_LLC_MODE:
        ok = value in ("read", "write")
    elif config_type == C.ACL_PROF_HOST_SYS:
        ok = all(x in ("cpu", "mem", "disk", "network", "osrt") for x in value.split(","))
    elif config_type == C.ACL_PROF_HOST_SYS_USAGE:
        ok = all(x in ("cpu", "mem") for x in value.split(","))
    elif config_type == C.ACL_PROF_NTS_METRICS:
        ok = value == "PipeUtilization" or value.startswith("Custom:")
    if not ok:
        raise AclProfilingError.for_rule("VALID_ARGUMENT", call, f"{name}={value!r}; expected {allowed}")


class CheckedProf:
    """The ``acl.prof`` calls, contract-checked (see module doc)."""

    def __init__(self, acl: Optional[ModuleType] = None, contract: ProcessContract = CONTRACT) -> None:
        self.acl = acl if acl is not None else load_acl()
        self.prof = self.acl.prof
        self.contract = contract
        self._configs: dict[int, tuple[tuple, int]] = {}  # config -> (devices, mask)
        self._lock = contract.lock

    # -- helpers ----------------------------------------------------------------------
    @staticmethod
    def _fail(call: str, code: int, table: dict, override: Optional[str] = None) -> AclProfilingError:
        return AclProfilingError.from_return(call, code, override or table.get(int(code), "LIBRARY_RETURN"))

    # -- collection -------------------------------------------------------------------
    def init(self, path: str) -> None:
        with self._lock:
            self.contract.check_init(path)
            ret = self.prof.init(path)
            if ret != 0:
                raise self._fail("acl.prof.init", ret, _INIT_CODES)
            self.contract.on_init(path)

    def finalize(self, force: bool = False) -> None:
        """``force`` stops what is still started first (documented: finalize stops every task)."""
        with self._lock:
            self.contract.check_finalize(force)
            ret = self.prof.finalize()
            if ret != 0:
                raise self._fail("acl.prof.finalize", ret, _API_CODES)
            self.contract.on_finalize()

    def set_config(self, config_type: int, value: str) -> None:
        check_set_config_value(config_type, value)
        with self._lock:
            self.contract.check_set_config(config_type, value)
            ret = self.prof.set_config(config_type, value)
            if ret != 0:
                raise self._fail("acl.prof.set_config", ret, _API_CODES)

    def create_config(self, devices: Iterable[int], aicore_metrics: int, aicore_events: int,
                      data_type_config: int) -> int:
        call = "acl.prof.create_config"
        devs = list(devices)
        if any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in devs):
            raise AclProfilingError.for_rule("VALID_ARGUMENT", call, f"device ids {devs!r} must be integers >= 0")
        if len(set(devs)) != len(devs):
            raise AclProfilingError.for_rule("VALID_ARGUMENT", call, f"device list {devs} repeats a device")
        if aicore_metrics not in C.AICORE_METRICS_NAMES:
            raise AclProfilingError.for_rule("VALID_ARGUMENT", call, f"aicore_metrics={aicore_metrics!r}")
        if isinstance(data_type_config, bool) or not isinstance(data_type_config, int) or data_type_config < 0:
            raise AclProfilingError.for_rule("VALID_ARGUMENT", call, f"data_type_config={data_type_config!r}")
        cfg = self.prof.create_config(devs, aicore_metrics, aicore_events, data_type_config)
        if not cfg:
            raise AclProfilingError.from_return(call, C.ACL_ERROR_INVALID_PARAM, "VALID_ARGUMENT",
                                                "create_config returned no configuration")
        self._configs[cfg] = (tuple(devs), data_type_config)
        return cfg

    def destroy_config(self, config: int) -> None:
        with self._lock:
            if config in self.contract.started:
                raise AclProfilingError.for_rule("START_STOP_PAIRED", "acl.prof.destroy_config",
                                                 "the configuration is still started; stop it first")
            ret = self.prof.destroy_config(config)
            self._configs.pop(config, None)
            if ret != 0:
                raise self._fail("acl.prof.destroy_config", ret, _API_CODES)

    def _described(self, config: int, call: str) -> tuple[tuple, int]:
        desc = self._configs.get(config)
        if desc is None:
            raise AclProfilingError.for_rule("VALID_ARGUMENT", call, f"config {config!r} was not created by "
                                             "this CheckedProf's create_config (or was destroyed)")
        return desc

    def start(self, config: int) -> None:
        with self._lock:
            devices, mask = self._described(config, "acl.prof.start")
            self.contract.check_start(config, devices, mask)
            ret = self.prof.start(config)
            if ret != 0:
                rule = None
                if ret == C.ACL_ERROR_PROF_ALREADY_RUN and not self.contract.cmd_mode():
                    rule = "NO_DUPLICATE_DEVICE"
                raise self._fail("acl.prof.start", ret, _API_CODES, rule)
            self.contract.on_start(config, devices, mask)

    def stop(self, config: int) -> None:
        with self._lock:
            devices, mask = self._described(config, "acl.prof.stop")
            self.contract.check_stop(config, devices, mask)
            ret = self.prof.stop(config)
            if ret != 0:
                raise self._fail("acl.prof.stop", ret, _API_CODES)
            self.contract.on_stop(config)

    # -- subscription -------------------------------------------------------------------
    def create_subscribe_config(self, time_info_switch: int, aicore_metrics: int, fd: int) -> int:
        call = "acl.prof.create_subscribe_config"
        if aicore_metrics not in C.AICORE_METRICS_NAMES:
            raise AclProfilingError.for_rule("VALID_ARGUMENT", call, f"aicore_metrics={aicore_metrics!r}")
        if isinstance(fd, bool) or not isinstance(fd, int) or fd < 0:
            raise AclProfilingError.for_rule("VALID_ARGUMENT", call, f"fd={fd!r} must be an open write fd")
        cfg = self.prof.create_subscribe_config(int(bool(time_info_switch)), aicore_metrics, fd)
        if not cfg:
            raise AclProfilingError.from_return(call, C.ACL_ERROR_INVALID_PARAM, "VALID_ARGUMENT",
                                                "create_subscribe_config returned no configuration")
        return cfg

    def destroy_subscribe_config(self, sub_config: int) -> None:
        ret = self.prof.destroy_subscribe_config(sub_config)
        if ret != 0:
            raise self._fail("acl.prof.destroy_subscribe_config", ret, _SUB_CODES)

    def model_subscribe(self, model_id: int, sub_config: int) -> None:
        with self._lock:
            self.contract.check_subscribe(model_id)
            ret = self.prof.model_subscribe(model_id, sub_config)
            if ret != 0:
                raise self._fail("acl.prof.model_subscribe", ret, _SUB_CODES)
            self.contract.subscribed.add(model_id)

    def model_unsubscribe(self, model_id: int) -> None:
        with self._lock:
            self.contract.check_unsubscribe(model_id)
            fn = getattr(self.prof, "model_unsubscribe", None) or self.prof.model_un_subscribe
            ret = fn(model_id)
            if ret != 0:
                raise self._fail("acl.prof.model_unsubscribe", ret, _SUB_CODES)
            self.contract.subscribed.discard(model_id)

    def check_get(self, call: str = "acl.prof.get_op_*") -> None:
        """The get_* calls are subscription calls too: not between init and finalize."""
        self.contract.check_subscription_call(call)

    def get_op_desc_size(self) -> int:
        self.check_get("acl.prof.get_op_desc_size")
        size, ret = self.prof.get_op_desc_size()
        if ret != 0:
            raise self._fail("acl.prof.get_op_desc_size", ret, _SUB_CODES)
        return int(size)

    # -- msproftx -----------------------------------------------------------------------
    def create_stamp(self) -> int:
        with self._lock:
            self.contract.check_tx("acl.prof.create_stamp")
            stamp = self.prof.create_stamp()
            if not stamp:
                raise AclProfilingError.from_return("acl.prof.create_stamp", C.ACL_ERROR_PROFILING_FAILURE,
                                                    "LIBRARY_RETURN", "create_stamp returned no stamp")
            self.contract.live_stamps.add(stamp)
            return stamp

    def destroy_stamp(self, stamp: int) -> None:
        with self._lock:
            self.contract.check_stamp(stamp, "acl.prof.destroy_stamp")
            self.prof.destroy_stamp(stamp)
            self.contract.live_stamps.discard(stamp)

    def set_stamp_trace_message(self, stamp: int, message: str) -> None:
        with self._lock:
            self.contract.check_stamp(stamp, "acl.prof.set_stamp_trace_message")
            ret = self.prof.set_stamp_trace_message(stamp, message, len(message))
            if ret != 0:
                raise self._fail("acl.prof.set_stamp_trace_message", ret, _TX_CODES, "VALID_ARGUMENT")

    def mark(self, stamp: int) -> None:
        with self._lock:
            self.contract.check_tx("acl.prof.mark")
            self.contract.check_stamp(stamp, "acl.prof.mark")
            ret = self.prof.mark(stamp)
            if ret != 0:
                raise self._fail("acl.prof.mark", ret, _TX_CODES)

    def mark_ex(self, message: str, stream: int) -> None:
        with self._lock:
            self.contract.check_tx("acl.prof.mark_ex")
            if not isinstance(message, str) or len(message) > C.MAX_MARK_EX_LEN:
                raise AclProfilingError.for_rule("VALID_ARGUMENT", "acl.prof.mark_ex",
                                                 f"message must be a string of at most {C.MAX_MARK_EX_LEN} "
                                                 "characters")
            ret = self.prof.mark_ex(message, stream)
            if ret != 0:
                raise self._fail("acl.prof.mark_ex", ret, _TX_CODES, "VALID_ARGUMENT")

    def push(self, stamp: int) -> None:
        with self._lock:
            self.contract.check_tx("acl.prof.push")
            self.contract.check_stamp(stamp, "acl.prof.push")
            ret = self.prof.push(stamp)
            if ret != 0:
                raise self._fail("acl.prof.push", ret, _TX_CODES)
            self.contract.on_push()

    def pop(self) -> None:
        with self._lock:
            self.contract.check_pop()
            ret = self.prof.pop()
            if ret != 0:
                raise self._fail("acl.prof.pop", ret, _TX_CODES, "PUSH_POP_SAME_THREAD")
            self.contract.on_pop()

    def range_start(self, stamp: int) -> int:
        with self._lock:
            self.contract.check_tx("acl.prof.range_start")
            self.contract.check_stamp(stamp, "acl.prof.range_start")
            range_id, ret = self.prof.range_start(stamp)
            if ret != 0:
                raise self._fail("acl.prof.range_start", ret, _TX_CODES)
            self.contract.live_ranges.add(range_id)
            return range_id

    def range_stop(self, range_id: int) -> None:
        with self._lock:
            self.contract.check_range(range_id)
            ret = self.prof.range_stop(range_id)
            if ret != 0:
                raise self._fail("acl.prof.range_stop", ret, _TX_CODES)
            self.contract.live_ranges.discard(range_id)


_shared: Optional[CheckedProf] = None
_shared_lock = threading.Lock()


def shared_prof(acl: Optional[ModuleType] = None) -> CheckedProf:
    """The process's CheckedProf (configs created by one are known to all users)."""
    global _shared
    with _shared_lock:
        if _shared is None or (acl is not None and _shared.acl is not acl):
            _shared = CheckedProf(acl)
        return _shared


def _reset_shared() -> None:
    global _shared
    with _shared_lock:
        _shared = None
