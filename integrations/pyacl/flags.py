"""npuprof settings -> pyACL data-type masks and AI Core metric ids.

Levels map as the Ascend TF adapter maps its L0/L1/L2 (reference
profiling_options.md section 3), plus npuprof's own switches:

===========  ==========================================================
Level        flags
===========  ==========================================================
LevelNone    none (msproftx only; the config gets an empty device list)
Level0       ACL_PROF_TASK_TIME_L0 | ACL_PROF_ACL_API
Level1       ACL_PROF_TASK_TIME | ACL_PROF_ACL_API | ACL_PROF_HCCL_TRACE |
             ACL_PROF_AICORE_METRICS (the last only with a metric set)
Level2       Level1 | ACL_PROF_RUNTIME_API | ACL_PROF_AICPU
===========  ==========================================================

``mstx`` adds ACL_PROF_MSPROFTX, ``l2_cache`` ACL_PROF_L2CACHE and
``profile_memory`` ACL_PROF_TASK_MEMORY.

Example::

    >>> hex(data_type_mask("Level1", mstx=True))
    '0xa7'
    >>> aicore_metrics_id("PipeUtilization"), aicore_metrics_id(None, "Level0")
    (1, 255)
"""
from __future__ import annotations

from typing import Any, Optional

from npuprof.errors import ProfilerConfigError

from . import constants as C

LEVEL_MASKS: dict[str, int] = {
    "LevelNone": 0,
    "Level0": C.ACL_PROF_TASK_TIME_L0 | C.ACL_PROF_ACL_API,
    "Level1": C.ACL_PROF_TASK_TIME | C.ACL_PROF_ACL_API | C.ACL_PROF_HCCL_TRACE | C.ACL_PROF_AICORE_METRICS,
    "Level2": (C.ACL_PROF_TASK_TIME | C.ACL_PROF_ACL_API | C.ACL_PROF_HCCL_TRACE | C.ACL_PROF_AICORE_METRICS
               | C.ACL_PROF_RUNTIME_API | C.ACL_PROF_AICPU),
}


def _level_name(level: Any) -> str:
    name = getattr(level, "value", level)
    if name not in LEVEL_MASKS:
        raise ProfilerConfigError("profiler_level", level, "one of " + ", ".join(repr(k) for k in LEVEL_MASKS))
    return name


def aicore_metrics_id(aic_metrics: Any, level: Any = "Level1") -> int:
    """The aclprofAicoreMetrics value for a metric name (None -> level default).

    Level1/Level2 default to PipeUtilization, LevelNone/Level0 to
    ACL_AICORE_NONE; a metric other than None at Level0/LevelNone is refused.
    """
    lvl = _level_name(level)
    if aic_metrics is None:
        return C.ACL_AICORE_PIPE_UTILIZATION if lvl in ("Level1", "Level2") else C.ACL_AICORE_NONE
    if isinstance(aic_metrics, int) and not isinstance(aic_metrics, bool):
        if aic_metrics not in C.AICORE_METRICS_NAMES:
            raise ProfilerConfigError("aic_metrics", aic_metrics, "an aclprofAicoreMetrics value "
                                      + ", ".join(str(v) for v in sorted(C.AICORE_METRICS_NAMES)))
        value = aic_metrics
    else:
        name = getattr(aic_metrics, "value", aic_metrics)
        if name == "AiCoreNone":
            name = "None"
        if name not in C.AICORE_METRICS_BY_NAME:
            raise ProfilerConfigError("aic_metrics", aic_metrics,
                                      "one of " + ", ".join(repr(k) for k in C.AICORE_METRICS_BY_NAME))
        value = C.AICORE_METRICS_BY_NAME[name]
    if value != C.ACL_AICORE_NONE and lvl in ("LevelNone", "Level0"):
        raise ProfilerConfigError("aic_metrics", aic_metrics, "None at profiler_level " + lvl,
                                  hint="AI Core metrics need Level1 or Level2")
    return value


def data_type_mask(level: Any = "Level0", aic_metrics: Any = None, mstx: bool = False, l2_cache: bool = False,
                   profile_memory: bool = False, extra: int = 0) -> int:
    """The ``data_type_config`` mask for a level and switches.

    ``extra`` bits are OR-ed in unchanged (unknown bits are passed through,
    as newer CANN versions define more of them).
    """
    lvl = _level_name(level)
    mask = LEVEL_MASKS[lvl]
    if mask & C.ACL_PROF_AICORE_METRICS and aicore_metrics_id(aic_metrics, lvl) == C.ACL_AICORE_NONE:
        mask &= ~C.ACL_PROF_AICORE_METRICS  # the bit does nothing without a metric group
    if mstx:
        mask |= C.ACL_PROF_MSPROFTX
    if l2_cache:
        mask |= C.ACL_PROF_L2CACHE
    if profile_memory:
        mask |= C.ACL_PROF_TASK_MEMORY
    if isinstance(extra, bool) or not isinstance(extra, int) or extra < 0:
        raise ProfilerConfigError("data_types", extra, "a non-negative integer bit mask")
    mask |= extra
    if mask == 0:
        raise ProfilerConfigError("profiler_level", lvl, "a level other than LevelNone, or mstx=True",
                                  hint="nothing would be collected")
    return mask


def config_mask(config: Any) -> tuple[int, int]:
    """(mask, aicore metric id) for an npuprof ProfilerConfig."""
    level = config.profiler_level
    metrics = aicore_metrics_id(getattr(config, "aic_metrics", None), level)
    mask = data_type_mask(level, metrics, mstx=config.mstx, l2_cache=getattr(config, "l2_cache", False),
                          profile_memory=config.profile_memory)
    return mask, metrics


def level_devices(level: Any, devices: Optional[list]) -> list:
    """LevelNone (msproftx only) uses an empty device list, as the docs advise."""
    return [] if _level_name(level) == "LevelNone" else list(devices or [])
