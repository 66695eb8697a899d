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
from .fileio import atomic_write

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
    """The run's profiler_info (first match), or {} when there is none."""
    for path in sorted(run_dir.glob(INFO_GLOB)):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ProfilerDataError(path, f"is not valid JSON ({e})") from None
        if not isinstance(data, dict):
            raise ProfilerDataError(path, "does not hold a JSON object")
        return data
    return {}
