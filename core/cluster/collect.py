"""Multi-rank collection helpers: profile only chosen ranks.

Until ``Profiler`` takes ``profile_rank_ids`` itself, :func:`rank_profiler`
returns a real :class:`~npuprof.Profiler` on the chosen ranks and an inert
:class:`SkippedRankProfiler` (same methods, records nothing, creates no
directory) on the others, so one training script serves every rank.

Rank, world size and device come from ``rank=``/``world_size=``/``device_id=``
or from the launcher's environment (RANK_ID | RANK | LOCAL_RANK,
RANK_SIZE | WORLD_SIZE, DEVICE_ID | LOCAL_RANK), as
:func:`npuprof.config.env_rank` reads them.

Example::

    from npuprof.cluster import rank_profiler

    with rank_profiler(profile_rank_ids=[0, 7], output_path="./prof",
                       schedule=schedule(wait=1, active=3)) as prof:
        for batch in data:
            train_step(batch)
            prof.step()
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Optional

from ..config import env_rank
from ..validate import check_int
from .ranks import parse_rank_list

log = logging.getLogger("npuprof")


class SkippedRankProfiler:
    """Stands in for a Profiler on a rank that is not profiled."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.step_num = 0
        self.saved_runs: list[Path] = []
        self.results: list = []
        self.current_session = None
        self.config = None

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def step(self) -> None:
        self.step_num += 1

    def analyse(self, *args: Any, **kwargs: Any) -> list:
        return []

    def add_metadata(self, key: str, value: str) -> None:
        pass

    def add_metadata_json(self, key: str, value: str) -> None:
        pass

    def __enter__(self) -> "SkippedRankProfiler":
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False


def rank_profiler(profile_rank_ids: Any = None, rank: Any = None, **kwargs: Any) -> Any:
    """A Profiler for this rank if it is in ``profile_rank_ids`` (None = all ranks).

    Every other keyword goes to :class:`npuprof.Profiler` and is validated on
    every rank (a typo fails on all ranks alike, before training starts).
    """
    from ..config import build_config
    from ..profiler import Profiler

    wanted = parse_rank_list("profile_rank_ids", profile_rank_ids)
    this_rank = env_rank()[0] if rank is None else check_int("rank", rank, minimum=0)
    if wanted is not None and this_rank not in wanted:
        # validate anyway so a bad argument is reported on every rank
        build_config(rank=this_rank, **{k: v for k, v in kwargs.items() if k != "start_profile"})
        log.info("npuprof: rank %d is not in profile_rank_ids %s; not profiling it", this_rank, wanted)
        return SkippedRankProfiler(this_rank)
    return Profiler(rank=this_rank, **kwargs)


def rank_worker_name(prefix: Optional[str] = None, rank: Optional[int] = None) -> str:
    """A worker name carrying the rank, e.g. ``"myhost-rank3"``, for run dir names.

    Example::

        Profiler(worker_name=rank_worker_name(), ...)   # -> myhost-rank3_<pid>_<ts>_ascend_ms
    """
    import socket

    r = env_rank()[0] if rank is None else rank
    return f"{prefix or socket.gethostname()}-rank{r}"
