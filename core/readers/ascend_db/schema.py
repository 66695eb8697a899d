"""msprof's schema as the reader needs it: documented enumerations for a file without its ``ENUM_*``
table, the limits of the event columns, and what a read returns (:class:`AscendDbFacts`,
:class:`AscendDbRead`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from npuprof.events import EventTable


INVALID_U32 = 4294967295            # msprof's "none" for ids, ranks and connection ids (uint32 max)


MB = 1024.0 * 1024.0


# ENUM_API_TYPE / ENUM_MSTX_EVENT_TYPE as documented, for a file without the table
API_TYPES = {5000: "runtime", 5500: "hccl", 10000: "node", 15000: "model", 20000: "acl", 50001: "op",
             50002: "queue", 50003: "trace", 50004: "mstx"}


MSTX_TYPES = {0: "marker", 1: "push/pop", 2: "start/end", 3: "marker_ex"}


# ENUM_MODULE (the modules of NPU_MODULE_MEM) as torch_npu's files carry it
MODULES = dict(enumerate((
    "SLOG", "IDEDD", "IDEDH", "HCCL", "FMK", "HIAIENGINE", "DVPP", "RUNTIME", "CCE", "HDC", "DRV", "MDCFUSION",
    "MDCLOCATION", "MDCPERCEPTION", "MDCFSM", "MDCCOMMON", "MDCMONITOR", "MDCBSWP", "MDCDEFAULT", "MDCSC", "MDCPNC",
    "MLL", "DEVMM", "KERNEL", "LIBMEDIA", "CCECPU", "ASCENDDK", "ROS", "HCCP", "ROCE", "TEFUSION", "PROFILING", "DP",
    "APP", "TS", "TSDUMP", "AICPU", "LP", "TDT", "FE", "MD", "MB", "ME", "IMU", "IMP", "GE", "MDCFUSA", "CAMERA",
    "ASCENDCL", "TEEOS", "ISP", "SIS", "HSM", "DSS", "PROCMGR", "BBOX", "AIVECTOR", "TBE", "FV", "MDCMAP", "TUNE",
    "HSS", "FFTS", "OP", "UDF", "HICAID", "TSYNC", "AUDIO", "TPRT", "ASCENDCKERNEL", "ASYS", "ATRACE", "RTC",
    "SYSMONITOR", "AMP", "ADETECT", "MBUFF", "CUSTOM")))


_STEP_RE = re.compile(r"^ProfilerStep\s*#\s*(\d+)")


_MAX_DEVICE = 32767                  # the event table's device column is int16


Warn = Callable[[str], None]


@dataclass(frozen=True)
class AscendDbFacts:
    """What a profiler database records about its run.

    ``rank``: ``RANK_DEVICE_MAP.rankId`` (None where absent or -1, CANN's
    "set by the framework"); ``devices``: the device ids its tasks ran on
    (else ``RANK_DEVICE_MAP``/``NPU_INFO``); ``chip``: ``NPU_INFO``'s name;
    ``session_ns``: ``SESSION_TIME_INFO`` (start, end) epoch ns.
    """

    path: Path
    schema_version: Optional[str] = None
    rank: Optional[int] = None
    devices: tuple = ()
    chip: Optional[str] = None
    session_ns: Optional[tuple] = None


@dataclass
class AscendDbRead:
    """A database read: its events, its facts, and rows read per table."""

    events: EventTable
    facts: AscendDbFacts
    rows_read: dict = field(default_factory=dict)
