"""Ranks of a multi-rank job: which run directory belongs to which rank, and
which ranks a job profiles.

Each rank's Profiler writes its own run directory(ies) under one parent; the
rank comes from ``profiler_info_{rank}.json`` (``rank_id``), written when the
window opens. A rank may own several run directories (one per schedule
window); cluster analysis reads them all.

Example::

    >>> ranks = discover_ranks("./prof")               # doctest: +SKIP
    >>> sorted(ranks)[:2], ranks[0][0].name             # doctest: +SKIP
    ([0, 1], 'host_1234_20240101000000000_ascend_ms')
"""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from ..config import env_rank
from ..errors import ProfilerConfigError, ProfilerDataError
from ..runinfo import is_npuprof_output
from ..validate import parse_rank_list

log = logging.getLogger("npuprof")
INFO_RE = re.compile(r"^profiler_info_(\d+)\.json$")
MAX_DEPTH = 4


def _rank_value(value: Any) -> Optional[int]:
    """A rank number from profiler_info (an int >= 0 or its decimal text), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value.strip()):
        return int(value)
    return None


def rank_of(run_dir: Path) -> Optional[int]:
    """The rank recorded in a run directory (or a trace file's ``distributedInfo``), or None when it
    records none.

    A damaged profiler_info (not JSON, or fields of the wrong type) falls
    back to the rank in its file name.
    """
    if run_dir.is_file():
        from ..readers.kineto import trace_distributed

        return trace_distributed(run_dir)[0]
    for path in sorted(run_dir.glob("profiler_info*.json")):
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info = {}
        if isinstance(info, dict):
            own = info.get("npuprof")
            for value in (info.get("rank_id"), own.get("rank") if isinstance(own, dict) else None):
                rank = _rank_value(value)
                if rank is not None:
                    return rank
        m = INFO_RE.match(path.name)
        if m:
            return int(m.group(1))
    return None


def _walk_run_dirs(root: Path, depth: int) -> Iterable[Path]:
    if root.is_file():
        if _is_kineto_trace(root):
            yield root
        return
    if any(root.glob("profiler_info*.json")):
        yield root
        return
    if is_npuprof_output(root):        # npuprof's own results (per-rank traces of a cluster output)
        return
    try:
        entries = sorted(p for p in root.iterdir() if not p.is_symlink())
    except OSError:
        return
    yield from (p for p in entries if p.is_file() and _is_kineto_trace(p))   # a folder of ranks' trace files
    if depth <= 0:
        return
    for child in entries:
        if child.is_dir():
            yield from _walk_run_dirs(child, depth - 1)


def _is_kineto_trace(path: Path) -> bool:
    """:func:`~npuprof.readers.kineto.is_kineto_trace`, its reader (and trace decoder) imported only where a
    folder holds files to test: a job of rank directories is walked without it."""
    from ..readers.kineto import is_kineto_trace

    return is_kineto_trace(path)


def run_dirs_under(root: Path) -> list[Path]:
    """Every run directory (one with a profiler_info) under ``root``, up to four levels down."""
    return list(_walk_run_dirs(root, MAX_DEPTH))


def discover_ranks(path: Union[str, Path], ranks: Optional[Iterable[int]] = None,
                   run_dirs: Optional[Iterable[Path]] = None) -> dict[int, list[Path]]:
    """Map rank -> its run directories (oldest first) found under ``path``.

    ``path`` is one run directory or a parent holding runs up to four levels
    down (``prof/rank0/<run>`` works as well as ``prof/<run>``). ``ranks``
    keeps only those ranks; ``run_dirs`` (one job's runs, see :mod:`.jobs`) replaces the search.
    Raises ProfilerDataError when no run is found.
    """
    root = Path(path)
    if not root.is_dir():
        raise ProfilerDataError(root, "does not exist or is not a directory")
    found: dict[int, list[Path]] = {}
    for run_dir in (_walk_run_dirs(root, MAX_DEPTH) if run_dirs is None else run_dirs):
        rank = rank_of(run_dir)
        if rank is None:
            continue
        found.setdefault(rank, []).append(run_dir)
    if not found:
        raise ProfilerDataError(root, "holds no profiling run with a rank (no profiler_info_*.json found "
                                      f"within {MAX_DEPTH} levels)")
    if ranks is not None:
        wanted = set(ranks)
        missing = sorted(wanted - set(found))
        if missing:
            raise ProfilerConfigError("ranks", missing, f"ranks present under {root}: {rank_ranges(sorted(found))}")
        found = {r: v for r, v in found.items() if r in wanted}
    # windows in time order: the run dir name ends with its UTC start stamp
    return {r: sorted(v, key=lambda p: (p.name.rsplit("_", 3)[-3:], str(p))) for r, v in sorted(found.items())}


def should_profile(profile_rank_ids: Any, rank: Optional[int] = None) -> bool:
    """True when this process's rank is one of ``profile_rank_ids`` (None = all).

    ``rank`` defaults to the launcher's environment (RANK_ID, RANK,
    LOCAL_RANK). Bad values raise ProfilerConfigError before anything starts.

    Example::

        >>> should_profile([0, 7], rank=7), should_profile([0], rank=3), should_profile(None, rank=3)
        (True, False, True)
    """
    wanted = parse_rank_list("profile_rank_ids", profile_rank_ids)
    if rank is None:
        rank = env_rank()[0]
    return wanted is None or rank in wanted


def rank_ranges(ranks: list[int]) -> str:
    """Sorted ranks as ``0-3,6`` (runs of consecutive ranks joined)."""
    parts, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ",".join(parts)


def ranks_phrase(ranks: list[int]) -> str:
    """``rank 3`` / ``ranks 0-3,6``: for messages."""
    return f"rank{'s' if len(ranks) > 1 else ''} {rank_ranges(sorted(ranks))}"
