"""``profiling_options``: CANN GE's profiling options, the JSON string TensorFlow-on-Ascend users write
(and what a pyACL app's collection passes to CANN as ``PROFILING_OPTIONS``).

:func:`parse_profiling_options` validates the string exactly as the Ascend
stack would (allow-listed keys, allowed values, integer ``*_freq`` ranges,
``storage_limit`` format, the 2047-byte limit) but raises a
:class:`~npuprof.ProfilerConfigError` naming the key, the value and what is
allowed where the real stack aborts the process or fails at graph-engine
init. Deprecated keys (``task_trace``, ``hccl``) are accepted with a
``FutureWarning``.

The result maps onto npuprof's :func:`~npuprof.config.build_config` keyword
arguments (:meth:`ProfilingOptions.to_config_kwargs`), and a
:class:`~npuprof.config.ProfilerConfig` renders back into a profiling_options
string for the Ascend stack (:func:`render_profiling_options`).

Example::

    >>> opts = parse_profiling_options(
    ...     '{"output":"/tmp/profiling","training_trace":"on","task_trace":"on",'
    ...     '"fp_point":"","bp_point":"","aic_metrics":"PipeUtilization"}')
    ... # FutureWarning: task_trace is deprecated, use task_time
    >>> kw = opts.to_config_kwargs()
    >>> kw["output_path"], kw["profiler_level"], kw["aic_metrics"]
    ('/tmp/profiling', 'Level1', 'PipeUtilization')
"""
from __future__ import annotations

import difflib
import json
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Union

from npuprof.errors import ProfilerConfigError

#: ``char options[MSPROF_OPTIONS_DEF_LEN_MAX]`` with MSPROF_OPTIONS_DEF_LEN_MAX = 2048: 2047 bytes + NUL.
MAX_OPTIONS_BYTES = 2047

#: What TF Adapter sends when profiling is enabled with missing/empty options.
ADAPTER_DEFAULT_OPTIONS = ('{"output":"./","training_trace":"on","task_time":"on","hccl":"on",'
                           '"aicpu":"on","aic_metrics":"PipeUtilization","msproftx":"off"}')

AIC_METRICS = ("ArithmeticUtilization", "PipeUtilization", "Memory", "MemoryL0", "MemoryUB",
               "ResourceConflictRatio", "L2Cache", "MemoryAccess")
TASK_TIME_VALUES = ("on", "off", "l0", "l1", "l2", "l3")
HOST_SYS_VALUES = ("cpu", "mem", "disk", "network", "osrt", "numa")
HOST_SYS_USAGE_VALUES = ("cpu", "mem")
ON_OFF = ("on", "off")
MAX_CUSTOM_EVENTS = 8
CUSTOM_EVENT_RANGE = (0x1, 0x6E)
STORAGE_LIMIT_MB = (200, 4294967295)
MAX_OPTYPE_CHARS = 256

_CONTROL_CHARS = set("\n\f\r\b\t\v\x7f")
_OP_TYPE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STORAGE_RE = re.compile(r"([0-9]+)MB")


# -- per-key validators ------------------------------------------------------
# Each takes (key, value) and returns the normalised value or raises.

def _string(key: str, value: Any, allowed: str) -> str:
    if not isinstance(value, str):
        raise ProfilerConfigError(key, value, f"a JSON string: {allowed}")
    return value


def _choice(choices: tuple[str, ...], allow_empty: bool = True) -> Callable[[str, Any], str]:
    shown = " or ".join(repr(c) for c in choices) + (" (or \"\" for the default)" if allow_empty else "")

    def check(key: str, value: Any) -> str:
        value = _string(key, value, shown)
        if value not in choices and not (allow_empty and value == ""):
            raise ProfilerConfigError(key, value, shown)
        return value
    return check


def _freq(lo: int, hi: int) -> Callable[[str, Any], int]:
    def check(key: str, value: Any) -> int:
        # JSON integers only: the Ascend parser reads "100" as 0 and 1.5 is not an integer.
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            hint = "a quoted number is not accepted" if isinstance(value, str) else ""
            raise ProfilerConfigError(key, value, f"a JSON integer in [{lo}, {hi}]", hint=hint)
        return value
    return check


