"""acl.json ``"profiler"`` section: read, validate, write, and who wins.

``acl.init(path)`` hands the ``profiler`` object of acl.json to the CANN
collector. This module checks that object key by key (CANN keys, and the SVP
SS928/SS927 variant used by msprof.pyc), writes it without touching the
file's other sections, builds it from an npuprof config, and reports the
precedence between msprof's command line, acl.json, the environment and the
acl.prof API instead of letting the API fail with a bare 100042.

Example::

    >>> section = validate_profiler_section({"switch": "on", "output": "/tmp/prof",
    ...                                       "aic_metrics": "PipeUtilization"})
    >>> section["switch"], section["aic_metrics"]
    ('on', 'PipeUtilization')
    >>> validate_profiler_section({"switch": "yes"})
    Traceback (most recent call last):
    ...
    npuprof.errors.ProfilerConfigError: invalid acl.json profiler.switch='yes': expected 'on' or 'off' ...
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from npuprof.errors import ProfilerConfigError, ProfilerDataError
from npuprof.fileio import atomic_write

from . import constants as C
from .contract import external_profiling_source

ON_OFF = ("on", "off")
METRIC_NAMES = tuple(k for k in C.AICORE_METRICS_BY_NAME if k != "None")
_FORBIDDEN_OUTPUT = set("\n\f\r\b\t\v\x7f\"'\\%><|&$;`")
_CUSTOM_RE = re.compile(r"^Custom:(.+)$")

# key -> (kind, detail); kinds: onoff, choice, freq, path, limit, metrics, list, int
CANN_KEYS: dict[str, tuple[str, Any]] = {
    "switch": ("onoff", None),
    "output": ("path", None),
    "storage_limit": ("limit", None),
    "task_time": ("choice", ("on", "off", "l0", "l1", "l2")),
    "aicpu": ("onoff", None),
    "aic_metrics": ("metrics", None),
    "aiv_metrics": ("metrics", None),
    "l2": ("onoff", None),
    "hccl": ("onoff", None),
    "ge_api": ("choice", ("off", "l0", "l1")),
    "ascendcl": ("onoff", None),
    "runtime_api": ("onoff", None),
    "msproftx": ("onoff", None),
    "sys_hardware_mem_freq": ("freq", (1, 100)),
    "llc_profiling": ("choice", ("read", "write")),
    "sys_io_sampling_freq": ("freq", (1, 100)),
    "sys_interconnection_freq": ("freq", (1, 50)),
    "dvpp_freq": ("freq", (1, 100)),
    "instr_profiling_freq": ("freq", (300, 30000)),
    "host_sys": ("list", ("cpu", "mem", "disk", "network", "osrt")),
    "host_sys_usage": ("list", ("cpu", "mem")),
    "host_sys_usage_freq": ("freq", (1, 50)),
}
SVP_KEYS: dict[str, tuple[str, Any]] = {
    "switch": ("onoff", None),
    "output": ("svp_path", None),
    "aacpu": ("onoff", None),
    "aac_metrics": ("choice", ("ArithmeticUtilization",)),
    "acl_api": ("onoff", None),
    "interval": ("int", (0, 2 ** 31 - 1)),
}
_SVP_ONLY = set(SVP_KEYS) - set(CANN_KEYS)
_CANN_ONLY = set(CANN_KEYS) - set(SVP_KEYS)
# instr_profiling excludes these switches (A2/A3 single-op mode)
_INSTR_EXCLUDES = ("aicpu", "aic_metrics", "l2", "hccl", "task_time", "ascendcl", "runtime_api")


def _err(key: str, value: Any, allowed: str, hint: str = "") -> ProfilerConfigError:
    return ProfilerConfigError(f"acl.json profiler.{key}", value, allowed, hint)


def flavour_of(section: Mapping[str, Any]) -> str:
    """'svp' when the section uses the SS928/SS927 keys, else 'cann'."""
    return "svp" if set(section) & _SVP_ONLY else "cann"


def _check_value(key: str, kind: str, detail: Any, value: Any) -> Any:
    if kind == "onoff":
        if value not in ON_OFF:
            raise _err(key, value, "'on' or 'off'", "CANN treats anything but 'on' as off; npuprof refuses it")
        return value
    if kind == "choice":
        if value not in detail:
            raise _err(key, value, "one of " + ", ".join(repr(c) for c in detail))
        return value
    if kind in ("freq", "int"):
        lo, hi = detail
        ok = (isinstance(value, int) and not isinstance(value, bool)) or \
             (isinstance(value, str) and value.strip().isdigit())
        if not ok or not lo <= int(value) <= hi:
            raise _err(key, value, f"an integer in [{lo}, {hi}]")
        return value
    if kind in ("path", "svp_path"):
        if not isinstance(value, str):
            raise _err(key, value, "a directory path string")
        bad = sorted(set(value) & _FORBIDDEN_OUTPUT)
        if bad:
            raise _err(key, value, "a path without control characters or any of \" ' \\ % > < | & $ ; `",
                       hint=f"found {''.join(bad)!r}")
        if kind == "svp_path" and value and not re.fullmatch(r"[A-Za-z0-9_/.\-]+", value):
            raise _err(key, value, "a path of letters, digits and '_' (SVP msprof rule)")
        return value
    if kind == "limit":
        m = re.fullmatch(r"(\d+)MB", value) if isinstance(value, str) else None
        if not m or not 200 <= int(m.group(1)) <= 4294967295:
            raise _err(key, value, "'<N>MB' with N in [200, 4294967295]")
        return value
    if kind == "metrics":
        if value in METRIC_NAMES:
            return value
        m = _CUSTOM_RE.match(value) if isinstance(value, str) else None
        if m:
            regs = [r.strip() for r in m.group(1).split(",")]
            try:
                nums = [int(r, 16) if r.lower().startswith("0x") else int(r) for r in regs]
            except ValueError:
                nums = []
            if nums and len(nums) <= 8 and all(1 <= n <= 0x7FFFFFFF for n in nums):
                return value
        raise _err(key, value, "one of " + ", ".join(METRIC_NAMES) + ", or 'Custom:<reg>,...' with at most 8 "
                   "registers in [0x1, 0x7FFFFFFF]")
    if kind == "list":
        items = [x.strip() for x in value.split(",")] if isinstance(value, str) else None
        if not items or any(x not in detail for x in items):
            raise _err(key, value, "a comma list of " + ", ".join(detail))
        return value
    raise AssertionError(kind)  # pragma: no cover


def validate_profiler_section(section: Any, flavour: Optional[str] = None) -> dict:
    """Check every key and value; return a copy. Raises ProfilerConfigError.

    ``flavour`` is 'cann', 'svp' or None (decided from the keys present).
    """
    if not isinstance(section, Mapping):
        raise ProfilerConfigError("acl.json profiler", section, "a JSON object")
    flav = flavour or flavour_of(section)
    if flav not in ("cann", "svp"):
        raise ProfilerConfigError("flavour", flavour, "'cann' or 'svp'")
    keys = SVP_KEYS if flav == "svp" else CANN_KEYS
    mixed = set(section) & (_CANN_ONLY if flav == "svp" else _SVP_ONLY)
    if mixed and flavour is None:
        raise ProfilerConfigError("acl.json profiler", sorted(section), "keys of one flavour only",
                                  hint=f"SVP keys {sorted(set(section) & _SVP_ONLY)} mixed with CANN keys "
                                       f"{sorted(set(section) & _CANN_ONLY)}")
    out = {}
    for key, value in section.items():
        if key not in keys:
            raise _err(key, value, f"a known {flav.upper()} profiler key: " + ", ".join(keys))
        kind, detail = keys[key]
        out[key] = _check_value(key, kind, detail, value)
    if flav == "cann":
        if "aic_metrics" in out and out.get("task_time", "on") in ("off", "l0"):
            raise _err("aic_metrics", out["aic_metrics"], "unset when task_time is off or l0",
                       hint="AI Core metrics are collected only with task_time on, l1 or l2")
        if "llc_profiling" in out and "sys_hardware_mem_freq" not in out:
            raise _err("llc_profiling", out["llc_profiling"], "used together with sys_hardware_mem_freq")
        if "instr_profiling_freq" in out:
            clash = [k for k in _INSTR_EXCLUDES if k in out and out[k] not in ("off",)]
            if clash:
                raise _err("instr_profiling_freq", out["instr_profiling_freq"], "without " + ", ".join(clash),
                           hint="instruction profiling excludes " + ", ".join(_INSTR_EXCLUDES))
    return out


def read_acl_json(path: Union[str, Path]) -> dict:
    """The whole acl.json as a dict ({} for an empty file, as acl.init accepts)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ProfilerDataError(p, f"cannot be read ({e.strerror})") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ProfilerDataError(p, f"is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ProfilerDataError(p, "does not hold a JSON object")
    return data


def read_profiler_section(path: Union[str, Path], validate: bool = True) -> dict:
    """The ``profiler`` section of acl.json ({} when absent), validated."""
    section = read_acl_json(path).get("profiler", {})
    return validate_profiler_section(section) if validate else section


def write_acl_json(path: Union[str, Path], section: Mapping[str, Any], flavour: Optional[str] = None) -> Path:
    """Validate ``section`` and store it as the ``profiler`` object of acl.json.

    Other top-level sections (dump, ...) of an existing file are kept; the
    file is replaced atomically.
    """
    checked = validate_profiler_section(section, flavour)
    p = Path(path)
    data = read_acl_json(p) if p.exists() else {}
    data["profiler"] = checked
    return atomic_write(p, json.dumps(data, indent=4) + "\n")


def section_from_config(config: Any, output: Union[str, Path], flavour: str = "cann",
                        interval: int = 0) -> dict:
    """The acl.json profiler section that collects what an npuprof config asks for.

    ``config`` is a :class:`npuprof.config.ProfilerConfig` (or any object with
    ``profiler_level``, ``aic_metrics``, ``mstx``, ``l2_cache``, ``host_sys``).

    Example::

        from npuprof.config import build_config
        section = section_from_config(build_config(profiler_level="Level1"), "/data/prof")
        write_acl_json("acl.json", section)
    """
    level = str(getattr(config.profiler_level, "value", config.profiler_level))
    metrics = getattr(config.aic_metrics, "value", config.aic_metrics)
    on = lambda b: "on" if b else "off"  # noqa: E731
    if flavour == "svp":
        section = {"switch": "on", "output": str(output), "aacpu": on(level in ("Level2",)),
                   "acl_api": on(level != "LevelNone"), "interval": str(int(interval))}
        if metrics not in (None, "None"):
            section["aac_metrics"] = "ArithmeticUtilization"
        return validate_profiler_section(section, "svp")
    section = {"switch": "on", "output": str(output)}
    if level == "LevelNone":
        section.update(task_time="off", ascendcl="off", runtime_api="off", msproftx="on")
    else:
        section.update(task_time="l0" if level == "Level0" else "l1",
                       ascendcl="on", runtime_api=on(level == "Level2"), aicpu=on(level == "Level2"),
                       hccl=on(level != "Level0"))
        if level != "Level0" and metrics not in (None, "None"):
            section["aic_metrics"] = metrics
        if getattr(config, "mstx", False):
            section["msproftx"] = "on"
        if getattr(config, "l2_cache", False):
            section["l2"] = "on"
    host_sys = [str(getattr(h, "value", h)) for h in getattr(config, "host_sys", ())]
    if host_sys:
        section["host_sys_usage"] = ",".join(h for h in host_sys if h in ("cpu", "mem")) or None
        section["host_sys"] = ",".join(host_sys)
        if section["host_sys_usage"] is None:
            del section["host_sys_usage"]
    if getattr(config, "storage_limit", None):
        section["storage_limit"] = f"{max(200, config.storage_limit >> 20)}MB"
    return validate_profiler_section(section, "cann")


@dataclass
class Precedence:
    """Which profiling source is in force and what the others lose."""

    winner: str  # "msprof", "acl.json", "environment", "api" or "none"
    messages: list = field(default_factory=list)
    output_dir: Optional[str] = None

    @property
    def api_usable(self) -> bool:
        """True when acl.prof.init/start/stop/finalize will be accepted."""
        return self.winner in ("api", "none")

    def report(self) -> str:
        return "; ".join(self.messages) if self.messages else f"profiling source: {self.winner}"


def precedence(acl_json: Optional[Union[str, Path, Mapping]] = None, api_requested: bool = True,
               env: Optional[Mapping[str, str]] = None) -> Precedence:
    """Work out who controls CANN profiling for a process about to start.

    Rules (reference pyacl.md section 10): the msprof command line
    (PROFILER_SAMPLECONFIG) beats acl.json, which is then ignored; any source
    outside the API (msprof, acl.json "switch": "on", PROFILING_MODE) makes
    the acl.prof API fail with 100042; acl.json ``output`` beats
    ASCEND_WORK_PATH, which beats the executable's directory.

    Example::

        p = precedence("acl.json")
        if not p.api_usable:
            print(p.report())
    """
    env = os.environ if env is None else env
    section: dict = {}
    where = "acl.json"
    if isinstance(acl_json, Mapping):
        section = dict(acl_json.get("profiler", acl_json))
    elif acl_json is not None:
        where = str(acl_json)
        section = read_acl_json(acl_json).get("profiler", {}) if Path(acl_json).exists() else {}
    json_on = section.get("switch") == "on"
    msgs: list[str] = []
    if env.get("PROFILER_SAMPLECONFIG"):
        winner = "msprof"
        msgs.append("the msprof command line controls profiling (PROFILER_SAMPLECONFIG is set)")
        if json_on:
            msgs.append(f"the profiler section of {where} is ignored")
    elif json_on:
        winner = "acl.json"
        msgs.append(f"{where} switches profiling on (\"switch\": \"on\")")
    elif env.get("PROFILING_MODE", "").lower() == "true":
        winner = "environment"
        msgs.append("PROFILING_MODE=true switches profiling on from the environment")
    else:
        winner = "api" if api_requested else "none"
    if winner not in ("api", "none") and api_requested:
        msgs.append("the acl.prof API would fail with 100042 (ACL_ERROR_PROF_ALREADY_RUN); set \"switch\": \"off\" "
                    "in acl.json (and unset the variables) to use the API")
    output = None
    if winner == "acl.json":
        output = section.get("output") or None
        if output and env.get("ASCEND_WORK_PATH"):
            msgs.append(f"acl.json output {output!r} beats ASCEND_WORK_PATH")
        elif not output and env.get("ASCEND_WORK_PATH"):
            output = os.path.join(env["ASCEND_WORK_PATH"], "profiling_data")
            msgs.append(f"acl.json has no output: data goes to $ASCEND_WORK_PATH/profiling_data ({output})")
        elif not output:
            msgs.append("acl.json has no output and ASCEND_WORK_PATH is unset: data goes to the executable's "
                        "directory")
    return Precedence(winner, msgs, output)


def switched_on_source(acl_json_path: Optional[str]) -> Optional[str]:
    """Why CANN profiling is on outside the API for an ``acl.init(acl_json_path)``, or None.

    Unreadable files are not an error here: acl.init reports them itself.
    """
    src = external_profiling_source()
    if src:
        return src
    if acl_json_path:
        try:
            section = read_acl_json(acl_json_path).get("profiler", {})
        except ProfilerDataError:
            return None
        if isinstance(section, dict) and section.get("switch") == "on":
            return f"{acl_json_path} (\"profiler\": {{\"switch\": \"on\"}})"
    return None
