"""Run directories: naming, ``profiler_info_{rank}.json`` and :class:`RunInfo`.

A run directory npuprof writes is named
``{worker}_{pid}_{UTC %Y%m%d%H%M%S%f[:-3]}_ascend_{fw}`` (the convention
msprof-analyze and MindStudio Insight recognise) and holds
``profiler_info_{rank}.json``: written when the window opens and rewritten
when it closes, so a run that never reached ``stop`` is still analysable.

Reading goes through one place, :func:`read_run_info`: the file is parsed,
validated (:func:`info_problem`) and turned into a frozen :class:`RunInfo`
whose attributes every consumer uses. It also says where the run came from
(:class:`RunOrigin`) and whether npuprof may write into it: only into the
directories it wrote itself. torch_npu, MindSpore, CANN and foreign traces
are read-only input; their outputs go elsewhere (see
:func:`npuprof.export.writer.output_root`).

Example::

    >>> info = RunInfo.from_dict(Path("w_1_20250101000000000_ascend_pt"), {"rank_id": 1})
    >>> info.origin.value, info.rank, info.writable
    ('torch_npu', 1, False)
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

from dataclasses import dataclass, field
from enum import Enum
from typing import Mapping

from .clock import ClockAnchor
from .errors import ProfilerDataError
from .fileio import atomic_write, check_input_file
from .rawstore import RAW_DIR

INFO_GLOB = "profiler_info*.json"
RUN_DIR_RE = re.compile(r"^(?P<worker>.+)_(?P<pid>\d+)_(?P<ts>\d{17})_ascend_(?P<fw>[a-z0-9]+)$")
NPUPROF_VERSION = "0.1.0"
OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"   # where a run's analysed outputs go (the Ascend tools' name)
CLUSTER_SUMMARY = "cluster_summary.json"   # marks a folder npuprof cluster/report wrote (its traces are no runs)


MAX_RECORDED_FILES = 10_000   # native files whose sizes a stopped window records (data-quality contract)


def native_file_sizes(run_dir: Path) -> dict[str, int]:
    """Size of each file a collection window left in ``run_dir`` besides npuprof's own (raw data, info,
    metadata, outputs): the framework profilers' native files, recorded in profiler_info when the window
    stops so that an analysis can tell a file removed or cut short since (:mod:`npuprof.analysis.contract`).

    Example::

        native_file_sizes(Path("prof/w_1_20250101000000000_ascend_ms"))   # {"FRAMEWORK/x.csv": 2048, ...}
    """
    out: dict[str, int] = {}
    skip = {RAW_DIR, OUTPUT_DIR}
    for dirpath, dirnames, filenames in os.walk(run_dir):
        here = Path(dirpath)
        if here == Path(run_dir):
            dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith(OUTPUT_DIR)]
        for name in filenames:
            path = here / name
            rel = path.relative_to(run_dir).as_posix()
            if "/" not in rel and (name.startswith("profiler_info") or name.startswith("profiler_metadata")
                                   or name.startswith(".")):
                continue
            try:
                out[rel] = path.stat().st_size
            except OSError:
                continue
            if len(out) >= MAX_RECORDED_FILES:
                return out
    return out


def is_npuprof_output(folder: Path) -> bool:
    """A folder npuprof wrote its outputs into (a run's ASCEND_PROFILER_OUTPUT, a cluster or report
    output): what it holds (per-rank traces, tables) are results, never runs to analyse again."""
    return folder.name == OUTPUT_DIR or (folder / CLUSTER_SUMMARY).is_file()


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


class RunOrigin(str, Enum):
    """Which tool wrote a run directory (decides whether npuprof may write into it)."""

    NPUPROF = "npuprof"          # npuprof's own run (its profiler_info has an "npuprof" section)
    TORCH_NPU = "torch_npu"      # *_ascend_pt
    MINDSPORE = "mindspore"      # *_ascend_ms or a MindSpore profiler directory
    CANN = "cann"                # PROF_* (msprof)
    TENSORFLOW = "tensorflow"    # a TensorFlow profiler log directory
    TRACE = "trace"              # a Kineto / Chrome trace file or a folder of them
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class RunInfo:
    """What a run's profiler_info (and its directory) say about the run.

    ``device_id`` is None where the file does not say (readers of device
    data then take it from the data). ``parameters`` is the writer's
    ``profiler_parameters`` section, ``raw`` the whole parsed file, kept for
    the tools that copy it; read attributes, not keys.
    """

    run_dir: Path
    origin: RunOrigin = RunOrigin.UNKNOWN
    rank: int = 0
    device_id: Optional[int] = None
    world_size: int = 1
    pid: int = 0
    hostname: str = ""
    version: str = ""
    state: str = ""
    partial: bool = False
    steps: tuple[int, ...] = ()
    clock: Optional[ClockAnchor] = None
    export_type: tuple[str, ...] = ()
    record_shapes: Optional[bool] = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def writable(self) -> bool:
        """True only for a run npuprof recorded (its raw data is there): another tool's files, and
        npuprof's ``export ascend`` copies made for them, are read-only input."""
        return self.origin is RunOrigin.NPUPROF and (self.run_dir / RAW_DIR).is_dir()

    @classmethod
    def from_dict(cls, run_dir: Path, data: Mapping[str, Any]) -> "RunInfo":
        """A RunInfo from a profiler_info object already checked by :func:`info_problem`."""
        own = data.get("npuprof") if isinstance(data.get("npuprof"), dict) else None
        npu: Mapping[str, Any] = own or {}
        ms = data.get("ms_profiler_info") if isinstance(data.get("ms_profiler_info"), dict) else {}
        params = data.get("profiler_parameters") if isinstance(data.get("profiler_parameters"), dict) else {}
        clock = npu.get("clock")
        export = params.get("export_type")
        shapes = params.get("record_shapes")
        return cls(
            run_dir=Path(run_dir),
            origin=RunOrigin.NPUPROF if own is not None else origin_of(Path(run_dir)),
            rank=_int_or(data.get("rank_id"), _int_or(npu.get("rank"), _int_or(ms.get("rank_id"), 0))),
            device_id=_int_or(npu.get("device_id"), _int_or(ms.get("device_id"), None)),
            world_size=max(1, _int_or(npu.get("world_size"), 1)),
            pid=_int_or(npu.get("pid"), 0),
            hostname=str(npu.get("hostname", "") or ""),
            version=str(npu.get("version", "") or ""),
            state=str(npu.get("state", "") or ""),
            partial=npu.get("partial") is True,
            steps=tuple(int(x) for x in (npu.get("steps") or ())),
            clock=ClockAnchor(int(clock["monotonic_ns"]), int(clock["realtime_ns"]),
                              _int_or(clock.get("uncertainty_ns"), 0)) if isinstance(clock, dict) else None,
            export_type=(export,) if isinstance(export, str) else tuple(export or ()),
            record_shapes=shapes if isinstance(shapes, bool) else None,
            parameters=params, raw=data)