def _training_trace(key: str, value: Any) -> str:
    value = _string(key, value, "'on'")
    if value not in ("on", ""):
        raise ProfilerConfigError(key, value, "'on' (omit the key to turn it off)",
                                  hint="the graph engine rejects every other value, 'off' included")
    return value


def _output(key: str, value: Any) -> str:
    value = _string(key, value, "a directory path")
    bad = sorted(repr(c) for c in set(value) & _CONTROL_CHARS)
    if bad:
        raise ProfilerConfigError(key, value, "a directory path without control characters",
                                  hint="found " + ", ".join(bad))
    if len(value) > 4096:
        raise ProfilerConfigError(key, value[:40] + "...", "a path of at most 4096 characters")
    return value


def _storage_limit(key: str, value: Any) -> str:
    lo, hi = STORAGE_LIMIT_MB
    allowed = f"a string '<N>MB' with N in [{lo}, {hi}], e.g. \"200MB\""
    value = _string(key, value, allowed)
    m = _STORAGE_RE.fullmatch(value)
    if value == "":
        return value
    if not m or not lo <= int(m.group(1)) <= hi:
        raise ProfilerConfigError(key, value, allowed)
    return value


def _aic_metrics(key: str, value: Any) -> str:
    allowed = "one of " + ", ".join(AIC_METRICS) + ", \"\" (= PipeUtilization) or 'Custom:<event>,...' " \
              f"with at most {MAX_CUSTOM_EVENTS} events in [0x1, 0x6E]"
    value = _string(key, value, allowed)
    if value == "" or value in AIC_METRICS:
        return value
    if value.startswith("Custom:"):
        events = value[len("Custom:"):].split(",")
        if 0 < len(events) <= MAX_CUSTOM_EVENTS and all(_custom_event_ok(e) for e in events):
            return value
    hint = ""
    close = difflib.get_close_matches(value, AIC_METRICS, n=1)
    if close:
        hint = f"did you mean {close[0]!r}?"
    raise ProfilerConfigError(key, value, allowed, hint=hint)


def _custom_event_ok(text: str) -> bool:
    text = text.strip()
    try:
        num = int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        return False
    return CUSTOM_EVENT_RANGE[0] <= num <= CUSTOM_EVENT_RANGE[1]


def _comma_list(choices: tuple[str, ...]) -> Callable[[str, Any], str]:
    allowed = "a comma-separated list of " + ", ".join(choices)

    def check(key: str, value: Any) -> str:
        value = _string(key, value, allowed)
        items = [x.strip() for x in value.split(",")]
        if not value or any(x not in choices for x in items) or len(set(items)) != len(items):
            raise ProfilerConfigError(key, value, allowed + " (no repeats)")
        return value
    return check


def _optype(key: str, value: Any) -> str:
    allowed = f"a comma-separated list of op types, at most {MAX_OPTYPE_CHARS} characters"
    value = _string(key, value, allowed)
    items = [x.strip() for x in value.split(",")]
    if not value or len(value) > MAX_OPTYPE_CHARS or not all(_OP_TYPE_RE.fullmatch(x) for x in items):
        raise ProfilerConfigError(key, value, allowed)
    return value


def _any_string(key: str, value: Any) -> str:
    return _string(key, value, "an op name, or \"\" to search automatically")


def _non_empty(key: str, value: Any) -> str:
    value = _string(key, value, "a non-empty string")
    if not value:
        raise ProfilerConfigError(key, value, "a non-empty string")
    return value


_ON_OFF = _choice(ON_OFF)

