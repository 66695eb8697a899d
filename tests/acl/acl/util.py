"""acl.util of the test double: pointers to numpy data and pyACL-style threads."""
from __future__ import annotations

import threading

from . import _state as S


def numpy_to_ptr(array) -> int:
    """Address of the array's data (the caller keeps the array alive)."""
    return int(array.ctypes.data)


def bytes_to_ptr(data) -> int:
    import ctypes

    buf = ctypes.create_string_buffer(bytes(data), len(data))
    S.STATE.threads[id(buf)] = buf  # keep alive for the test's lifetime
    return ctypes.addressof(buf)


def start_thread(fn, args):
    thread = threading.Thread(target=fn, args=(args,), name="acl-util-thread", daemon=True)
    thread.start()
    tid = thread.ident or 0
    S.STATE.threads[tid] = thread
    return tid, S.SUCCESS


def stop_thread(thread_id: int) -> int:
    thread = S.STATE.threads.pop(thread_id, None)
    if thread is None:
        return S.INVALID_PARAM
    thread.join(10)
    return S.SUCCESS if not thread.is_alive() else S.PROFILING_FAILURE
