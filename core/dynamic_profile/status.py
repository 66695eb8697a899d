"""The status file each watching process keeps beside the config.

``<config dir>/npuprof_status/rank{rank}_pid{pid}.json``, rewritten atomically
when something changes (a config read or refused, a capture scheduled,
started, done or failed) and at most once per poll for the current step.
``npuprof dynamic status DIR`` reads them all.

Example::

    >>> status = ProcessStatus(rank=0, pid=1, host="h", dialect="npuprof", config_path="/c/profiler_config.json")
    >>> status.to_json()["state"]
    'idle'
"""
from __future__ import annotations

import dataclasses
import json
import socket
import time
from pathlib import Path
from typing import Any, Optional

from ..fileio import atomic_write, secure_mkdir

STATUS_DIR = "npuprof_status"


@dataclasses.dataclass
class CaptureStatus:
    """One capture of one process: its steps, its state and where it went."""

    digest: str
    start_step: int
    recorded_steps: list[int]
    output_dir: str
    state: str = "scheduled"     # scheduled | running | done | failed | stopped
    run_dirs: list[str] = dataclasses.field(default_factory=list)
    error: Optional[str] = None


@dataclasses.dataclass
class ProcessStatus:
    """What one process has in effect (mutable; written with :func:`write_status`)."""

    rank: int
    pid: int
    host: str
    dialect: str
    config_path: str
    step: int = 0
    state: str = "idle"          # idle | scheduled | capturing | stopped
    config_digest: Optional[str] = None
    config: Optional[dict] = None
    error: Optional[str] = None
    captures: list[CaptureStatus] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["updated_ns"] = time.time_ns()
        return out


def new_status(rank: int, pid: int, dialect: str, config_path: Path) -> ProcessStatus:
    return ProcessStatus(rank=rank, pid=pid, host=socket.gethostname(), dialect=dialect,
                         config_path=str(config_path))


def status_path(config_dir: Path, rank: int, pid: int) -> Path:
    return config_dir / STATUS_DIR / f"rank{rank}_pid{pid}.json"


def write_status(config_dir: Path, status: ProcessStatus) -> None:
    """Rewrite the status file; raises OSError (the caller warns once)."""
    secure_mkdir(config_dir / STATUS_DIR)
    atomic_write(status_path(config_dir, status.rank, status.pid),
                 json.dumps(status.to_json(), indent=1, default=str))


def read_statuses(config_dir: Path) -> list[dict[str, Any]]:
    """Every readable status file under ``config_dir``, by rank then pid."""
    out = []
    for path in sorted((config_dir / STATUS_DIR).glob("rank*_pid*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append(data)
    return sorted(out, key=lambda d: (d.get("rank", 0), d.get("pid", 0)))