#: Allow-list of keys (GEOPTION_CONFIG_VECTOR) and their validators.
KEYS: dict[str, Callable[[str, Any], Any]] = {
    "output": _output,
    "storage_limit": _storage_limit,
    "training_trace": _training_trace,
    "task_time": _choice(TASK_TIME_VALUES),
    "task_trace": _choice(TASK_TIME_VALUES),
    "ge_api": _choice(("off", "l0", "l1")),
    "hccl": _ON_OFF,
    "aicpu": _ON_OFF,
    "fp_point": _any_string,
    "bp_point": _any_string,
    "aic_metrics": _aic_metrics,
    "l2": _ON_OFF,
    "msproftx": _ON_OFF,
    "runtime_api": _ON_OFF,
    "task_memory": _ON_OFF,
    "task_tsfw": _ON_OFF,
    "task_block": _choice(("all", "on", "off")),
    "instr_profiling": _ON_OFF,
    "instr_profiling_freq": _freq(300, 30000),
    "sys_hardware_mem_freq": _freq(1, 100),
    "llc_profiling": _choice(("read", "write")),
    "sys_io_sampling_freq": _freq(1, 100),
    "sys_interconnection_freq": _freq(1, 50),
    "sys_cpu_freq": _freq(1, 50),
    "dvpp_freq": _freq(1, 100),
    "sys_lp_freq": _freq(1, 100),
    "sys_mem_serviceflow": _non_empty,
    "host_sys": _comma_list(HOST_SYS_VALUES),
    "host_sys_usage": _comma_list(HOST_SYS_USAGE_VALUES),
    "host_sys_usage_freq": _freq(1, 50),
    "optype": _optype,
}

DEPRECATED = {
    "task_trace": "task_trace is deprecated, use task_time (when both are given task_time wins)",
    "hccl": "hccl is deprecated; communication data follows task_time",
}
#: acl.json-only keys people copy into profiling_options by mistake.
ACL_JSON_ONLY = {"switch": "acl.json", "ascendcl": "acl.json", "storage_limit_mb": "nothing"}

#: Keys that instr_profiling_freq cannot be combined with (they must be absent, "" or "off").
INSTR_EXCLUDES = ("training_trace", "task_trace", "hccl", "aicpu", "fp_point", "bp_point", "aic_metrics",
                  "l2", "task_time", "runtime_api")

#: Keys only the Ascend device stack acts on; npuprof validates and keeps them.
DEVICE_ONLY_KEYS = ("fp_point", "bp_point", "hccl", "aicpu", "task_memory", "task_tsfw", "task_block",
                    "instr_profiling", "instr_profiling_freq", "sys_hardware_mem_freq", "llc_profiling",
                    "sys_io_sampling_freq", "sys_interconnection_freq", "sys_cpu_freq", "dvpp_freq",
                    "sys_lp_freq", "sys_mem_serviceflow", "optype", "ge_api")

_LEVEL_OF_TASK_TIME = {"off": "Level0", "l0": "Level0", "on": "Level1", "l1": "Level1", "l2": "Level2",
                       "l3": "Level2"}
_RANK = {"LevelNone": 0, "Level0": 1, "Level1": 2, "Level2": 3}


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _no_duplicates(pairs: list) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


