"""A job's communication across ranks: ``cluster_communication.json`` and
``cluster_communication_matrix.json``, built from every rank's own
``communication.json`` / ``communication_matrix.json`` contents
(:func:`npuprof.analysis.rank_communication.communication_json`) as msprof-analyze
``cluster`` builds them, so the two tools give the same files on the same job:

* operators are grouped by the ranks of their group (``"(0, 1)"``: the ranks
  whose data hold an operator of that group), then by step and operator;
  each operator holds every rank's numbers, and ``Total Op Info@<group>``
  sums them per rank (times, sizes, size distribution; ratios and
  bandwidths recomputed);
* a rank's matrix names links by the group's *local* ranks; they become global
  through the group's rank list (``parallel_group_info`` in a run's
  ``profiler_metadata.json``) or, failing that, through each rank's own
  ``r-r`` link. A link whose ranks cannot be mapped is left out, as
  msprof-analyze leaves it out. ``Total Op Info@<group>`` sums the links of
  every operator that is not a ranked entry (``top1``/``middle``/``bottom``).

Example::

    summaries = [summarise_rank(t) for t in tasks]
    doc = cluster_communication(summaries)       # {"(0, 1)": {"step50": {op: {rank: info}}}}
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Sequence

from ..analysis.rank_communication import TOTAL_OP, total_op_info

RANKED = ("middle", "top", "bottom")


def _ratio(part: float, whole: float) -> float:
    return round(part / whole, 4) if abs(whole) > 1e-15 else 0


def _ops_by_rank(summaries: Sequence[Any], attr: str) -> list[tuple[int, str, str, str, dict]]:
    """(rank, step, kind, op name, info) of every rank's per-rank file, Total Op Info excluded."""
    out = []
    for s in summaries:
        for step, kinds in getattr(s, attr).items():
            for kind, ops in kinds.items():
                for name, info in ops.items():
                    if name != TOTAL_OP:
                        out.append((s.rank, step, kind, name, info))
    return out


def group_ranks(summaries: Sequence[Any]) -> dict[str, tuple[int, ...]]:
    """Group -> the ranks whose operators carry it (msprof-analyze's communication groups)."""
    members: dict[str, set] = defaultdict(set)
    for rank, _, _, name, _ in _ops_by_rank(summaries, "communication"):
        members[name.rpartition("@")[2]].add(rank)
    return {g: tuple(sorted(r)) for g, r in members.items()}


def cluster_communication(summaries: Sequence[Any]) -> dict:
    """``cluster_communication.json``: per rank set, step and operator, every rank's time and bandwidth."""
    groups = {g: str(r) for g, r in group_ranks(summaries).items()}    # each group's key made once
    out: dict = {}
    for rank, step, _, name, info in _ops_by_rank(summaries, "communication"):
        ranks = groups[name.rpartition("@")[2]]
        out.setdefault(ranks, {}).setdefault(step, {}).setdefault(name, {})[str(rank)] = info
    for steps in out.values():
        for ops in steps.values():
            _add_total_op_info(ops)
    return out


def _add_total_op_info(ops: dict) -> None:
    per_rank: dict = defaultdict(lambda: defaultdict(list))        # group -> rank -> its operators' infos
    for name, infos in list(ops.items()):
        for rank, info in infos.items():
            per_rank[name.rpartition("@")[2]][rank].append(info)
    for group, ranks in per_rank.items():
        ops[f"{TOTAL_OP}@{group}"] = {rank: total_op_info(infos) for rank, infos in ranks.items()}


def cluster_communication_matrix(summaries: Sequence[Any]) -> dict:
    """``cluster_communication_matrix.json``: per rank set, step and operator, the links in global ranks."""
    groups = {g: str(r) for g, r in group_ranks(summaries).items()}    # each group's key made once
    local_to_global: dict[str, dict[str, int]] = {}
    for s in summaries:
        for group, ranks in getattr(s, "parallel_groups", {}).items():
            local_to_global.setdefault(group, {str(i): r for i, r in enumerate(sorted(ranks))})
    per_op: dict = {}
    for rank, step, _, name, links in _ops_by_rank(summaries, "communication_matrix"):
        group = name.rpartition("@")[2]
        ranks = groups[group] if group in groups else str((rank,))
        per_op.setdefault(ranks, {}).setdefault(step, {}).setdefault(name, {})[rank] = links
        for link in links:
            src, _, dst = link.partition("-")
            if src == dst:
                local_to_global.setdefault(group, {}).setdefault(src, rank)
    out: dict = {}
    for ranks, steps in per_op.items():
        for step, ops in steps.items():
            merged = {name: _merge_links(per_rank, local_to_global.get(name.rpartition("@")[2], {}))
                      for name, per_rank in ops.items()}
            _add_total_links(merged)
            out.setdefault(ranks, {})[step] = merged
    return out


def _sum_links(link_maps: Iterable[dict]) -> dict:
    """Links of several maps summed per link (the last transport and op name kept, as msprof-analyze)."""
    summed: dict = defaultdict(lambda: {"Transport Type": "", "Transit Time(ms)": 0, "Transit Size(MB)": 0,
                                        "Op Name": ""})
    for links in link_maps:
        for link, info in links.items():
            a = summed[link]
            a["Transport Type"] = info.get("Transport Type")
            a["Op Name"] = info.get("Op Name", "")
            a["Transit Time(ms)"] += info.get("Transit Time(ms)", 0)
            a["Transit Size(MB)"] += info.get("Transit Size(MB)", 0)
    return summed


def _merge_links(per_rank: dict, local_to_global: dict[str, int]) -> dict:
    summed = _sum_links(per_rank.values())
    out = {}
    for link, info in summed.items():
        src, _, dst = link.partition("-")
        if src not in local_to_global or dst not in local_to_global:
            continue
        info["Bandwidth(GB/s)"] = _ratio(info["Transit Size(MB)"], info["Transit Time(ms)"])
        out[f"{local_to_global[src]}-{local_to_global[dst]}"] = info
    return out


def _add_total_links(ops: dict) -> None:
    groups: dict = defaultdict(list)
    for name, links in list(ops.items()):
        if not any(word in name for word in RANKED):     # a ranked entry repeats an operator already counted
            groups[name.rpartition("@")[2]].append(links)
    for group, link_maps in groups.items():
        total = _sum_links(link_maps)
        for info in total.values():
            info["Bandwidth(GB/s)"] = _ratio(info["Transit Size(MB)"], info["Transit Time(ms)"])
        ops[f"{TOTAL_OP}@{group}"] = dict(total)