def _int_or(value: Any, default: Any) -> Any:
    return int(value) if value is not None and _is_int_like(value) else default


def origin_of(run_dir: Path) -> RunOrigin:
    """Who wrote ``run_dir``, judged from its name and content (npuprof's own
    runs are recognised by their profiler_info, see :meth:`RunInfo.from_dict`)."""
    name = run_dir.name
    if (run_dir / RAW_DIR).is_dir():    # npuprof's raw data, even when its profiler_info was damaged
        return RunOrigin.NPUPROF
    if name.endswith("_ascend_pt"):
        return RunOrigin.TORCH_NPU
    if name.endswith("_ascend_ms"):
        return RunOrigin.MINDSPORE
    if name.startswith("PROF_"):
        return RunOrigin.CANN
    if run_dir.is_file() or any(run_dir.glob("*.pt.trace.json*")):
        return RunOrigin.TRACE
    if any(run_dir.glob("plugins/profile/*/*.xplane.pb")) or any(run_dir.glob("*.xplane.pb")):
        return RunOrigin.TENSORFLOW
    if (run_dir / "profiler").is_dir() or any(run_dir.glob("*_ascend_ms")) or (run_dir / "FRAMEWORK").is_dir():
        return RunOrigin.MINDSPORE
    return RunOrigin.UNKNOWN


def read_run_info(run_dir: Path) -> RunInfo:
    """The run's :class:`RunInfo`, from its profiler_info when it has one.

    Raises :class:`ProfilerDataError` naming the file when it is not JSON,
    not an object, or a field has the wrong type.
    """
    run_dir = Path(run_dir)
    return RunInfo.from_dict(run_dir, read_info(run_dir)) if run_dir.is_dir() else \
        RunInfo(run_dir=run_dir, origin=origin_of(run_dir))