@dataclass(frozen=True)
class ProfilingOptions:
    """A validated profiling_options object.

    ``options`` holds the keys exactly as given (after validation); ``text``
    the JSON string (the adapter default when none was given); ``defaulted``
    tells whether the documented defaults were applied because the input was
    empty.

    Example::

        >>> opts = parse_profiling_options('{"output":"/tmp/p","task_time":"l2"}')
        >>> opts.task_time, opts.to_config_kwargs()["profiler_level"]
        ('l2', 'Level2')
    """

    options: Mapping[str, Any]
    text: str
    defaulted: bool = False
    notes: tuple[str, ...] = field(default=())

    # -- effective values (the documented per-key defaults) ----------------
    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` as given, or ``default``; "" counts as absent."""
        val = self.options.get(key, default)
        return default if val == "" and key not in ("aic_metrics", "fp_point", "bp_point") else val

    @property
    def task_time(self) -> str:
        """Effective task_time: task_time, else task_trace, else "on"."""
        value = self.get("task_time") or self.get("task_trace") or "on"
        return value

    @property
    def aic_metrics(self) -> Optional[str]:
        """None when absent (no PMU data), PipeUtilization when "", else the value."""
        if "aic_metrics" not in self.options:
            return None
        return self.options["aic_metrics"] or "PipeUtilization"

    @property
    def training_trace(self) -> bool:
        return self.get("training_trace") == "on"

    def is_on(self, key: str) -> bool:
        val = self.get(key)
        return val not in (None, "off")

    def output_path(self) -> str:
        """The output directory: ``output``, else ``$ASCEND_WORK_PATH/profiling_data``.

        Raises ProfilerConfigError when both are empty, as GE does.
        """
        out = self.get("output")
        if out:
            return out
        work = os.environ.get("ASCEND_WORK_PATH", "")
        if work:
            return os.path.join(work, "profiling_data")
        raise ProfilerConfigError("output", self.options.get("output", ""),
                                  "a directory path (or set ASCEND_WORK_PATH)",
                                  hint="Result path and ASCEND_WORK_PATH env is empty")

    # -- mapping onto npuprof ----------------------------------------------
    def to_config_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`npuprof.config.build_config` / ``Profiler``.

        task_time/task_trace pick the level (off/l0 -> Level0, on/l1 -> Level1,
        l2/l3 -> Level2; off with msproftx on -> LevelNone; runtime_api or
        ge_api raise it to Level2), aic_metrics
        the AI Core metrics (Custom:... keeps PipeUtilization in the config and
        the event list in ``extra``), l2 -> l2_cache, msproftx -> mstx,
        host_sys/host_sys_usage -> host_sys (cpu, mem, disk, network; osrt and
        numa exist only in msprof), host_sys_usage_freq, storage_limit.
        """
        level = _LEVEL_OF_TASK_TIME[self.task_time]
        if self.task_time == "off" and self.is_on("msproftx"):
            level = "LevelNone"  # nothing but msproftx ranges: npuprof's LevelNone
        if self.is_on("runtime_api") or self.get("ge_api") in ("l0", "l1"):
            level = "Level2"
        kw: dict[str, Any] = {"output_path": "", "profiler_level": level, "framework": "tf"}
        metrics = self.aic_metrics
        if metrics is not None:
            if _RANK[level] < _RANK["Level1"]:
                raise ProfilerConfigError("aic_metrics", self.options["aic_metrics"],
                                          "absent when task_time is 'off' or 'l0'",
                                          hint="AI Core metrics need task_time on, l1 or l2")
            kw["aic_metrics"] = "PipeUtilization" if metrics.startswith("Custom:") else metrics
        elif _RANK[level] >= _RANK["Level1"]:
            kw["aic_metrics"] = "None"  # key absent -> no PMU collection
        if self.is_on("l2"):
            kw["l2_cache"] = True
        if self.is_on("msproftx"):
            kw["mstx"] = True
        host: list[str] = []
        for key in ("host_sys", "host_sys_usage"):
            for item in (self.get(key) or "").split(","):
                item = item.strip()
                if item in ("cpu", "mem", "disk", "network") and item not in host:
                    host.append(item)
        if host:
            kw["host_sys"] = host
        if self.get("host_sys_usage_freq") is not None:
            kw["host_sys_usage_freq"] = self.get("host_sys_usage_freq")
        if self.get("storage_limit"):
            kw["storage_limit"] = self.get("storage_limit")
        kw["output_path"] = self.output_path()  # last: per-key errors are more useful than a missing output
        return kw

    def extra(self) -> tuple[tuple[str, Any], ...]:
        """What the config keeps beyond its fields: the original JSON, for rendering back."""
        return (("profiling_options", self.text),)

    def to_config(self, **overrides: Any) -> Any:
        """Build the npuprof :class:`~npuprof.config.ProfilerConfig` (``overrides`` win).

        Example::

            cfg = parse_profiling_options('{"output":"/tmp/p"}').to_config(schedule=my_schedule)
        """
        from npuprof.config import build_config

        kw = self.to_config_kwargs()
        kw.update(overrides)
        cfg = build_config(**kw)
        return cfg.replace(extra=tuple(cfg.extra) + self.extra())


def parse_profiling_options(value: Union[str, bytes, Mapping[str, Any], None],
                            param: str = "profiling_options") -> ProfilingOptions:
    """Validate a profiling_options JSON string (or bytes, or an already-parsed dict).

    ``None`` or ``""`` gives the TF Adapter default
    (:data:`ADAPTER_DEFAULT_OPTIONS`). Errors raise
    :class:`~npuprof.ProfilerConfigError` whose ``param`` is the offending key
    (or ``param`` itself for a malformed string).

    Example::

        >>> parse_profiling_options('{"task_time":"on","sys_cpu_freq":"10"}')
        Traceback (most recent call last):
        ...
        npuprof.errors.ProfilerConfigError: invalid sys_cpu_freq='10': expected a JSON integer in [1, 50] (a quoted number is not accepted)
    """
    defaulted = False
    if value is None or (isinstance(value, (str, bytes)) and not value.strip()):
        value, defaulted = ADAPTER_DEFAULT_OPTIONS, True
    if isinstance(value, Mapping):
        options = dict(value)
        try:
            text = json.dumps(options, separators=(",", ":"))
        except (TypeError, ValueError):
            raise ProfilerConfigError(param, value, "a JSON-serialisable dict of profiling options") from None
    else:
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise ProfilerConfigError(param, value[:60], "UTF-8 encoded JSON text") from None
        if not isinstance(value, str):
            raise ProfilerConfigError(param, value, "a JSON object string such as '{\"output\":\"/tmp/prof\"}'")
        text = value
        size = len(text.encode("utf-8"))
        if size > MAX_OPTIONS_BYTES:
            raise ProfilerConfigError(param, text[:60] + "...", f"at most {MAX_OPTIONS_BYTES} bytes of JSON",
                                      hint=f"got {size} bytes; the Ascend stack truncates longer strings")
        try:
            options = json.loads(text, object_pairs_hook=_no_duplicates)
        except _DuplicateKey as dup:
            raise ProfilerConfigError(dup.key, text, "each key at most once") from None
        except ValueError as exc:
            raise ProfilerConfigError(param, text, "valid JSON text", hint=str(exc)) from None
        if not isinstance(options, dict):
            raise ProfilerConfigError(param, text, "a JSON object ({...})")
    if len(text.encode("utf-8")) > MAX_OPTIONS_BYTES:
        raise ProfilerConfigError(param, text[:60] + "...", f"at most {MAX_OPTIONS_BYTES} bytes of JSON")

    notes: list[str] = []
    for key, val in options.items():
        check = KEYS.get(key)
        if check is None:
            raise _unknown_key(key, val)
        options[key] = check(key, val)
        if key in DEPRECATED:
            notes.append(DEPRECATED[key])
    _check_combinations(options, notes)
    result = ProfilingOptions(options=options, text=text, defaulted=defaulted, notes=tuple(notes))
    if not defaulted:
        for note in notes:
            category = FutureWarning if note in DEPRECATED.values() else UserWarning
            warnings.warn(note, category, stacklevel=2)
    result.to_config_kwargs()  # cross-key checks (level vs aic_metrics, output) happen here too
    return result


def _unknown_key(key: str, value: Any) -> ProfilerConfigError:
    if key in ACL_JSON_ONLY:
        return ProfilerConfigError(key, value, "a profiling_options key (" + ", ".join(KEYS) + ")",
                                   hint=f"{key!r} belongs in acl.json, not in profiling_options")
    close = difflib.get_close_matches(str(key), list(KEYS), n=1)
    hint = f"did you mean {close[0]!r}?" if close else "unknown key"
    return ProfilerConfigError(key, value, "a profiling_options key (" + ", ".join(KEYS) + ")", hint=hint)


def _check_combinations(options: dict, notes: list) -> None:
    freq = options.get("instr_profiling_freq")
    if freq is not None:
        for other in INSTR_EXCLUDES:
            if options.get(other, "") not in ("", "off"):
                raise ProfilerConfigError("instr_profiling_freq", freq,
                                          f"no instr_profiling_freq together with {other}={options[other]!r}",
                                          hint="instruction profiling excludes " + ", ".join(INSTR_EXCLUDES))
    if "task_time" in options and "task_trace" in options and options["task_time"] != options["task_trace"]:
        notes.append(f"task_trace={options['task_trace']!r} is ignored: task_time={options['task_time']!r} wins")
    if options.get("llc_profiling") and "sys_hardware_mem_freq" not in options:
        notes.append("llc_profiling has no effect without sys_hardware_mem_freq")
    if options.get("training_trace") != "on" and (options.get("fp_point") or options.get("bp_point")):
        notes.append("fp_point/bp_point are used only with \"training_trace\":\"on\"")


# -- npuprof config -> profiling_options --------------------------------------

_TASK_TIME_OF_LEVEL = {"LevelNone": "off", "Level0": "l0", "Level1": "l1", "Level2": "l2"}


def render_profiling_options(config: Any, output: Optional[str] = None) -> str:
    """Render an npuprof :class:`~npuprof.config.ProfilerConfig` as a profiling_options string.

    Keys the config does not model (fp_point, device sampling frequencies,
    ...) come from the profiling_options the config was built from, when it
    was. Raises ProfilerConfigError for a setting profiling_options cannot
    express (e.g. host_sys_usage_freq 100, storage_limit not in whole MB).

    Example::

        >>> from npuprof.config import build_config
        >>> render_profiling_options(build_config(output_path="/tmp/p", profiler_level="Level1"))
        '{"output":"/tmp/p","training_trace":"on","task_time":"l1","aic_metrics":"PipeUtilization"}'
    """
    level = str(getattr(config.profiler_level, "value", config.profiler_level))
    out: dict[str, Any] = {"output": output if output is not None else str(config.output_path),
                           "training_trace": "on", "task_time": _TASK_TIME_OF_LEVEL[level]}
    metrics = str(getattr(config.aic_metrics, "value", config.aic_metrics))
    if metrics not in ("None", "AiCoreNone"):
        out["aic_metrics"] = metrics
    if level == "Level2":
        out["runtime_api"] = "on"
        out["aicpu"] = "on"
    if config.l2_cache:
        out["l2"] = "on"
    if config.mstx:
        out["msproftx"] = "on"
    host = [str(getattr(h, "value", h)) for h in config.host_sys]
    if host:
        out["host_sys"] = ",".join(host)
        freq = config.host_sys_usage_freq
        if freq != int(freq) or not 1 <= freq <= 50:
            raise ProfilerConfigError("host_sys_usage_freq", freq, "an integer in [1, 50] for profiling_options")
        if int(freq) != 50:
            out["host_sys_usage_freq"] = int(freq)
    if config.storage_limit is not None:
        mb, rest = divmod(config.storage_limit, 1 << 20)
        if rest or not STORAGE_LIMIT_MB[0] <= mb <= STORAGE_LIMIT_MB[1]:
            raise ProfilerConfigError("storage_limit", config.storage_limit,
                                      "whole MB in [200, 4294967295] for profiling_options")
        out["storage_limit"] = f"{mb}MB"
    original = dict(getattr(config, "extra", ()) or ()).get("profiling_options")
    if original:
        source = json.loads(original)
        for key in DEVICE_ONLY_KEYS:
            if key in source:
                out[key] = source[key]
        if source.get("training_trace", "") != "on":
            out.pop("training_trace")
            out.pop("fp_point", None)
            out.pop("bp_point", None)
        if "aic_metrics" in source and str(source["aic_metrics"]).startswith("Custom:"):
            out["aic_metrics"] = source["aic_metrics"]
        for key in ("host_sys", "host_sys_usage", "host_sys_usage_freq"):
            if key in source:
                out[key] = source[key]
        if "task_time" not in source and "task_trace" in source:
            pass  # task_time rendered from the level carries the same meaning
    text = json.dumps(out, separators=(",", ":"))
    if len(text.encode("utf-8")) > MAX_OPTIONS_BYTES:
        raise ProfilerConfigError("profiling_options", text[:60] + "...", f"at most {MAX_OPTIONS_BYTES} bytes")
    return text
