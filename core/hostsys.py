"""Host system usage sampling (CPU, memory, disk, network) from /proc.

A daemon thread samples at ``host_sys_usage_freq`` Hz and hands COUNTER
events to the recorder once per flush interval. Series names follow msprof's
host timelines ("CPU Usage", "Memory Usage", ...), values in the unit the
name states. Off Linux (no /proc) the sampler says so once and does nothing.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable, Optional

import numpy as np

from .enums import HostSystem
from .events import EventKind, EventTable

log = logging.getLogger("npuprof")


def _read(path: str, limit: int = 1 << 16) -> bytes:
    """One os.read of a /proc file (cheaper than a Python file object at 50 Hz)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, limit)
    finally:
        os.close(fd)


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies over all CPUs (the first line of /proc/stat)."""
    head = _read("/proc/stat", 512)
    fields = [int(x) for x in head[: head.index(b"\n")].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return total - idle, total


def _meminfo_kb(text: bytes, key: bytes) -> int:
    start = text.find(key)
    if start < 0:
        raise KeyError(key.decode())
    end = text.index(b"\n", start)
    return int(text[start + len(key):end].split()[0])


def mem_used_percent() -> float:
    text = _read("/proc/meminfo", 4096)
    total = _meminfo_kb(text, b"MemTotal:")
    try:
        available = _meminfo_kb(text, b"MemAvailable:")
    except KeyError:   # kernels before 3.14
        available = _meminfo_kb(text, b"MemFree:")
    return 100.0 * (total - available) / total


def disk_bytes() -> int:
    """Sectors read+written over all block devices, in bytes."""
    total = 0
    for line in _read("/proc/diskstats").decode("ascii", "replace").splitlines():
        parts = line.split()
        if len(parts) >= 10 and not parts[2].startswith(("loop", "ram")):
            total += (int(parts[5]) + int(parts[9])) * 512
    return total


def net_bytes() -> int:
    total = 0
    for line in _read("/proc/net/dev").decode("ascii", "replace").splitlines()[2:]:
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            continue
        parts = rest.split()
        total += int(parts[0]) + int(parts[8])
    return total


def process_rss_bytes() -> int:
    try:
        return _meminfo_kb(_read(f"/proc/{os.getpid()}/status", 8192), b"VmRSS:") * 1024
    except KeyError:
        return 0


class HostSampler:
    """Samples the chosen series and delivers them as EventTables."""

    def __init__(self, series: tuple[HostSystem, ...], freq_hz: float, offset_ns: int,
                 deliver: Callable[[EventTable], None], flush_interval: float = 1.0,
                 process_memory: bool = False) -> None:
        self.series = series
        self.period = 1.0 / freq_hz
        self.offset_ns = offset_ns
        self.deliver = deliver
        self.flush_interval = flush_interval
        self.process_memory = process_memory
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._names: list[str] = []
        self._ts: list[int] = []
        self._values: list[float] = []
        self.samples = 0

    def start(self) -> None:
        if not os.path.exists("/proc/stat"):
            log.warning("npuprof: host_sys sampling needs /proc (Linux); no host usage is recorded")
            return
        self._thread = threading.Thread(target=self._run, name="npuprof-hostsys", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._deliver()

    def _emit(self, name: str, t: int, value: float) -> None:
        self._names.append(name)
        self._ts.append(t)
        self._values.append(value)

    def _run(self) -> None:
        prev_cpu = cpu_times() if HostSystem.CPU in self.series else None
        prev_disk = disk_bytes() if HostSystem.DISK in self.series else None
        prev_net = net_bytes() if HostSystem.NETWORK in self.series else None
        prev_t = time.perf_counter_ns()
        last_flush = time.monotonic()
        try:
            while not self._stop.wait(self.period):
                t = time.perf_counter_ns()
                dt = max(t - prev_t, 1) / 1e9
                if prev_cpu is not None:
                    cur = cpu_times()
                    busy, total = cur[0] - prev_cpu[0], cur[1] - prev_cpu[1]
                    self._emit("CPU Usage(%)", t, 100.0 * busy / total if total > 0 else 0.0)
                    prev_cpu = cur
                if HostSystem.MEM in self.series:
                    self._emit("Memory Usage(%)", t, mem_used_percent())
                if prev_disk is not None:
                    cur_d = disk_bytes()
                    self._emit("Disk Usage(B/s)", t, (cur_d - prev_disk) / dt)
                    prev_disk = cur_d
                if prev_net is not None:
                    cur_n = net_bytes()
                    self._emit("Network Usage(B/s)", t, (cur_n - prev_net) / dt)
                    prev_net = cur_n
                if self.process_memory:
                    self._emit("Process RSS(B)", t, float(process_rss_bytes()))
                prev_t = t
                self.samples += 1
                if time.monotonic() - last_flush >= self.flush_interval:
                    self._deliver()
                    last_flush = time.monotonic()
        except (OSError, ValueError, IndexError, KeyError) as e:
            log.warning("npuprof: host usage sampling stopped: %s", e)

    def _deliver(self) -> None:
        if not self._ts:
            return
        names, ts, values = self._names, self._ts, self._values
        self._names, self._ts, self._values = [], [], []
        self.deliver(EventTable.from_records(
            ts=np.asarray(ts, dtype=np.int64) + self.offset_ns, kind=int(EventKind.COUNTER),
            name=names, type="host_sys", value=values, pid=os.getpid(), source="npuprof"))
