"""Run directories: naming, ``profiler_info_{rank}.json`` and locating runs.

A run directory is named ``{worker}_{pid}_{UTC %Y%m%d%H%M%S%f[:-3]}_ascend_{fw}``
(the convention msprof-analyze and MindStudio Insight recognise) and holds
``profiler_info_{rank}.json``: written when the window opens and rewritten
when it closes, so a run that never reached ``stop`` is still analysable.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import socket
import sys
import time
from pathlib import Path
from typing import Any, Optional

from .errors import ProfilerDataError
from .fileio import atomic_write, check_input_file

INFO_GLOB = "profiler_info*.json"
RUN_DIR_RE = re.compile(r"^(?P<worker>.+)_(?P<pid>\d+)_(?P<ts>\d{17})_ascend_(?P<fw>[a-z0-9]+)$")
NPUPROF_VERSION = "0.1.0"


def run_dir_name(worker: str, framework: str, now: Optional[float] = None) -> str:
    t = _dt.datetime.fromtimestamp(time.time() if now is None else now, tz=_dt.timezone.utc)
    return f"{worker}_{os.getpid()}_{t.strftime('%Y%m%d%H%M%S%f')[:-3]}_ascend_{framework}"


def new_run_dir(parent: Path, worker: str, framework: str) -> Path:
    """A fresh, not yet existing run directory path under ``parent``."""
    now = time.time()
    while True:
        path = parent / run_dir_name(worker, framework, now)
        if not path.exists():
            return path
        now += 0.001


def info_path(run_dir: Path, rank: int) -> Path:
    return run_dir / f"profiler_info_{rank}.json"


def write_info(run_dir: Path, rank: int, info: dict) -> Path:
    return atomic_write(info_path(run_dir, rank), json.dumps(info, indent=4, default=str))


def base_info(config_json: dict, rank: int, device_id: int, world_size: int) -> dict:
    """The profiler_info skeleton; MindSpore's keys kept where tools read them."""
    return {
        "rank_id": rank,
        "profiler_parameters": config_json,
        "ms_profiler_info": {"rank_id": str(rank), "device_id": str(device_id)},
        "cann_profiler_info": {},
        "npuprof": {
            "version": NPUPROF_VERSION,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "rank": rank,
            "world_size": world_size,
            "device_id": device_id,
            "state": "running",
        },
    }


def read_info(run_dir: Path) -> dict:
    """The run's profiler_info (first match), or {} when there is none.

    Raises :class:`ProfilerDataError` naming the file when it is not JSON,
    not an object, or a field the analysis relies on has the wrong type
    (so no reader later fails deep inside with a TypeError).
    """
    for path in sorted(Path(run_dir).glob(INFO_GLOB)):
        check_input_file(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as e:
            raise ProfilerDataError(path, f"is not valid JSON ({str(e)[:120]})") from None
        if not isinstance(data, dict):
            raise ProfilerDataError(path, "does not hold a JSON object")
        problem = info_problem(data)
        if problem:
            raise ProfilerDataError(path, problem)
        return data
    return {}


_INT_FIELDS = (("rank_id",), ("npuprof", "rank"), ("npuprof", "world_size"), ("npuprof", "device_id"),
               ("npuprof", "pid"), ("ms_profiler_info", "rank_id"), ("ms_profiler_info", "device_id"),
               ("npuprof", "clock", "monotonic_ns"), ("npuprof", "clock", "realtime_ns"),
               ("npuprof", "clock", "uncertainty_ns"))
_DICT_FIELDS = (("npuprof",), ("ms_profiler_info",), ("profiler_parameters",), ("cann_profiler_info",),
                ("npuprof", "clock"), ("npuprof", "storage"))


_ABSENT = object()


def _get(data: Any, keys: tuple, default: Any = None) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return default
        data = data[key]
    return data


def _is_int_like(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return False
    try:
        int(value)
    except (ValueError, OverflowError):
        return False
    return True


def info_problem(data: dict) -> str:
    """Why a parsed profiler_info cannot be used, or "" when it can."""
    for keys in _DICT_FIELDS:          # present means an object (null is not one)
        value = _get(data, keys, _ABSENT)
        if value is not _ABSENT and not isinstance(value, dict):
            return f"field {'.'.join(keys)} is {type(value).__name__}, not an object"
    for keys in _INT_FIELDS:           # readers write int(x or 0): null reads as 0, other junk does not
        value = _get(data, keys)
        if value is not None and not _is_int_like(value):
            return f"field {'.'.join(keys)} is {str(value)[:40]!r}, not an integer"
    clock = _get(data, ("npuprof", "clock"))
    if clock is not None and not all(_is_int_like(_get(clock, (k,))) for k in ("monotonic_ns", "realtime_ns")):
        return "field npuprof.clock lacks an integer monotonic_ns or realtime_ns"
    steps = _get(data, ("npuprof", "steps"))
    if steps is not None and (not isinstance(steps, list) or not all(_is_int_like(x) for x in steps)):
        return "field npuprof.steps is not a list of step numbers"
    export = _get(data, ("profiler_parameters", "export_type"))
    if export is not None and not (isinstance(export, str) or
                                   (isinstance(export, list) and all(isinstance(x, str) for x in export))):
        return "field profiler_parameters.export_type is not a list of names"
    for keys in (("npuprof", "hostname"), ("npuprof", "state"), ("npuprof", "version")):
        value = _get(data, keys)
        if value is not None and not isinstance(value, str):
            return f"field {'.'.join(keys)} is not a string"
    return ""
