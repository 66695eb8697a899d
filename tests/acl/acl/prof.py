"""acl.prof of the test double: libmsprofiler's mode machine (OFF/CMD/API/SUBSCRIBE).

Return codes follow the documented table (reference pyacl.md section 7.2).
The library does *not* check the rules it leaves to the caller (prof.init
before model loading, one init/finalize pair per process, msproftx only
between start and stop): those are npuprof's pre-checks, and the double
deliberately does not do them, so tests show npuprof catching them itself.
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading
from typing import Optional

from . import _state as S

_VALID_METRICS = set(range(0, 9)) | {0xFF}


def _mode_error(name: str, api_ok: bool = True) -> Optional[int]:
    mode = S.STATE.mode
    if mode == S.OFF:
        return S.log_call(name, S.PROF_NOT_RUN)
    if mode == S.CMD:
        return S.log_call(name, S.PROF_ALREADY_RUN)
    if mode == S.SUBSCRIBE:
        return S.log_call(name, S.PROF_API_CONFLICT)
    return None


# -- collection to files --------------------------------------------------------
def init(path: str) -> int:
    with S.LOCK:
        st = S.STATE
        if not st.acl_initialised:
            return S.log_call("acl.prof.init", S.UNINITIALIZE)
        if st.mode == S.CMD:
            return S.log_call("acl.prof.init", S.PROF_ALREADY_RUN)
        if st.mode == S.API:
            return S.log_call("acl.prof.init", S.REPEAT_INITIALIZE)
        if st.mode == S.SUBSCRIBE:
            return S.log_call("acl.prof.init", S.PROF_API_CONFLICT)
        if not isinstance(path, str) or len(path) > 4096:
            return S.log_call("acl.prof.init", S.INVALID_PARAM)
        if not path:
            return S.log_call("acl.prof.init", S.INVALID_FILE)
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            return S.log_call("acl.prof.init", S.INVALID_FILE)
        if not os.access(path, os.W_OK):
            return S.log_call("acl.prof.init", S.INVALID_FILE)
        st.mode = S.API
        st.prof_path = path
        return S.log_call("acl.prof.init", S.SUCCESS)


def finalize() -> int:
    with S.LOCK:
        err = _mode_error("acl.prof.finalize")
        if err is not None:
            return err
        st = S.STATE
        for coll in list(st.collections.values()):
            S.finish_prof_dir(coll.prof_dir)
        st.collections.clear()
        st.device_tasks.clear()
        st.mode = S.OFF
        st.prof_path = None
        return S.log_call("acl.prof.finalize", S.SUCCESS)


def create_config(device_list, aicore_metrics: int, aicore_events: int, data_type_config: int) -> int:
    with S.LOCK:
        try:
            devices = tuple(int(d) for d in device_list)
        except (TypeError, ValueError):
            return S.log_call("acl.prof.create_config", 0)
        if any(d < 0 for d in devices) or len(set(devices)) != len(devices):
            return S.log_call("acl.prof.create_config", 0)
        if aicore_metrics not in _VALID_METRICS or not isinstance(data_type_config, int) or data_type_config < 0:
            return S.log_call("acl.prof.create_config", 0)
        handle = S.new_handle()
        S.STATE.configs[handle] = S.ProfConfig(devices, aicore_metrics, aicore_events, data_type_config)
        return S.log_call("acl.prof.create_config", handle)


def destroy_config(config: int) -> int:
    with S.LOCK:
        if S.STATE.configs.pop(config, None) is None:
            return S.log_call("acl.prof.destroy_config", S.INVALID_PARAM)
        return S.log_call("acl.prof.destroy_config", S.SUCCESS)


def start(config: int) -> int:
    with S.LOCK:
        err = _mode_error("acl.prof.start")
        if err is not None:
            return err
        st = S.STATE
        cfg = st.configs.get(config)
        if cfg is None:
            return S.log_call("acl.prof.start", S.INVALID_PARAM)
        if config in st.collections:
            return S.log_call("acl.prof.start", S.PROF_ALREADY_RUN)
        for dev in cfg.devices:
            if dev in st.device_tasks:  # "Device N already started"
                return S.log_call("acl.prof.start", S.PROF_ALREADY_RUN)
        path = S.create_prof_dir(st.prof_path, cfg.devices)
        st.collections[config] = S.Collection(config, cfg.mask, cfg.devices, path)
        for dev in cfg.devices:
            st.device_tasks[dev] = config
        return S.log_call("acl.prof.start", S.SUCCESS)


def stop(config: int) -> int:
    with S.LOCK:
        err = _mode_error("acl.prof.stop")
        if err is not None:
            return err
        st = S.STATE
        cfg = st.configs.get(config)
        if cfg is None:
            return S.log_call("acl.prof.stop", S.INVALID_PARAM)
        for dev in cfg.devices:
            started = st.device_tasks.get(dev)
            if started is not None and st.collections[started].mask != cfg.mask:
                return S.log_call("acl.prof.stop", S.INVALID_PROFILING_CONFIG)
        touched = set()
        for dev in cfg.devices:
            started = st.device_tasks.pop(dev, None)  # never-started device: warning only, as the library
            if started is not None:
                touched.add(started)
        if not cfg.devices and config in st.collections:
            touched.add(config)
        for handle in touched:
            if not any(h == handle for h in st.device_tasks.values()):
                coll = st.collections.pop(handle)
                S.finish_prof_dir(coll.prof_dir)
        return S.log_call("acl.prof.stop", S.SUCCESS)


def set_config(config_type: int, config: str) -> int:
    with S.LOCK:
        if S.STATE.mode == S.OFF:
            return S.log_call("acl.prof.set_config", S.PROF_NOT_RUN)
        if not isinstance(config, str) or len(config) > 256 or not (1 <= int(config_type) < 17):
            return S.log_call("acl.prof.set_config", S.INVALID_PARAM)
        return S.log_call("acl.prof.set_config", S.SUCCESS)


# -- subscription ---------------------------------------------------------------------
def create_subscribe_config(time_info_switch: int, aicore_metrics: int, fd: int) -> int:
    with S.LOCK:
        if aicore_metrics not in _VALID_METRICS or not isinstance(fd, int) or fd < 0:
            return S.log_call("acl.prof.create_subscribe_config", 0)
        handle = S.new_handle()
        S.STATE.sub_configs[handle] = S.SubConfig(int(time_info_switch), aicore_metrics, fd)
        return S.log_call("acl.prof.create_subscribe_config", handle)


def destroy_subscribe_config(sub_config: int) -> int:
    with S.LOCK:
        if S.STATE.sub_configs.pop(sub_config, None) is None:
            return S.log_call("acl.prof.destroy_subscribe_config", S.INVALID_PARAM)
        return S.log_call("acl.prof.destroy_subscribe_config", S.SUCCESS)


def model_subscribe(model_id: int, sub_config: int) -> int:
    with S.LOCK:
        st = S.STATE
        if st.mode == S.CMD:
            return S.log_call("acl.prof.model_subscribe", S.PROF_ALREADY_RUN)
        if st.mode == S.API:
            return S.log_call("acl.prof.model_subscribe", S.PROF_API_CONFLICT)
        model = st.models.get(model_id)
        if model is None:
            return S.log_call("acl.prof.model_subscribe", S.INVALID_MODEL_ID)
        if model_id in st.subscriptions:
            return S.log_call("acl.prof.model_subscribe", S.PROF_REPEAT_SUBSCRIBE)
        cfg = st.sub_configs.get(sub_config)
        if cfg is None:
            return S.log_call("acl.prof.model_subscribe", S.INVALID_PARAM)
        for other_model, other_handle in st.subscriptions.items():
            other = st.sub_configs.get(other_handle)
            other_dev = st.models[other_model].device if other_model in st.models else None
            if other is not None and other_dev == model.device and \
                    (other.metrics, other.switch) != (cfg.metrics, cfg.switch):
                return S.log_call("acl.prof.model_subscribe", S.INVALID_PROFILING_CONFIG)
        st.subscriptions[model_id] = sub_config
        st.mode = S.SUBSCRIBE
        S.writer()
        return S.log_call("acl.prof.model_subscribe", S.SUCCESS)


def model_unsubscribe(model_id: int) -> int:
    with S.LOCK:
        st = S.STATE
        if st.mode == S.CMD:
            return S.log_call("acl.prof.model_unsubscribe", S.PROF_ALREADY_RUN)
        if st.mode == S.API:
            return S.log_call("acl.prof.model_unsubscribe", S.PROF_API_CONFLICT)
        handle = st.subscriptions.pop(model_id, None)
        if handle is None:
            return S.log_call("acl.prof.model_unsubscribe", S.INVALID_MODEL_ID)
        cfg = st.sub_configs.get(handle)
        model = st.models.get(model_id)
        device = model.device if model is not None else None
        same_device = [m for m in st.subscriptions if m in st.models and st.models[m].device == device]
        if cfg is not None and not same_device:
            S.writer().close_fd(cfg.fd)  # the library closes the write end itself
        if not st.subscriptions:
            st.mode = S.OFF
        return S.log_call("acl.prof.model_unsubscribe", S.SUCCESS)


model_un_subscribe = model_unsubscribe  # legacy alias kept by pyACL


def get_op_desc_size():
    return S.STATE.desc_size, S.SUCCESS


def _buffer(ptr: int, length: int) -> Optional[bytes]:
    if not ptr or length <= 0:
        return None
    return ctypes.string_at(ptr, length)


def _records(ptr: int, length: int) -> Optional[list]:
    size = S.STATE.desc_size
    data = _buffer(ptr, length)
    if data is None or length % size:
        return None
    recs = [data[i:i + size] for i in range(0, length, size)]
    for rec in recs:
        if struct.unpack_from("<I", rec)[0] != S.crc32c_noxor(rec[4:]):
            return None
    return recs


def get_op_num(ptr: int, length: int):
    recs = _records(ptr, length)
    if recs is None:
        return 0, S.INVALID_PARAM
    return len(recs), S.SUCCESS


def _field(ptr: int, length: int, index: int, fmt: str, offset: int) -> Optional[int]:
    recs = _records(ptr, length)
    if recs is None or not 0 <= index < len(recs):
        return None
    return struct.unpack_from(fmt, recs[index], offset)[0]


def _op_index(ptr, length, index):
    return _field(ptr, length, index, "<Q", 16)


def _str_len(table: dict, ptr, length, index):
    key = _op_index(ptr, length, index)
    if key is None or key not in table:
        return 0, S.INVALID_PARAM
    return len(table[key].encode()) + 1, S.SUCCESS


def _str_get(table: dict, ptr, length, index, max_len, limit):
    key = _op_index(ptr, length, index)
    if key is None or key not in table:
        return "", S.INVALID_PARAM
    text = table[key]
    if not isinstance(max_len, int) or max_len < len(text.encode()) + 1 or max_len > limit:
        return "", S.INVALID_PARAM
    with S.LOCK:
        table.pop(key, None)  # the library erases the entry after a successful read
    return text, S.SUCCESS


def get_op_type_len(ptr: int, length: int, index: int):
    return _str_len(S.STATE.op_types, ptr, length, index)


def get_op_type(ptr: int, length: int, index: int, type_len: int):
    return _str_get(S.STATE.op_types, ptr, length, index, type_len, 4096)


def get_op_type_v2(ptr: int, length: int, index: int):
    n, ret = get_op_type_len(ptr, length, index)
    if ret:
        return None, ret
    return get_op_type(ptr, length, index, n)


def get_op_name_len(ptr: int, length: int, index: int):
    return _str_len(S.STATE.op_names, ptr, length, index)


def get_op_name(ptr: int, length: int, index: int, name_len: int):
    return _str_get(S.STATE.op_names, ptr, length, index, name_len, 4096)


def get_op_name_v2(ptr: int, length: int, index: int):
    n, ret = get_op_name_len(ptr, length, index)
    if ret:
        return None, ret
    return get_op_name(ptr, length, index, n)


def get_op_start(ptr: int, length: int, index: int) -> int:
    return _field(ptr, length, index, "<Q", 32) or 0


def get_op_end(ptr: int, length: int, index: int) -> int:
    return _field(ptr, length, index, "<Q", 40) or 0


def get_op_duration(ptr: int, length: int, index: int) -> int:
    return _field(ptr, length, index, "<Q", 24) or 0


def get_model_id(ptr: int, length: int, index: int) -> int:
    return _field(ptr, length, index, "<I", 4) or 0


# -- step info --------------------------------------------------------------------------
def create_step_info() -> int:
    return S.new_handle()


def destroy_step_info(step_info: int) -> None:
    return None


def get_step_timestamp(step_info: int, tag: int, stream: int) -> int:
    return S.SUCCESS if tag in (0, 1) else S.INVALID_PARAM


# -- msproftx -------------------------------------------------------------------------
def _tx_collections() -> list:
    return [c for c in S.host_collections() if c.mask & S.MSPROFTX_BIT]


def _tx_record(kind: str, message: str, start_ns: int, end_ns: int, tid: int, end_tid: int = 0) -> None:
    for coll in _tx_collections():
        S.append_raw(coll.prof_dir, "host", "tx", {
            "event_type": kind, "message": message, "start_ns": start_ns, "end_ns": end_ns,
            "pid": os.getpid(), "tid": tid, "end_tid": end_tid or tid})


def create_stamp() -> int:
    with S.LOCK:
        stamp = S.new_handle()
        S.STATE.stamps[stamp] = ""
        return stamp


def destroy_stamp(stamp: int) -> None:
    with S.LOCK:
        S.STATE.stamps.pop(stamp, None)
    return None


def set_stamp_trace_message(stamp: int, msg: str, msg_len: int) -> int:
    with S.LOCK:
        if stamp not in S.STATE.stamps or not isinstance(msg, str) or msg_len != len(msg):
            return S.INVALID_PARAM
        S.STATE.stamps[stamp] = msg
        return S.SUCCESS


def mark(stamp: int) -> int:
    with S.LOCK:
        if stamp not in S.STATE.stamps:
            return S.INVALID_PARAM
        t = S.now_ns()
        _tx_record("marker", S.STATE.stamps[stamp], t, t, threading.get_ident() & 0xFFFFFFFF)
        return S.SUCCESS


def mark_ex(msg: str, stream: int) -> int:
    with S.LOCK:
        if not isinstance(msg, str) or len(msg) > 127:
            return S.INVALID_PARAM
        t = S.now_ns()
        _tx_record("marker_ex", msg, t, t, threading.get_ident() & 0xFFFFFFFF)
        return S.SUCCESS


def push(stamp: int) -> int:
    with S.LOCK:
        if stamp not in S.STATE.stamps:
            return S.INVALID_PARAM
        S.STATE.push_stacks.setdefault(threading.get_ident(), []).append((stamp, S.now_ns()))
        return S.SUCCESS


def pop() -> int:
    with S.LOCK:
        stack = S.STATE.push_stacks.get(threading.get_ident())
        if not stack:
            return S.INVALID_PARAM
        stamp, t0 = stack.pop()
        _tx_record("push_pop", S.STATE.stamps.get(stamp, ""), t0, S.now_ns(), threading.get_ident() & 0xFFFFFFFF)
        return S.SUCCESS


def range_start(stamp: int):
    with S.LOCK:
        if stamp not in S.STATE.stamps:
            return 0, S.INVALID_PARAM
        rid = S.STATE.next_range
        S.STATE.next_range += 1
        S.STATE.ranges[rid] = (stamp, S.now_ns(), threading.get_ident() & 0xFFFFFFFF)
        return rid, S.SUCCESS


def range_stop(range_id: int) -> int:
    with S.LOCK:
        entry = S.STATE.ranges.pop(range_id, None)
        if entry is None:
            return S.INVALID_PARAM
        stamp, t0, tid = entry
        _tx_record("start_end", S.STATE.stamps.get(stamp, ""), t0, S.now_ns(), tid,
                   threading.get_ident() & 0xFFFFFFFF)
        return S.SUCCESS
