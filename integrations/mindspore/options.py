"""Keyword parity with ``mindspore.profiler``: its names and values, strict checks.

:func:`from_mindspore_kwargs` takes the keyword arguments a user passes to
``mindspore.profiler.profile`` / ``mindspore.Profiler`` (MindSpore's own enum
members, strings, ``_ExperimentalConfig``, a MindSpore ``schedule``) and
returns arguments for :class:`npuprof.Profiler`. Where MindSpore would warn
and reset a value, this raises :class:`~npuprof.ProfilerConfigError`:

* deprecated or removed keywords (``profile_communication``, ``op_time``,
  ``timeline_limit`` ...) name their replacement;
* ``record_shapes=True`` without CPU activity, ``data_process=True`` with a
  schedule (MindSpore silently turns both off);
* ``tensorboard_trace_handler`` from MindSpore (it reports a bad directory
  by returning None and writes to a process-wide setting);
* NPU-only switches (``pcie``, ``hbm_ddr``, ``sys_io`` ...) set on a machine
  whose MindSpore device is not Ascend;
* any value the core rejects (unknown activity, ``Level3``, ``AiCoreNone``
  with metrics at Level0 ...), as everywhere in npuprof.

Example::

    >>> from mindspore.profiler import ProfilerLevel, ProfilerActivity   # doctest: +SKIP
    >>> kw = from_mindspore_kwargs(activities=[ProfilerActivity.CPU],     # doctest: +SKIP
    ...                            profiler_level=ProfilerLevel.Level1)
    >>> kw["activities"], kw["profiler_level"]                           # doctest: +SKIP
    (['CPU'], 'Level1')
"""
from __future__ import annotations

import enum
import sys
from typing import Any, Optional

from npuprof.errors import ProfilerConfigError
from npuprof.schedule import Schedule, schedule as make_schedule
from npuprof.validate import check_bool

# MindSpore-only switches that drive its NPU profiler; forwarded to the backend.
NPU_ONLY_OPTIONS = ("data_process", "parallel_strategy", "hbm_ddr", "pcie", "sys_io", "sys_interconnection")
MINDSPORE_ONLY_OPTIONS = NPU_ONLY_OPTIONS + ("sync_enable",)
_OPTION_DEFAULTS = {"sync_enable": True}

# Keywords MindSpore deprecated or removed, and what to use instead.
RETIRED = {
    "profile_communication": "communication ops are collected at profiler_level Level0 and above; "
                             "use profiler_level='Level1' for small communication ops",
    "op_time": "operator timing is always collected",
    "profile_framework": "host framework data is always collected with the CPU activity",
    "host_stack": "use with_stack=True",
    "timeline_limit": "use storage_limit (e.g. '500MB') to bound the raw data",
    "rank_id": "use rank=<int> (or the RANK_ID environment variable)",
    "analyze_only": "use npuprof analyse <dir> / Profiler.offline_analyse(dir)",
    "env_enable": "not supported; construct the Profiler or the callback in code",
}

_EXPERIMENTAL_ATTRS = ("profiler_level", "aic_metrics", "l2_cache", "mstx", "data_simplification", "export_type",
                       "mstx_domain_include", "mstx_domain_exclude", "sys_io", "sys_interconnection", "host_sys")


def plain(value: Any) -> Any:
    """MindSpore enum members (and lists of them) -> their string values.

    Example::

        >>> from npuprof.enums import ProfilerLevel
        >>> plain([ProfilerLevel.Level1, "CPU"])
        ['Level1', 'CPU']
    """
    if isinstance(value, enum.Enum):
        return value.value if isinstance(value.value, str) else value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    return value


def experimental_to_dict(config: Any) -> dict[str, Any]:
    """A MindSpore ``_ExperimentalConfig`` (or a dict of its keywords) -> plain dict.

    Raises :class:`ProfilerConfigError` for anything else, or for a key
    ``_ExperimentalConfig`` does not have.
    """
    if isinstance(config, dict):
        unknown = sorted(set(config) - set(_EXPERIMENTAL_ATTRS))
        if unknown:
            raise ProfilerConfigError("experimental_config", unknown[0],
                                      "keys of _ExperimentalConfig: " + ", ".join(_EXPERIMENTAL_ATTRS))
        return {k: plain(v) for k, v in config.items()}
    out = {}
    for attr in _EXPERIMENTAL_ATTRS:
        for name in (attr, "_" + attr):
            if hasattr(config, name):
                out[attr] = plain(getattr(config, name))
                break
    if not out:
        raise ProfilerConfigError("experimental_config", config,
                                  "a mindspore.profiler._ExperimentalConfig or a dict of its keywords")
    return out


def _convert_schedule(value: Any) -> Any:
    if value is None or isinstance(value, Schedule):
        return value
    cls = type(value)
    if cls.__name__ == "Schedule" and cls.__module__.startswith("mindspore.") and hasattr(value, "to_dict"):
        # MindSpore has already reset invalid values with a warning; rebuild ours
        # from what it kept so the transition rules are npuprof's.
        return make_schedule(**value.to_dict())
    return value


def _is_mindspore_trace_handler(fn: Any) -> bool:
    return getattr(fn, "__module__", "").startswith("mindspore.") and \
        "tensorboard_trace_handler" in getattr(fn, "__qualname__", "")


