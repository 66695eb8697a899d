"""Multi-rank jobs: rank selection at collection time and cluster analysis.

Example::

    from npuprof.cluster import cluster_analyse, rank_profiler

    res = cluster_analyse("./prof", backend="process")    # or backend="dask"
    print(res.slow["slow_ranks"], res.output_dir)
"""
from __future__ import annotations

from .analyse import ClusterResult, cluster_analyse
from .collect import SkippedRankProfiler, rank_profiler, rank_worker_name
from .ranks import discover_ranks, parse_rank_list, should_profile

__all__ = ["ClusterResult", "SkippedRankProfiler", "cluster_analyse", "discover_ranks", "parse_rank_list",
           "rank_profiler", "rank_worker_name", "should_profile"]
