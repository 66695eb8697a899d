"""Test double of CANN's pyACL ``acl`` module (NOT the real library).

Implements ``acl.init``/``acl.finalize``, the ``acl.prof`` profiling calls
with libmsprofiler's documented state machine and error codes, and the few
``acl.rt``/``acl.mdl``/``acl.util`` calls a sample app needs. A "model" is a
JSON file ``{"ops": [{"name": ..., "type": ..., "duration_us": ...}, ...],
"fail_after": null}``; executing it "runs" the ops back to back.

Profiling switched on through acl.json (``"profiler": {"switch": "on"}``) or
the environment (``PROFILING_MODE=true`` + ``PROFILING_OPTIONS``) puts the
double into CMD mode, as the real library does.
"""
from __future__ import annotations

import json
import os

from . import _state as S
from . import mdl, prof, rt, util  # noqa: F401  (sub-modules as in pyACL)

IS_TEST_DOUBLE = True
__all__ = ["init", "finalize", "get_recent_err_msg", "mdl", "prof", "rt", "util"]

_ON = ("on",)


def init(config_path: str = "") -> int:
    """acl.init: once per process; reads the "profiler" section of acl.json."""
    with S.LOCK:
        if S.STATE.acl_initialised:
            return S.log_call("acl.init", S.REPEAT_INITIALIZE)
        profiler: dict = {}
        if config_path:
            try:
                with open(config_path) as fh:
                    text = fh.read()
                data = json.loads(text) if text.strip() else {}
            except (OSError, ValueError):
                return S.log_call("acl.init", S.INVALID_FILE)
            profiler = data.get("profiler", {}) if isinstance(data, dict) else {}
        env_options = os.environ.get("PROFILING_OPTIONS")
        if os.environ.get("PROFILING_MODE") == "true" and env_options:
            try:
                profiler = dict(json.loads(env_options), switch="on")
            except ValueError:
                return S.log_call("acl.init", S.INVALID_PARAM)
        S.STATE.acl_initialised = True
        S.STATE.acl_init_count += 1
        if isinstance(profiler, dict) and profiler.get("switch") == "on":
            S.STATE.mode = S.CMD
            S.STATE.cmd_profiler = profiler
        return S.log_call("acl.init", S.SUCCESS)


def cmd_mask(profiler: dict) -> int:
    """Data-type mask implied by an acl.json profiler section (standard and SVP keys)."""
    mask = 0
    if profiler.get("task_time", "on") != "off":
        mask |= 0x0002
    if profiler.get("ascendcl", profiler.get("acl_api", "on")) == "on":
        mask |= 0x0001
    if profiler.get("aicpu", profiler.get("aacpu", "off")) == "on":
        mask |= 0x0008
    if profiler.get("msproftx", "off") == "on":
        mask |= 0x0080
    if profiler.get("runtime_api", "on") == "on":
        mask |= 0x0100
    return mask


def _cmd_collection_for(device: int) -> None:
    """In CMD mode the collector creates its output lazily, at first use."""
    st = S.STATE
    if st.mode != S.CMD or st.cmd_collection is not None:
        return
    out = st.cmd_profiler.get("output") or os.environ.get("ASCEND_WORK_PATH") or os.getcwd()
    os.makedirs(out, exist_ok=True)
    if any(k in st.cmd_profiler for k in S.SVP_KEYS):    # the SS928/SS927 collector: a JOB directory
        path = S.create_job_dir(out, device)
        aa_core = st.cmd_profiler.get("aac_metrics") == "ArithmeticUtilization"
    else:
        path, aa_core = S.create_prof_dir(out, (device,)), False
    st.cmd_collection = S.Collection(handle=0, mask=cmd_mask(st.cmd_profiler), devices=(device,), prof_dir=path,
                                     aa_core=aa_core)


def finalize() -> int:
    """acl.finalize: ends a CMD-mode collection; a second acl.init is refused afterwards."""
    with S.LOCK:
        if not S.STATE.acl_initialised:
            return S.log_call("acl.finalize", S.UNINITIALIZE)
        if S.STATE.cmd_collection is not None:
            S.finish_prof_dir(S.STATE.cmd_collection.prof_dir)
            S.STATE.cmd_collection = None
        if S.STATE.mode == S.CMD:
            S.STATE.mode = S.OFF
        S.STATE.acl_initialised = False
        return S.log_call("acl.finalize", S.SUCCESS)


def get_recent_err_msg() -> str:
    return ""


# test helpers (not part of pyACL)
def _double_reset() -> None:
    S.reset()


def _double_calls() -> list:
    return list(S.STATE.calls)


def _double_state() -> "S.State":
    return S.STATE
