"""A dynamic-profiling config file -> one validated :class:`CaptureRequest`.

Two JSON dialects are read, each as its own tool writes it:

* **npuprof / torch_npu** (``dynamic_profile.init``, the Keras callback, the
  zero-code hook): torch_npu's ``profiler_config.json`` fields (``start_step``
  absolute and 0-based, ``warmup``, ``active``, ``prof_dir``, ``analyse``,
  ``async_mode``, ``is_rank`` + ``rank_list``, ``metadata``,
  ``experimental_config`` ...) plus any :class:`npuprof.Profiler` keyword
  (``host_sys``, ``storage_limit`` ...) at the top level.
* **MindSpore** (``DynamicProfilerMonitor``): ``start_step``/``stop_step``
  (1-based, -1 = no capture), the int and string forms of ``profiler_level``,
  ``activities``, ``export_type``, ``aic_metrics``, ``analyse_mode`` ...

Where torch_npu and MindSpore reset a bad value to a default with a log line,
parsing raises :class:`~npuprof.ProfilerConfigError` naming the field, the
value and what is allowed: the caller keeps the last valid request.

Example::

    >>> req = parse_config_text('{"start_step": 10, "active": 2, "warmup": 1}', dialect="npuprof")
    >>> req.start_step, req.warmup, req.active, req.recorded_steps(10)
    (10, 1, 2, (11, 12))
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional

from ..config import DEFAULT_OUTPUT, build_config
from ..errors import ProfilerConfigError
from ..validate import check_bool, check_int, check_output_path

CONFIG_NAME = "profiler_config.json"
DIALECTS = ("npuprof", "mindspore")

# torch_npu's template, with npuprof's defaults (prof_dir) and the fields npuprof reads.
TEMPLATE: dict[str, Any] = {
    "activities": ["CPU", "NPU"],
    "prof_dir": DEFAULT_OUTPUT,
    "analyse": False,
    "async_mode": False,
    "record_shapes": False,
    "profile_memory": False,
    "with_stack": False,
    "with_flops": False,
    "with_modules": False,
    "active": 1,
    "warmup": 0,
    "start_step": 0,
    "is_rank": False,
    "rank_list": [],
    "metadata": {},
    "experimental_config": {
        "profiler_level": "Level0", "aic_metrics": "AiCoreNone", "l2_cache": False, "op_attr": False,
        "gc_detect_threshold": None, "data_simplification": True, "record_op_args": False,
        "export_type": ["text"], "msprof_tx": False, "mstx_domain_include": [], "mstx_domain_exclude": [],
        "host_sys": [], "sys_io": False, "sys_interconnection": False,
    },
}

# Profiler keywords a config may carry at the top level (the rest are the trigger's own fields or
# set by the trigger itself: output_path from prof_dir, the schedule from start_step/warmup/active).
_PROFILER_KEYS = ("activities", "profiler_level", "aic_metrics", "profile_memory", "record_shapes", "with_stack",
                  "host_sys", "host_sys_usage_freq", "mstx", "mstx_domain_include", "mstx_domain_exclude",
                  "data_simplification", "export_type", "worker_name", "flush_interval", "storage_limit", "l2_cache")
_TORCH_TRIGGER_KEYS = ("prof_dir", "analyse", "async_mode", "active", "warmup", "start_step", "is_rank",
                       "rank_list", "metadata", "experimental_config")
# torch-only switches npuprof has no collector for: accepted at their "off" value (the template's),
# refused otherwise, so a config written for torch_npu still loads and nothing is silently ignored.
_TORCH_ONLY_OFF = {"with_flops": False, "with_modules": False}
_TORCH_EXPERIMENTAL_ONLY_OFF = {"op_attr": False, "gc_detect_threshold": None, "record_op_args": False,
                                "sys_io": False, "sys_interconnection": False}
_TORCH_EXPERIMENTAL_RENAMED = {"msprof_tx": "mstx"}
_TORCH_LEVELS = {"Level_none": "LevelNone"}

_MS_KEYS = ("start_step", "stop_step", "profiler_level", "activities", "export_type", "aic_metrics",
            "profile_memory", "mstx", "analyse", "analyse_mode", "with_stack", "data_simplification", "l2_cache",
            "record_shapes", "prof_path", "mstx_domain_include", "mstx_domain_exclude", "host_sys",
            "parallel_strategy", "sys_io", "sys_interconnection", "is_valid")
# MindSpore's own template (what its monitor writes when the file is absent).
MINDSPORE_TEMPLATE: dict[str, Any] = {
    "start_step": -1, "stop_step": -1, "aic_metrics": "AiCoreNone", "profiler_level": "Level0",
    "analyse_mode": -1, "activities": ["CPU", "NPU"], "export_type": ["text"], "profile_memory": False,
    "mstx": False, "parallel_strategy": False, "with_stack": False, "data_simplification": True,
    "l2_cache": False, "analyse": True, "record_shapes": False, "prof_path": "./", "mstx_domain_include": [],
    "mstx_domain_exclude": [], "host_sys": [], "sys_io": False, "sys_interconnection": False,
}
_MS_ONLY_OFF = {"parallel_strategy": False, "sys_io": False, "sys_interconnection": False}
_MS_INT_LEVEL = {-1: "LevelNone", 0: "Level0", 1: "Level1", 2: "Level2"}
_MS_INT_ACTIVITIES = {0: ["CPU", "NPU"], 1: ["CPU"], 2: ["NPU"]}
_MS_INT_EXPORT = {1: ["db"], 2: ["text", "db"]}
_MS_INT_AIC = {0: "PipeUtilization", 1: "ArithmeticUtilization", 2: "Memory", 3: "MemoryL0", 4: "MemoryUB",
               5: "ResourceConflictRatio", 6: "L2Cache", 7: "MemoryAccess"}
_MS_ANALYSE_MODE = {-1: None, 0: False, 1: True}   # -1 = not set, 0 sync, 1 async


@dataclasses.dataclass(frozen=True)
class CaptureRequest:
    """One capture asked for by a config file (validated; immutable).

    ``start_step`` is the first step of the capture (warm-up included) in the
    caller's step numbering; ``None`` = the next step. ``ranks`` limits the
    ranks that capture (``None`` = all). ``profiler_kwargs`` are validated
    :class:`npuprof.Profiler` keywords. ``run_subdir`` (MindSpore's
    ``rank{rank}_start{a}_stop{b}``) is a folder made under ``prof_dir``.
    ``enabled`` is False for a MindSpore file with ``start_step: -1``.
    """

    dialect: str
    start_step: Optional[int]
    warmup: int
    active: int
    prof_dir: Path
    analyse: bool
    async_mode: bool
    ranks: Optional[frozenset[int]]
    metadata: tuple[tuple[str, Any], ...]
    profiler_kwargs: tuple[tuple[str, Any], ...]
    run_subdir: Optional[str]
    enabled: bool
    config: Mapping[str, Any]
    digest: str

    def recorded_steps(self, start: int) -> tuple[int, ...]:
        """The steps recorded by a capture beginning at step ``start`` (after warm-up)."""
        return tuple(range(start + self.warmup, start + self.warmup + self.active))

    def applies_to(self, rank: int) -> bool:
        return self.ranks is None or rank in self.ranks

    def output_dir(self, rank: int, start: int) -> Path:
        if self.run_subdir is None:
            return self.prof_dir
        last = start + self.warmup + self.active - 1
        return self.prof_dir / self.run_subdir.format(rank=rank, start=start, stop=last)


def parse_config_text(text: str, dialect: str = "npuprof", base_dir: Optional[Path] = None,
                      default_prof_dir: Optional[Path] = None) -> CaptureRequest:
    """Parse and validate a config file's text; raises ProfilerConfigError.

    Relative ``prof_dir``/``prof_path`` are taken from ``base_dir`` (default:
    the current directory, as torch_npu and MindSpore do). MindSpore's
    ``prof_path`` left at ``"./"`` means ``default_prof_dir`` (the monitor's
    ``output_path``).
    """
    if dialect not in DIALECTS:
        raise ProfilerConfigError("dialect", dialect, "one of " + ", ".join(DIALECTS))
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ProfilerConfigError(CONFIG_NAME, text[:60], f"a JSON object ({e})") from None
    if not isinstance(data, dict):
        raise ProfilerConfigError(CONFIG_NAME, type(data).__name__, "a JSON object of fields")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    base = Path.cwd() if base_dir is None else base_dir
    if dialect == "mindspore":
        return _parse_mindspore(data, digest, base, default_prof_dir)
    return _parse_npuprof(data, digest, base)


def _reject_unknown(data: Mapping[str, Any], known: tuple, where: str) -> None:
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ProfilerConfigError(f"{where}{unknown[0]}", data[unknown[0]],
                                  "a known field: " + ", ".join(sorted(known)))


def _only_off(data: Mapping[str, Any], off: Mapping[str, Any], where: str) -> None:
    for key, value in off.items():
        if key in data and data[key] != value and not (value is False and data[key] in (None, 0)):
            raise ProfilerConfigError(f"{where}{key}", data[key], f"{json.dumps(value)} (npuprof does not "
                                      "collect this on any backend; remove the field or turn it off)")


def _parse_npuprof(data: dict, digest: str, base: Path) -> CaptureRequest:
    _reject_unknown(data, _PROFILER_KEYS + _TORCH_TRIGGER_KEYS + tuple(_TORCH_ONLY_OFF), "")
    _only_off(data, _TORCH_ONLY_OFF, "")
    kwargs = {k: data[k] for k in _PROFILER_KEYS if k in data}
    exp = data.get("experimental_config") or {}
    if not isinstance(exp, dict):
        raise ProfilerConfigError("experimental_config", exp, "a JSON object")
    exp_known = tuple(TEMPLATE["experimental_config"])
    _reject_unknown(exp, exp_known, "experimental_config.")
    _only_off(exp, _TORCH_EXPERIMENTAL_ONLY_OFF, "experimental_config.")
    for key, value in exp.items():
        if key in _TORCH_EXPERIMENTAL_ONLY_OFF:
            continue
        name: str = _TORCH_EXPERIMENTAL_RENAMED.get(key) or key
        if name == "profiler_level":
            value = _TORCH_LEVELS.get(value, value)
        if name in kwargs and kwargs[name] != value:
            if value == TEMPLATE["experimental_config"].get(key):
                continue     # the template's default under experimental_config: the top-level value wins
            raise ProfilerConfigError(f"experimental_config.{key}", value,
                                      f"the top-level value {kwargs[name]!r} (given twice, differently)")
        kwargs[name] = value
    if kwargs.get("host_sys") == []:
        del kwargs["host_sys"]
    start = data.get("start_step")
    start_step = None if start is None else check_int("start_step", start, minimum=0)
    ranks = None
    if check_bool("is_rank", data.get("is_rank", False)):
        ranks = _rank_set("rank_list", data.get("rank_list", []))
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ProfilerConfigError("metadata", metadata, "a JSON object of key: value")
    prof_dir = _prof_dir("prof_dir", data.get("prof_dir", DEFAULT_OUTPUT), base)
    profiler_kwargs = _validated_profiler_kwargs(kwargs, prof_dir)
    return CaptureRequest(
        dialect="npuprof", start_step=start_step,
        warmup=check_int("warmup", data.get("warmup", 0), minimum=0),
        active=check_int("active", data.get("active", 1), minimum=1),
        prof_dir=prof_dir, analyse=check_bool("analyse", data.get("analyse", False)),
        async_mode=check_bool("async_mode", data.get("async_mode", False)), ranks=ranks,
        metadata=tuple(sorted(metadata.items())), profiler_kwargs=profiler_kwargs, run_subdir=None,
        enabled=True, config=data, digest=digest)


def _parse_mindspore(data: dict, digest: str, base: Path, default_prof_dir: Optional[Path]) -> CaptureRequest:
    _reject_unknown(data, _MS_KEYS, "")
    _only_off(data, _MS_ONLY_OFF, "")
    for key in ("start_step", "stop_step"):
        if key not in data:
            raise ProfilerConfigError(key, None, "an integer >= 1 (1-based training step), or -1 for no capture")
    start = check_int("start_step", data["start_step"], minimum=-1)
    stop = check_int("stop_step", data["stop_step"], minimum=-1)
    enabled = start != -1 and stop != -1
    if enabled:
        if start < 1:
            raise ProfilerConfigError("start_step", start, "an integer >= 1 (steps count from 1), or -1")
        if stop < start:
            raise ProfilerConfigError("stop_step", stop, f"an integer >= start_step ({start})")
    kwargs: dict[str, Any] = {}
    for key in ("profile_memory", "mstx", "with_stack", "data_simplification", "l2_cache", "record_shapes",
                "mstx_domain_include", "mstx_domain_exclude", "host_sys"):
        if key in data and data[key] is not None:
            kwargs[key] = data[key]
    if kwargs.get("host_sys") == []:
        del kwargs["host_sys"]
    kwargs["profiler_level"] = _int_form("profiler_level", data.get("profiler_level", "Level0"), _MS_INT_LEVEL)
    kwargs["activities"] = _int_form("activities", data.get("activities", ["CPU", "NPU"]), _MS_INT_ACTIVITIES)
    kwargs["export_type"] = _int_form("export_type", data.get("export_type", ["text"]), _MS_INT_EXPORT)
    aic = data.get("aic_metrics", "AiCoreNone")
    if not (aic == "AiCoreNone" or aic == -1):
        kwargs["aic_metrics"] = _int_form("aic_metrics", aic, _MS_INT_AIC)
    mode = check_int("analyse_mode", data.get("analyse_mode", -1), minimum=-1, maximum=1)
    analyse = check_bool("analyse", data.get("analyse", mode != -1))
    prof_path = data.get("prof_path") or "./"
    if prof_path == "./" and default_prof_dir is not None:
        prof_path = str(default_prof_dir)
    prof_dir = _prof_dir("prof_path", prof_path, base)
    profiler_kwargs = _validated_profiler_kwargs(kwargs, prof_dir)
    return CaptureRequest(
        dialect="mindspore", start_step=start if enabled else None, warmup=0,
        active=stop - start + 1 if enabled else 1, prof_dir=prof_dir, analyse=analyse,
        async_mode=bool(_MS_ANALYSE_MODE[mode]), ranks=None, metadata=(), profiler_kwargs=profiler_kwargs,
        run_subdir="rank{rank}_start{start}_stop{stop}", enabled=enabled, config=data, digest=digest)


def _int_form(name: str, value: Any, table: Mapping[int, Any]) -> Any:
    """MindSpore's legacy int form of a field -> its string/list form."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value not in table:
            raise ProfilerConfigError(name, value, "one of " + ", ".join(f"{k} ({v})" for k, v in table.items())
                                      + ", or the string/list form")
        return table[value]
    return value


def _rank_set(name: str, value: Any) -> frozenset[int]:
    if not isinstance(value, list) or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 0
                                              for r in value):
        raise ProfilerConfigError(name, value, "a list of rank ids (integers >= 0)")
    return frozenset(value)


def _prof_dir(name: str, value: Any, base: Path) -> Path:
    if not isinstance(value, str) or not value:
        raise ProfilerConfigError(name, value, "a directory path (a non-empty string)")
    path = Path(os.path.expanduser(value))
    return check_output_path(name, path if path.is_absolute() else base / path)


def _validated_profiler_kwargs(kwargs: dict, prof_dir: Path) -> tuple[tuple[str, Any], ...]:
    """Validate as ``Profiler(...)`` does, so a bad value is refused when the file is read."""
    build_config(output_path=prof_dir, start_profile=False, **kwargs)
    return tuple(sorted(kwargs.items()))


def check_writable(name: str, directory: Path) -> None:
    """Raise ProfilerConfigError unless ``directory`` can be created and written."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as e:
        raise ProfilerConfigError(name, str(directory), f"a directory this process can write ({e.strerror})") \
            from None