def mindspore_device_target() -> Optional[str]:
    """MindSpore's device target ("CPU", "Ascend", "GPU"), or None when MindSpore is not imported."""
    ms = sys.modules.get("mindspore")
    if ms is None:
        return None
    try:
        return str(ms.get_context("device_target"))
    except Exception:
        return None


def from_mindspore_kwargs(**kwargs: Any) -> dict[str, Any]:
    """Translate ``mindspore.profiler`` keyword arguments into npuprof ones.

    The MindSpore-only switches (``data_process``, ``parallel_strategy``,
    ``hbm_ddr``, ``pcie``, ``sys_io``, ``sys_interconnection``,
    ``sync_enable``) are returned under ``"mindspore_options"``; pass the
    result to :func:`make_profiler`, which hands them to the MindSpore backend.
    """
    kw = dict(kwargs)
    for key, hint in RETIRED.items():
        if key in kw:
            raise ProfilerConfigError(key, kw[key], "no value: MindSpore deprecated or removed this keyword",
                                      hint=hint)
    ms_opts: dict[str, Any] = {}
    exp = kw.pop("experimental_config", None)
    if exp is not None:
        grouped = experimental_to_dict(exp)
        for key, val in grouped.items():
            if key in ("sys_io", "sys_interconnection"):
                ms_opts[key] = val
            elif key not in kw and val is not None:
                kw[key] = val
    for key in MINDSPORE_ONLY_OPTIONS:
        if key in kw:
            ms_opts[key] = kw.pop(key)
    for key, val in ms_opts.items():
        check_bool(key, val)

    out = {k: plain(v) for k, v in kw.items()}
    if "schedule" in out:
        out["schedule"] = _convert_schedule(out["schedule"])
    ready = out.get("on_trace_ready")
    if ready is not None and _is_mindspore_trace_handler(ready):
        raise ProfilerConfigError("on_trace_ready", ready, "npuprof.tensorboard_trace_handler(dir) or a callable "
                                  "taking the profiler",
                                  hint="mindspore.profiler.tensorboard_trace_handler analyses with MindSpore and "
                                       "stores its directory in a process-wide setting")

    activities = out.get("activities")
    if out.get("record_shapes") is True and activities is not None:
        acts = [activities] if isinstance(activities, str) else list(activities)
        if "CPU" not in acts:
            raise ProfilerConfigError("record_shapes", True, "False unless activities include CPU",
                                      hint="shapes are recorded by the CPU (host) collection")
    if ms_opts.get("data_process") and out.get("schedule") is not None:
        raise ProfilerConfigError("data_process", True, "False when a schedule is given",
                                  hint="MindSpore collects dataset data only for unscheduled runs")
    wanted = [k for k in NPU_ONLY_OPTIONS if ms_opts.get(k)]
    if wanted:
        target = mindspore_device_target()
        if target != "Ascend":
            raise ProfilerConfigError(wanted[0], True, "False unless MindSpore runs on an Ascend device",
                                      hint=f"device_target is {target or 'unknown (mindspore not imported)'}; "
                                           "this data comes from the NPU")
    if ms_opts:
        defaults_only = all(ms_opts[k] == _OPTION_DEFAULTS.get(k, False) for k in ms_opts)
        if not defaults_only:
            out["mindspore_options"] = ms_opts
    return out


def make_profiler(**kwargs: Any) -> Any:
    """An :class:`npuprof.Profiler` built from ``mindspore.profiler``-style keywords.

    Same keywords as ``mindspore.profiler.profile`` plus ``output_path`` and
    everything :class:`npuprof.Profiler` takes; bad values raise
    :class:`~npuprof.ProfilerConfigError` before anything starts.

    Example::

        from mindspore.profiler import ProfilerActivity, _ExperimentalConfig, ProfilerLevel
        from npuprof.integrations.mindspore import profile
        import npuprof

        with profile(activities=[ProfilerActivity.CPU],
                     schedule=npuprof.schedule(wait=0, warmup=1, active=2, repeat=1),
                     experimental_config=_ExperimentalConfig(profiler_level=ProfilerLevel.Level0),
                     output_path="./prof") as prof:
            for x, y in data:
                train_step(x, y)
                prof.step()
    """
    import npuprof

    kw = from_mindspore_kwargs(**kwargs)
    ms_opts = kw.pop("mindspore_options", None)
    start = kw.pop("start_profile", True)
    prof = npuprof.Profiler(start_profile=False, **kw)
    if ms_opts:
        attach_mindspore_options(prof, ms_opts)
    if start:
        prof.start()
    return prof


def attach_mindspore_options(prof: Any, options: dict[str, Any]) -> None:
    """Record MindSpore-only switches in the profiler's config for the backend."""
    extra = tuple((k, v) for k, v in prof.config.extra if k != "mindspore") + (("mindspore", dict(options)),)
    prof.config = prof.config.replace(extra=extra)


def mindspore_options(config: Any) -> dict[str, Any]:
    """The MindSpore-only switches stored by :func:`attach_mindspore_options`."""
    for key, val in getattr(config, "extra", ()) or ():
        if key == "mindspore":
            return dict(val)
    return {}
