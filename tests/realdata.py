"""Where the real profiling samples are: ``../shared/realdata`` beside the
project (CI has it). They are read in place, never copied into the project.

Example::

    from realdata import realdata
    run = realdata("msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")  # skips when absent
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"
# tolerances of a real sample's times against npuprof's
US = 1e-3        # one ns in µs: the resolution of npuprof's event times (and of the tool's csv text)
FLOAT_EPOCH_US = 0.25   # ulp of a float64 holding epoch µs of 2025 (2**50 µs .. 2**51 µs): the tool's ts resolution


def realdata(relative: str) -> Path:
    """The sample at ``relative`` under ../shared/realdata, or skip the test saying why."""
    path = REALDATA / relative
    if not path.exists():
        pytest.skip(f"real sample {relative} not found under {REALDATA} (../shared/realdata is only "
                    "beside the project's own checkouts; see its README)")
    return path


def tree_digest(root: Path) -> dict[str, tuple[str, int]]:
    """md5 and mtime of every file below ``root``: equal before and after means untouched."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(root))] = (hashlib.md5(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


@dataclass(frozen=True)
class Bounds:
    """How far npuprof's number may be from the tool's, per kind of column (see each test for why)."""

    ms: float                 # times in ms (absolute, per 100 ms of value)
    ratio: float              # ratios rounded to 4 places
    start_us: float           # start timestamps in µs
    bandwidth_rel: float      # bandwidths, relative

    def close(self, key: str, tool: float, ours: float) -> bool:
        if key.startswith("Start Timestamp"):
            return abs(tool - ours) <= self.start_us
        if "Ratio" in key:
            return abs(tool - ours) <= self.ratio
        if key.startswith("Bandwidth"):
            return abs(tool - ours) <= self.bandwidth_rel * max(abs(tool), 1e-9) + 1e-4
        return abs(tool - ours) <= self.ms * max(1.0, abs(tool) / 100)


def compare_json(tool: object, ours: object, bounds: Bounds, path: str = "") -> list[str]:
    """Every number and text of the tool's json found equal in npuprof's (npuprof may add keys); the problems."""
    problems: list[str] = []
    if isinstance(tool, dict):
        for k, v in tool.items():
            if not isinstance(ours, dict) or k not in ours:
                problems.append(f"{path} > {k}: missing")
                continue
            problems += compare_json(v, ours[k], bounds, f"{path} > {k}")
    elif isinstance(tool, list):
        if not isinstance(ours, list) or len(ours) != len(tool):
            return [f"{path}: {tool} vs {ours}"]
        for i, (x, y) in enumerate(zip(tool, ours)):
            problems += compare_json(x, y, bounds, f"{path}[{i}]")
    elif isinstance(tool, (int, float)) and not isinstance(tool, bool):
        key = path.rsplit(" > ", 1)[-1].split("[")[0]
        if not isinstance(ours, (int, float)) or not bounds.close(key, float(tool), float(ours)):
            problems.append(f"{path}: tool {tool}, npuprof {ours}")
    elif tool != ours:
        problems.append(f"{path}: tool {tool!r}, npuprof {ours!r}")
    return problems
