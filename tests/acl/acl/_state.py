"""Process-wide state of the acl test double.

This is a *test double* of CANN's pyACL ``acl`` module: it implements the
state machine and error codes documented for libmsprofiler (``ProfAclMgr``
modes OFF/CMD/API/SUBSCRIBE), a toy runtime (devices, contexts, streams) and
toy models whose ops "run" with fixed durations. It writes raw data into
``PROF_*`` directories in its own simple format (JSON lines), which the fake
``tests/acl/bin/msprof`` exports to the CSV/JSON files real msprof writes. An
acl.json profiler section in the SS928/SS927 dialect (``aacpu``, ``aac_metrics``,
``acl_api``, ``interval``) makes it write a ``JOB*`` directory instead (``data/``
+ ``info.json.N``, as the SVP collector does), with per-layer AA Core counters
when ``aac_metrics`` is ``ArithmeticUtilization``; the tests' stand-in for the
vendor's msprof.pyc exports it.

Nothing here talks to hardware. Library code never imports this module.
"""
from __future__ import annotations

import json
import os
import queue
import random
import string
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

SUCCESS = 0
INVALID_PARAM = 100000
UNINITIALIZE = 100001
REPEAT_INITIALIZE = 100002
INVALID_FILE = 100003
INVALID_PROFILING_CONFIG = 100010
INVALID_MODEL_ID = 100011
PROF_ALREADY_RUN = 100042
PROF_NOT_RUN = 100043
PROF_REPEAT_SUBSCRIBE = 148046
PROF_API_CONFLICT = 148047
PROFILING_FAILURE = 500005
MODEL_EXECUTE_FAILED = 507011  # ACL_ERROR_RT_... a model failure the double can simulate

OFF, CMD, API, SUBSCRIBE = "OFF", "CMD", "API", "SUBSCRIBE"

MSPROFTX_BIT = 0x0080
ACL_API_BIT = 0x0001
TASK_BITS = 0x0002 | 0x0800 | 0x2000 | 0x8000

_CRC_TABLE: list[int] = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c_noxor(data: bytes) -> int:
    """CRC-32C, init 0xFFFFFFFF, no final XOR (libmsprofiler's signature rule)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


@dataclass
class Model:
    model_id: int
    path: str
    ops: list  # [{"name", "type", "duration_us"}]
    fail_after: Optional[int]  # execute fails after this many ops (simulated model error)
    device: int
    executions: int = 0        # how many times execute ran it (the SVP collector's iteration)


@dataclass
class ProfConfig:
    devices: tuple
    metrics: int
    events: int
    mask: int


@dataclass
class SubConfig:
    switch: int
    metrics: int
    fd: int


@dataclass
class Collection:
    """One started configuration: its PROF dir and devices."""

    handle: int
    mask: int
    devices: tuple
    prof_dir: str
    aa_core: bool = False      # SVP: AA Core counters collected (aac_metrics ArithmeticUtilization)

    @property
    def is_job(self) -> bool:
        """An SS928/SS927 JOB directory (raw data in its data/), not a PROF_ one."""
        return os.path.basename(self.prof_dir).startswith("JOB")

    def raw_where(self, where: str) -> str:
        """The sub-directory of a PROF_ dir's raw data (``host``, ``device_N``); a JOB keeps all in data/."""
        return "" if self.is_job else where


@dataclass
class State:
    acl_initialised: bool = False
    acl_init_count: int = 0
    mode: str = OFF
    cmd_profiler: dict = field(default_factory=dict)
    cmd_collection: Optional[Collection] = None
    prof_path: Optional[str] = None
    prof_seq: int = 0
    configs: dict = field(default_factory=dict)
    next_handle: int = 0x1000
    device_tasks: dict = field(default_factory=dict)  # device -> handle
    collections: dict = field(default_factory=dict)  # handle -> Collection (started)
    sub_configs: dict = field(default_factory=dict)
    subscriptions: dict = field(default_factory=dict)  # model_id -> handle of sub config
    op_types: dict = field(default_factory=dict)  # op index -> type
    op_names: dict = field(default_factory=dict)  # op index -> name
    next_op_index: int = 1
    desc_size: int = 72
    devices: set = field(default_factory=set)
    contexts: dict = field(default_factory=dict)
    current_context: dict = field(default_factory=dict)  # thread id -> ctx
    streams: dict = field(default_factory=dict)
    models: dict = field(default_factory=dict)
    next_model_id: int = 1
    stamps: dict = field(default_factory=dict)
    push_stacks: dict = field(default_factory=dict)  # thread id -> [stamp]
    ranges: dict = field(default_factory=dict)  # range id -> (stamp, start_ns, tid)
    next_range: int = 1
    calls: list = field(default_factory=list)  # (name, ret) in call order
    writer: Optional["_PipeWriter"] = None
    threads: dict = field(default_factory=dict)
    device_free_us: dict = field(default_factory=dict)  # device -> when its last task ends (monotonic us)


STATE = State()
LOCK = threading.RLock()


def reset() -> None:
    """Forget everything (tests only): a fresh process, as far as acl knows."""
    global STATE
    with LOCK:
        if STATE.writer is not None:
            STATE.writer.close_all()
        STATE = State()


def log_call(name: str, ret: Any) -> Any:
    code = ret[-1] if isinstance(ret, tuple) else ret
    STATE.calls.append((name, code))
    return ret


