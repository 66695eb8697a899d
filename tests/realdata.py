"""Where the real profiling samples are: ``../shared/realdata`` beside the
project (CI has it). They are read in place, never copied into the project.

Example::

    from realdata import realdata
    run = realdata("msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")  # skips when absent
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"


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
