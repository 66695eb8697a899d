"""Compare two runs or jobs: pick the rank of each side, analyse both, compare.

The comparison itself is :func:`npuprof.analysis.diff.compare` (pure, over two
analysed runs); this module finds the runs (any format npuprof reads, of
different kinds too), picks a rank of each side and reads each run once even
when both sides are the same job (``--base-rank 0 --new-rank 1``).

Example::

    from npuprof.rundiff import diff_paths
    result = diff_paths("./before", "./after", fail_on=5)
    print(result.table())
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from ..analysis.pipeline import analyse_run, find_runs
from ..analysis.result import AnalysisResult
from ..errors import ProfilerConfigError, ProfilerDataError
from ..validate import check_bool, check_int

if TYPE_CHECKING:
    from ..analysis.diff import DiffOptions, DiffResult

# the comparison (analysis.diff, analysis.diffnames) is imported by the functions that compare: every npuprof
# command loads the ``diff`` plugin (npuprof.rundiff.plugin, in this package), only ``npuprof diff`` compares
log = logging.getLogger("npuprof")
PathLike = Union[str, Path]


def pick_run(path: PathLike, rank: Optional[int], param: str) -> Path:
    """The run at ``path`` to compare: the only one, the one of ``rank``, or the lowest rank's.

    Raises :class:`ProfilerConfigError` naming ``param`` when ``rank`` is not there, or when
    several runs have the rank (point at one of them).
    """
    from ..cluster.ranks import rank_of

    runs = find_runs(path)
    if not runs:
        raise ProfilerDataError(path, "holds no profiling run any reader understands")
    ranked = [(rank_of(r), r) for r in runs]
    if rank is None:
        if len(runs) == 1:
            return runs[0]
        lowest = min((rk for rk, _ in ranked if rk is not None), default=None)
        if lowest is None:
            raise ProfilerConfigError(param, None, f"one run: {path} holds {len(runs)} runs that record no rank "
                                                   f"({', '.join(str(r) for r in runs[:4])}); point at one of them")
        rank = lowest
        log.warning("npuprof: %s holds %d runs; comparing rank %s (choose with %s)", path, len(runs), lowest, param)
    chosen = [r for rk, r in ranked if rk == rank or (rk is None and rank == 0 and len(runs) == 1)]
    if not chosen:
        have = sorted({rk for rk, _ in ranked if rk is not None})
        raise ProfilerConfigError(param, rank, f"a rank present in {path}: {have or 'none recorded'}")
    if len(chosen) > 1:
        raise ProfilerConfigError(param, rank, f"one run: {path} holds {len(chosen)} runs of rank {rank} "
                                               f"({', '.join(str(c) for c in chosen[:4])}); point at one of them")
    return chosen[0]


def diff_options(*, steps: Any = None, base_steps: Any = None, new_steps: Any = None, by: Any = "all",
                 top: Any = 10, metric: Any = "step", name_map: Any = None, normalise: Any = True) -> DiffOptions:
    """Checked :class:`DiffOptions` from the CLI's / API's values (``ProfilerConfigError`` naming the option)."""
    from ..analysis.diff import DiffOptions, check_metric, parse_by, parse_steps
    from ..analysis.diffnames import read_name_map

    both = parse_steps("--steps", steps)
    if isinstance(name_map, (str, Path)):
        name_map = read_name_map(name_map)
    elif name_map is not None and not (isinstance(name_map, dict) and
                                       all(isinstance(k, str) and isinstance(v, str) for k, v in name_map.items())):
        raise ProfilerConfigError("--map", name_map, "a dict of base name -> new name, or a JSON file holding one")
    return DiffOptions(by=parse_by(by if not isinstance(by, (list, tuple)) else ",".join(by)),
                       top=check_int("--top", top, minimum=1),
                       base_steps=parse_steps("--base-steps", base_steps) or both,
                       new_steps=parse_steps("--new-steps", new_steps) or both,
                       metric=check_metric(metric), name_map=name_map,
                       normalise=check_bool("normalise", normalise))


def diff_paths(base: Union[PathLike, AnalysisResult], new: Union[PathLike, AnalysisResult], *,
               rank: Optional[int] = None, base_rank: Optional[int] = None, new_rank: Optional[int] = None,
               force: bool = False, **options: Any) -> DiffResult:
    """Analyse ``base`` and ``new`` (paths, or results already analysed) and compare them.

    ``options`` are :func:`diff_options`' (``steps``, ``base_steps``, ``new_steps``, ``by``, ``top``,
    ``metric``, ``name_map``, ``normalise``). Options are checked before anything is read.
    """
    from ..analysis.diff import compare

    opts = diff_options(**options)
    ranks = []        # (rank or None, the option that gave it)
    for param, own in (("--base-rank", base_rank), ("--new-rank", new_rank)):
        value, name = (own, param) if own is not None or rank is None else (rank, "--rank")
        ranks.append((None if value is None else check_int(name, value, minimum=0), name))
    # both runs picked (their ranks checked) before either is read
    picked = [side if isinstance(side, AnalysisResult) else pick_run(side, rk, param)
              for side, (rk, param) in zip((base, new), ranks)]
    cache: dict[Path, AnalysisResult] = {}
    sides = []
    for run in picked:
        if isinstance(run, AnalysisResult):
            sides.append(run)
            continue
        key = run.resolve()
        if key not in cache:
            cache[key] = analyse_run(run, force=force)
        sides.append(cache[key])
    return compare(sides[0], sides[1], opts)


__all__ = ["diff_options", "diff_paths", "pick_run"]