def now_ns() -> int:
    return time.monotonic_ns()


def wait_until_ns(t_ns: int) -> None:
    """Block until the monotonic clock reaches ``t_ns`` (a synchronous call lasting as long as its work)."""
    while True:
        left = t_ns - now_ns()
        if left <= 0:
            return
        time.sleep(left / 1e9)


def new_handle() -> int:
    STATE.next_handle += 8
    return STATE.next_handle


# -- raw data ----------------------------------------------------------------
def _suffix() -> str:
    return "".join(random.choice(string.ascii_uppercase) for _ in range(16))


def create_prof_dir(base: str, devices: tuple) -> str:
    """PROF_{seq}_{timestamp}_{suffix} with host/ and device_N/ and their info files."""
    STATE.prof_seq += 1
    stamp = time.strftime("%Y%m%d%H%M%S", time.localtime()) + f"{int(time.time() * 1000) % 1000:03d}"
    path = os.path.join(base, f"PROF_{STATE.prof_seq:06d}_{stamp}_{_suffix()}")
    os.makedirs(os.path.join(path, "host", "data"), exist_ok=True)
    info = {"pid": os.getpid(), "pid_name": "python", "hostname": "double", "hostUid": "0",
            "rank_id": -1, "devices": ",".join(str(d) for d in devices),
            "DeviceInfo": [{"hwts_frequency": "100", "aic_frequency": "1000"}],
            "cannVersion": "double", "drvVersion": "double"}
    _write_json(os.path.join(path, "host", "info.json"), info)
    start = {"collectionTimeBegin": str(time.time_ns() // 1000), "clockMonotonicRaw": str(now_ns())}
    _write_json(os.path.join(path, "host", "start_info"), start)
    for dev in devices:
        ddir = os.path.join(path, f"device_{dev}")
        os.makedirs(os.path.join(ddir, "data"), exist_ok=True)
        _write_json(os.path.join(ddir, f"info.json.{dev}"), dict(info, devices=str(dev)))
        _write_json(os.path.join(ddir, f"start_info.{dev}"), start)
    return path


SVP_KEYS = ("aacpu", "aac_metrics", "acl_api", "interval")


def create_job_dir(base: str, device: int) -> str:
    """JOB{letters} with data/ and info.json.{device}: the SS928/SS927 collector's raw layout."""
    path = os.path.join(base, "JOB" + _suffix())
    os.makedirs(os.path.join(path, "data"), exist_ok=True)
    _write_json(os.path.join(path, f"info.json.{device}"),
                {"pid": os.getpid(), "devices": str(device), "platform": "SS928", "aa_core_frequency": "1000",
                 "icache_miss_rate": "0.02"})
    return path


def _write_json(path: str, obj: Any) -> None:
    with open(path, "w") as fh:
        json.dump(obj, fh)


def append_raw(prof_dir: str, where: str, kind: str, record: dict) -> None:
    """Append one JSON line to <prof_dir>/<where>/data/double.<kind>.slice_0."""
    path = os.path.join(prof_dir, where, "data", f"double.{kind}.slice_0")
    with open(path, "a") as fh:
        fh.write(json.dumps(record) + "\n")


def finish_prof_dir(prof_dir: str) -> None:
    if os.path.basename(prof_dir).startswith("JOB"):
        open(os.path.join(prof_dir, "data", "all_file.complete"), "w").close()
        return
    end = {"collectionTimeEnd": str(time.time_ns() // 1000), "clockMonotonicRaw": str(now_ns())}
    _write_json(os.path.join(prof_dir, "host", "end_info"), end)
    open(os.path.join(prof_dir, "host", "data", "all_file.complete"), "w").close()


def collections_for_device(device: int) -> list:
    out = []
    handle = STATE.device_tasks.get(device)
    if handle is not None and handle in STATE.collections:
        out.append(STATE.collections[handle])
    if STATE.cmd_collection is not None:
        out.append(STATE.cmd_collection)
    return out


def host_collections() -> list:
    out = list(STATE.collections.values())
    if STATE.cmd_collection is not None:
        out.append(STATE.cmd_collection)
    return out


# -- subscription pipe ---------------------------------------------------------
def pack_record(model_id: int, thread_id: int, op_index: int, start_us: int, end_us: int,
                exec_us: int, device: int) -> bytes:
    body = struct.pack("<IIIQQQQQQQ", model_id, 0, thread_id, op_index, end_us - start_us, start_us, end_us,
                       exec_us, 0, 0)
    if STATE.desc_size == 80:
        body += struct.pack("<II", device, 0)
    return struct.pack("<I", crc32c_noxor(body)) + body


class _PipeWriter:
    """Writes records to subscribed fds from a thread, as the library does."""

    def __init__(self) -> None:
        self.q: "queue.Queue" = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="acl-double-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            fd, data, done = item
            try:
                if data is None:
                    os.close(fd)
                else:
                    os.write(fd, data)
            except OSError:
                pass
            if done is not None:
                done.set()

    def write(self, fd: int, data: bytes) -> None:
        self.q.put((fd, data, None))

    def close_fd(self, fd: int) -> None:
        done = threading.Event()
        self.q.put((fd, None, done))
        done.wait(10)

    def close_all(self) -> None:
        self.q.put(None)
        self.thread.join(5)


def writer() -> _PipeWriter:
    if STATE.writer is None:
        STATE.writer = _PipeWriter()
    return STATE.writer
