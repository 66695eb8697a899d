"""Enumerations shared with mindspore.profiler and torch.profiler.

Values are the strings mindspore.profiler uses, so ``ProfilerLevel.Level1`` and
``"Level1"`` are interchangeable everywhere npuprof takes a level.
"""
from __future__ import annotations

from enum import Enum, IntEnum


class _StrEnum(str, Enum):
    def __str__(self) -> str:  # "Level0", not "ProfilerLevel.Level0"
        return self.value


class ProfilerActivity(_StrEnum):
    """What to collect: host (CPU), Ascend device (NPU) or GPU activity."""

    CPU = "CPU"
    NPU = "NPU"
    GPU = "GPU"


class ProfilerLevel(_StrEnum):
    """Collection depth, as in mindspore.profiler.

    LevelNone: only mstx/user ranges; Level0: op timing and large
    communication ops; Level1: + AscendCL API data, AI Core metrics, small
    communication ops; Level2: + GE and Runtime data.
    """

    LevelNone = "LevelNone"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AicoreMetrics(_StrEnum):
    """AI Core PMU metric group (NPU only)."""

    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    MemoryUB = "MemoryUB"
    ResourceConflictRatio = "ResourceConflictRatio"
    L2Cache = "L2Cache"
    MemoryAccess = "MemoryAccess"
    AiCoreNone = "None"


class ExportType(_StrEnum):
    """Output kinds: CSV/JSON text files and/or a sqlite database."""

    Text = "text"
    Db = "db"


class HostSystem(_StrEnum):
    """Host system usage series sampled while profiling."""

    CPU = "cpu"
    MEM = "mem"
    DISK = "disk"
    NETWORK = "network"


class ProfilerAction(IntEnum):
    """What the schedule asks for at a step (torch.profiler names).

    ``WARM_UP`` is an alias for MindSpore users.
    """

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    WARM_UP = 1
