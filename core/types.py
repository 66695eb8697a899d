"""The types of npuprof's public parameters, for editors and type checkers (the values are still
validated at run time, with an error naming the parameter, the value and what is allowed).

Example::

    from npuprof.types import ActivityLike
    activities: list[ActivityLike] = [ProfilerActivity.CPU, "NPU"]
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Literal, Optional, Sequence, Union

from .enums import AicoreMetrics, ExportType, HostSystem, ProfilerAction, ProfilerActivity, ProfilerLevel

if TYPE_CHECKING:
    from .profiler import Profiler

PathLike = Union[str, "os.PathLike[str]"]
ActivityLike = Union[ProfilerActivity, Literal["CPU", "NPU", "GPU"]]
ProfilerLevelLike = Union[ProfilerLevel, Literal["LevelNone", "Level0", "Level1", "Level2"]]
AicMetricsLike = Union[AicoreMetrics, Literal["PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0",
                                              "MemoryUB", "ResourceConflictRatio", "L2Cache", "MemoryAccess",
                                              "None"]]
ExportTypeLike = Union[ExportType, Literal["text", "db"]]
HostSystemLike = Union[HostSystem, Literal["cpu", "mem", "disk", "network"]]
RankList = Union[str, int, Sequence[int]]          # "0,2,4-7", 3, [0, 2]
ScheduleFn = Callable[[int], ProfilerAction]        # step number -> what to do
TraceHandler = Callable[["Profiler"], Any]          # on_trace_ready

__all__ = ["PathLike", "ActivityLike", "ProfilerLevelLike", "AicMetricsLike", "ExportTypeLike", "HostSystemLike",
           "RankList", "ScheduleFn", "TraceHandler", "Optional"]
