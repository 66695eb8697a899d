"""acl.rt of the test double: devices, contexts, streams (bookkeeping only)."""
from __future__ import annotations

import threading

from . import _state as S

ACL_HOST = 1
ACL_DEVICE = 0


def _need_init(name: str):
    if not S.STATE.acl_initialised:
        return S.log_call(name, S.UNINITIALIZE)
    return None


def set_device(device_id: int) -> int:
    with S.LOCK:
        err = _need_init("acl.rt.set_device")
        if err is not None:
            return err
        S.STATE.devices.add(int(device_id))
        from . import _cmd_collection_for
        _cmd_collection_for(int(device_id))
        return S.log_call("acl.rt.set_device", S.SUCCESS)


def reset_device(device_id: int) -> int:
    with S.LOCK:
        S.STATE.devices.discard(int(device_id))
        return S.log_call("acl.rt.reset_device", S.SUCCESS)


def create_context(device_id: int):
    with S.LOCK:
        if not S.STATE.acl_initialised:
            return S.log_call("acl.rt.create_context", (0, S.UNINITIALIZE))
        ctx = S.new_handle()
        S.STATE.contexts[ctx] = int(device_id)
        S.STATE.current_context[threading.get_ident()] = ctx
        return S.log_call("acl.rt.create_context", (ctx, S.SUCCESS))


def destroy_context(ctx: int) -> int:
    with S.LOCK:
        if S.STATE.contexts.pop(ctx, None) is None:
            return S.log_call("acl.rt.destroy_context", S.INVALID_PARAM)
        return S.log_call("acl.rt.destroy_context", S.SUCCESS)


def set_context(ctx: int) -> int:
    with S.LOCK:
        if ctx not in S.STATE.contexts:
            return S.log_call("acl.rt.set_context", S.INVALID_PARAM)
        S.STATE.current_context[threading.get_ident()] = ctx
        return S.log_call("acl.rt.set_context", S.SUCCESS)


def get_context():
    ctx = S.STATE.current_context.get(threading.get_ident(), 0)
    return ctx, (S.SUCCESS if ctx else S.INVALID_PARAM)


def create_stream():
    with S.LOCK:
        if not S.STATE.acl_initialised:
            return (0, S.UNINITIALIZE)
        stream = S.new_handle()
        S.STATE.streams[stream] = True
        return S.log_call("acl.rt.create_stream", (stream, S.SUCCESS))


def destroy_stream(stream: int) -> int:
    with S.LOCK:
        S.STATE.streams.pop(stream, None)
        return S.log_call("acl.rt.destroy_stream", S.SUCCESS)


def synchronize_stream(stream: int) -> int:
    return S.SUCCESS


def get_run_mode():
    if not S.STATE.acl_initialised:
        return 0, S.UNINITIALIZE
    return ACL_HOST, S.SUCCESS
