"""One validated settings object for a Profiler.

:func:`build_config` checks every argument and raises
:class:`~npuprof.ProfilerConfigError` before anything starts; nothing is ever
reset silently. Integrations build the same object from profiling_options,
acl.json or MindSpore keyword arguments.

Example::

    >>> cfg = build_config(profiler_level="Level1", host_sys=["cpu"])
    >>> cfg.profiler_level, cfg.aic_metrics
    (<ProfilerLevel.Level1: 'Level1'>, <AicoreMetrics.PipeUtilization: 'PipeUtilization'>)
"""
from __future__ import annotations

import dataclasses
import os
import socket
from pathlib import Path
from typing import Any, Callable, Optional

from . import validate as v
from .enums import AicoreMetrics, ExportType, HostSystem, ProfilerActivity, ProfilerLevel
from .errors import ProfilerConfigError

DEFAULT_OUTPUT = "./npuprof_data"
DEFAULT_FLUSH_INTERVAL = 1.0


@dataclasses.dataclass(frozen=True)
class ProfilerConfig:
    """Validated profiler settings (see :class:`npuprof.Profiler` for meanings)."""

    output_path: Path
    activities: tuple[ProfilerActivity, ...]
    profiler_level: ProfilerLevel
    aic_metrics: AicoreMetrics
    schedule: Optional[Callable[[int], Any]]
    on_trace_ready: Optional[Callable[[Any], Any]]
    profile_memory: bool
    record_shapes: bool
    with_stack: bool
    host_sys: tuple[HostSystem, ...]
    host_sys_usage_freq: float
    mstx: bool
    mstx_domain_include: tuple[str, ...]
    mstx_domain_exclude: tuple[str, ...]
    data_simplification: bool
    export_type: tuple[ExportType, ...]
    start_profile: bool
    worker_name: str
    rank: int
    world_size: int
    device_id: int
    flush_interval: float
    storage_limit: Optional[int]
    framework: str
    l2_cache: bool = False
    python_memory: bool = False
    profile_rank_ids: Optional[tuple[int, ...]] = None
    device_ids: tuple[int, ...] = ()   # every device asked for; device_id is the first
    gc_detect_threshold: Optional[float] = None   # ms: Python GC pauses this long or longer are recorded; None: off
    extra: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """JSON-safe dict (for profiler_info_{rank}.json)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            val = getattr(self, f.name)
            if f.name in ("schedule", "on_trace_ready"):
                to_dict = getattr(val, "to_dict", None)
                val = to_dict() if to_dict else (None if val is None else repr(val))
            elif isinstance(val, tuple) and f.name != "extra":
                val = [str(x) for x in val]
            elif f.name == "extra":
                val = {k: x for k, x in val}
            elif isinstance(val, (Path,)) or hasattr(val, "value"):
                val = str(val)
            out[f.name] = val
        out["is_set_schedule"] = self.schedule is not None
        return out

    def replace(self, **changes: Any) -> "ProfilerConfig":
        return dataclasses.replace(self, **changes)


def env_rank() -> tuple[int, int, int]:
    """(rank, world_size, device_id) from the usual launcher variables.

    RANK_ID, RANK, LOCAL_RANK / RANK_SIZE, WORLD_SIZE / DEVICE_ID; defaults 0, 1, 0.
    """
    def first(*names: str, default: int) -> int:
        for name in names:
            raw = os.environ.get(name)
            if raw is not None and raw != "":
                try:
                    value = int(raw)
                except ValueError:
                    raise ProfilerConfigError(name, raw, "an integer (environment variable)") from None
                if value < 0:
                    raise ProfilerConfigError(name, raw, "an integer >= 0 (environment variable)")
                return value
        return default

    rank = first("RANK_ID", "RANK", "LOCAL_RANK", default=0)
    world = first("RANK_SIZE", "WORLD_SIZE", default=1)
    device = first("DEVICE_ID", "LOCAL_RANK", default=0)
    return rank, max(world, rank + 1), device


def build_config(
    output_path: Any = None,
    activities: Any = None,
    profiler_level: Any = ProfilerLevel.Level0,
    aic_metrics: Any = None,
    schedule: Any = None,
    on_trace_ready: Any = None,
    profile_memory: Any = False,
    record_shapes: Any = False,
    with_stack: Any = False,
    host_sys: Any = None,
    host_sys_usage_freq: Any = 50.0,
    mstx: Any = False,
    mstx_domain_include: Any = None,
    mstx_domain_exclude: Any = None,
    data_simplification: Any = True,
    export_type: Any = None,
    start_profile: Any = True,
    worker_name: Any = None,
    rank: Any = None,
    world_size: Any = None,
    device_id: Any = None,
    flush_interval: Any = DEFAULT_FLUSH_INTERVAL,
    storage_limit: Any = None,
    framework: Any = "ms",
    l2_cache: Any = False,
    python_memory: Any = False,
    experimental_config: Any = None,
    profile_rank_ids: Any = None,
    gc_detect_threshold: Any = None,
    **extra: Any,
) -> ProfilerConfig:
    """Validate keyword arguments into a :class:`ProfilerConfig`.

    ``experimental_config`` may be a mindspore ``_ExperimentalConfig`` (or any
    object / dict with the same attribute names); its values are used for the
    settings not given directly.
    """
    if experimental_config is not None:
        grouped = _experimental_values(experimental_config)
        given = {"profiler_level": profiler_level, "aic_metrics": aic_metrics, "mstx": mstx,
                 "data_simplification": data_simplification, "export_type": export_type,
                 "host_sys": host_sys, "l2_cache": l2_cache,
                 "mstx_domain_include": mstx_domain_include, "mstx_domain_exclude": mstx_domain_exclude}
        defaults = {"profiler_level": ProfilerLevel.Level0, "mstx": False, "data_simplification": True,
                    "l2_cache": False}
        for key, val in grouped.items():
            if key not in given:
                raise ProfilerConfigError("experimental_config", key, "attributes " + ", ".join(sorted(given)))
            if given[key] is None or given[key] == defaults.get(key, None):
                given[key] = val
        profiler_level, aic_metrics, mstx = given["profiler_level"], given["aic_metrics"], given["mstx"]
        data_simplification, export_type = given["data_simplification"], given["export_type"]
        host_sys, l2_cache = given["host_sys"], given["l2_cache"]
        mstx_domain_include, mstx_domain_exclude = given["mstx_domain_include"], given["mstx_domain_exclude"]

    for key in extra:
        raise ProfilerConfigError(key, extra[key], "a known Profiler argument (unknown keyword)")

    out = v.check_output_path("output_path", DEFAULT_OUTPUT if output_path is None else output_path)
    acts = v.check_enum_list("activities", [ProfilerActivity.CPU, ProfilerActivity.NPU] if activities is None
                             else activities, ProfilerActivity, allow_empty=False)
    level = v.check_enum("profiler_level", profiler_level, ProfilerLevel)
    if aic_metrics is None:
        metrics = AicoreMetrics.PipeUtilization if level in (ProfilerLevel.Level1, ProfilerLevel.Level2) \
            else AicoreMetrics.AiCoreNone
    else:
        metrics = v.check_enum("aic_metrics", aic_metrics, AicoreMetrics)
        if metrics is not AicoreMetrics.AiCoreNone and level in (ProfilerLevel.LevelNone, ProfilerLevel.Level0):
            raise ProfilerConfigError("aic_metrics", aic_metrics, "AiCoreNone at profiler_level "
                                      f"{level.value}", hint="AI Core metrics need Level1 or Level2")
    sched = v.check_callable("schedule", schedule)
    ready = v.check_callable("on_trace_ready", on_trace_ready)
    mstx_on = v.check_bool("mstx", mstx)
    if level is ProfilerLevel.LevelNone and not mstx_on:
        raise ProfilerConfigError("profiler_level", "LevelNone", "LevelNone only together with mstx=True",
                                  hint="LevelNone collects mstx ranges only")
    hs = v.check_enum_list("host_sys", [] if host_sys is None else host_sys, HostSystem)
    freq = v.check_number("host_sys_usage_freq", host_sys_usage_freq, 1, 1000)
    include = _domains("mstx_domain_include", mstx_domain_include)
    exclude = _domains("mstx_domain_exclude", mstx_domain_exclude)
    if include and exclude:
        raise ProfilerConfigError("mstx_domain_exclude", list(exclude),
                                  "empty when mstx_domain_include is set (give one of the two)")
    exp = v.check_enum_list("export_type", [ExportType.Text] if export_type is None else export_type,
                            ExportType, allow_empty=False)
    env_r, env_w, env_d = env_rank()
    rank_v = env_r if rank is None else v.check_int("rank", rank, minimum=0)
    world_v = env_w if world_size is None else v.check_int("world_size", world_size, minimum=1)
    if rank_v >= world_v:
        if world_size is not None:
            raise ProfilerConfigError("rank", rank_v, f"an integer < world_size ({world_v})")
        world_v = rank_v + 1
    devices = (env_d,) if device_id is None else _device_ids(device_id)
    dev_v = devices[0]
    default_worker = socket.gethostname() + (f"-rank{rank_v}" if world_v > 1 else "")
    worker = default_worker if worker_name is None else v.check_str(
        "worker_name", worker_name, max_len=225, pattern=r"[0-9A-Za-z_.\-]+",
        allowed="a name of letters, digits, '_', '-', '.' (at most 225 characters)")
    limit = None if storage_limit is None else v.parse_size("storage_limit", storage_limit, minimum=1 << 20)
    return ProfilerConfig(
        output_path=out,
        activities=tuple(acts),
        profiler_level=level,
        aic_metrics=metrics,
        schedule=sched,
        on_trace_ready=ready,
        profile_memory=v.check_bool("profile_memory", profile_memory),
        record_shapes=v.check_bool("record_shapes", record_shapes),
        with_stack=v.check_bool("with_stack", with_stack),
        host_sys=tuple(hs),
        host_sys_usage_freq=freq,
        mstx=mstx_on,
        mstx_domain_include=include,
        mstx_domain_exclude=exclude,
        data_simplification=v.check_bool("data_simplification", data_simplification),
        export_type=tuple(exp),
        start_profile=v.check_bool("start_profile", start_profile),
        worker_name=worker,
        rank=rank_v,
        world_size=world_v,
        device_id=dev_v,
        flush_interval=v.check_number("flush_interval", flush_interval, 0.01, 3600),
        storage_limit=limit,
        framework=v.check_str("framework", framework, max_len=16, pattern=r"[a-z0-9]+",
                              allowed="a short lowercase tag such as 'ms', 'pt', 'tf'"),
        l2_cache=v.check_bool("l2_cache", l2_cache),
        python_memory=v.check_bool("python_memory", python_memory),
        profile_rank_ids=_rank_ids(profile_rank_ids),
        device_ids=devices,
        gc_detect_threshold=None if gc_detect_threshold is None else float(
            v.check_number("gc_detect_threshold", gc_detect_threshold, 0, 3_600_000)),
    )


def _device_ids(value: Any) -> tuple[int, ...]:
    """One device id, or a list of distinct ids (``acl.prof.start`` profiles several devices at once)."""
    if isinstance(value, (list, tuple)):
        ids = tuple(v.check_int("device_id", d, minimum=0, maximum=1023) for d in value)
        if not ids or len(set(ids)) != len(ids):
            raise ProfilerConfigError("device_id", list(value), "an integer 0..1023 or a non-empty list of "
                                      "distinct ones")
        return ids
    return (v.check_int("device_id", value, minimum=0, maximum=1023),)


def _rank_ids(value: Any) -> Optional[tuple[int, ...]]:
    """None (all ranks) or a tuple of rank ids from a list or "0,2,4-7"."""
    ranks = v.parse_rank_list("profile_rank_ids", value)
    return None if ranks is None else tuple(ranks)


def _domains(name: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
        raise ProfilerConfigError(name, value, "a list of domain name strings")
    return tuple(value)


_EXPERIMENTAL_KEYS = ("profiler_level", "aic_metrics", "l2_cache", "mstx", "data_simplification", "export_type",
                      "mstx_domain_include", "mstx_domain_exclude", "host_sys")


def _experimental_values(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return dict(obj)
    out = {}
    for key in _EXPERIMENTAL_KEYS:
        for attr in (key, "_" + key):
            if hasattr(obj, attr):
                val = getattr(obj, attr)
                # mindspore's own enums carry .value strings that ours accept
                if hasattr(val, "value") and not isinstance(val, (str, bool)):
                    val = val.value
                elif isinstance(val, list):
                    val = [x.value if hasattr(x, "value") and not isinstance(x, str) else x for x in val]
                out[key] = val
                break
    if not out:
        raise ProfilerConfigError("experimental_config", obj, "an _ExperimentalConfig or a dict of its attributes")
    return out
