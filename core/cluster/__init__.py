"""Multi-rank jobs: rank selection at collection time and cluster analysis.

Example::

    from npuprof.cluster import cluster_analyse, rank_profiler

    res = cluster_analyse("./prof", backend="process")    # or backend="dask"
    print(res.slow["slow_ranks"], res.output_dir)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .analyse import ClusterResult, cluster_analyse
    from .collect import SkippedRankProfiler, rank_profiler, rank_worker_name
    from .ranks import discover_ranks, parse_rank_list, should_profile


def __getattr__(name: str) -> Any:
    """The names below, imported on first use: every npuprof command loads the ``cluster`` plugin
    (:mod:`npuprof.cluster.plugin`, in this package), and only ``npuprof cluster`` needs the
    analysis and its process pools."""
    if name in ("ClusterResult", "cluster_analyse"):
        from . import analyse as module
    elif name in ("SkippedRankProfiler", "rank_profiler", "rank_worker_name"):
        from . import collect as module
    elif name in ("discover_ranks", "parse_rank_list", "should_profile"):
        from . import ranks as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(module, name)


__all__ = ["ClusterResult", "SkippedRankProfiler", "cluster_analyse", "discover_ranks", "parse_rank_list",
           "rank_profiler", "rank_worker_name", "should_profile"]
