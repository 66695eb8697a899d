"""Communication rules: ``byte_alignment``, ``small_packets``, ``bandwidth``, ``slow_link``."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ....events import EventKind
from ..messages import joiner
from ..model import CheckResult, Finding, Needs, NotChecked, Rule, RuleContext

ALIGNMENT_BYTES = 512
MIN_CHECKED_BYTES = 512     # msprof-analyze's byte_alignment rule: tasks of at most 512 bytes are not judged
_COPY_TASKS = ("Memcpy", "Reduce")


def byte_alignment(ctx: RuleContext) -> CheckResult:
    """SDMA copy/reduce tasks of collectives (off-chip links, over 512 bytes) whose size is not a multiple of
    512 bytes: per operator, its checked size, the tasks' duration, the misaligned tasks' duration and the
    bandwidth. At stake per step: the misaligned tasks' time (an upper bound: aligned they still take some).
    """
    ev = ctx.result.events
    comm = ev.select(np.flatnonzero(ev["kind"] == np.uint8(EventKind.COMM)))
    args = comm.args_objects(comm["args"])
    is_task = np.array(["task_type" in a for a in args], bool)
    if not is_task.any():
        return NotChecked("communication task events (HCCL tasks with sizes: Level1 or above)")
    if not any("size" in a for a, t in zip(args, is_task) if t):
        return NotChecked("communication tasks carrying their size")
    ts = comm["ts"]
    op_rows = np.flatnonzero(~is_task)
    op_rows = op_rows[np.argsort(ts[op_rows], kind="stable")]
    op_names = comm.string_array("name")
    names = op_names
    per_op: "OrderedDict[int, list]" = OrderedDict()
    total_abnormal_ns = 0
    for i in np.flatnonzero(is_task):
        a = args[i]
        if str(names[i]).split("_")[0] not in _COPY_TASKS:
            continue
        size = a.get("size")
        if a.get("transport_type") != "SDMA" or a.get("link_type") == "ON_CHIP" or not isinstance(size, int) \
                or size <= MIN_CHECKED_BYTES:
            continue
        k = int(np.searchsorted(ts[op_rows], ts[i], side="right")) - 1
        if k < 0:
            continue
        op = int(op_rows[k])
        row = per_op.setdefault(op, [0, 0, 0, False])
        row[0] += size
        row[1] += int(comm["dur"][i])
        if size % ALIGNMENT_BYTES:
            row[2] += int(comm["dur"][i])
            row[3] = True
    evidence = []
    for op, (size, dur_ns, abnormal_ns, flagged) in sorted(per_op.items(), key=lambda kv: ts[kv[0]]):
        if not flagged:
            continue
        total_abnormal_ns += abnormal_ns
        dur_us = dur_ns / 1000.0
        evidence.append({"op name": str(op_names[op]), "total size(Byte)": size, "duration(us)": round(dur_us, 4),
                         "abnormal duration(us)": round(abnormal_ns / 1000.0, 4),
                         "bandwidth(GB/s)": round(size * 1e-9 / (dur_us * 1e-6), 4) if dur_us > 0 else 0.0,
                         "step": int(comm["step"][op])})
    if not evidence:
        return []
    return [Finding("byte_alignment", ctx.say("byte_alignment.title", count=len(evidence), bytes=ALIGNMENT_BYTES),
                    "medium", total_abnormal_ns / 1e6 / ctx.steps, evidence,
                    ctx.say("byte_alignment.advice", bytes=ALIGNMENT_BYTES))]


RULES = [
    Rule("byte_alignment", "Communication sizes aligned to 512 bytes", byte_alignment,
         Needs(events=(EventKind.COMM,), description="communication data: Level1 or above"),
         docs="docs/advise.md#byte_alignment"),
]


SMALL_PACKET_MB = {"SDMA": 16.0, "RDMA": 1.0}      # msprof-analyze's packet rule: sizes below these are small
SMALL_PACKET_RATIO = 0.2                           # ... and an issue when more than this share of ops is small


def small_packets(ctx: RuleContext) -> CheckResult:
    """Collectives moving small amounts per operator (msprof-analyze's packet rule): per transport, the
    operators whose SDMA transit is under 16 MB (RDMA: 1 MB); an issue when they are over 20 % of the
    operators that use it. Small packets leave the link's bandwidth unused and cost a launch each.
    At stake per step: the small operators' transit time."""
    from ...rank_communication import comm_events, communication_json

    per_step = communication_json(comm_events(ctx.result.events))
    stats: dict = {tr: {"count": 0, "small": 0, "ms": 0.0, "ops": []} for tr in SMALL_PACKET_MB}
    for step, kinds in per_step.items():
        for kind in ("collective", "p2p"):
            for op, info in kinds.get(kind, {}).items():
                bw = info.get("Communication Bandwidth Info", {})
                for tr, limit in SMALL_PACKET_MB.items():
                    size = bw.get(tr, {}).get("Transit Size(MB)", 0) or 0
                    if not size:
                        continue
                    st = stats[tr]
                    st["count"] += 1
                    if size < limit:
                        st["small"] += 1
                        st["ms"] += bw[tr].get("Transit Time(ms)", 0) or 0
                        st["ops"].append({"step": step, "op": op, "transport": tr, "Transit Size(MB)": round(size, 6),
                                          "Transit Time(ms)": round(bw[tr].get("Transit Time(ms)", 0) or 0, 6)})
    if not any(st["count"] for st in stats.values()):
        return NotChecked("communication operators with SDMA or RDMA transit sizes (Level1)")
    issues = {tr: st for tr, st in stats.items() if st["count"] and st["small"] / st["count"] > SMALL_PACKET_RATIO}
    if not issues:
        return []
    evidence: list = [{"transport": tr, "total count": st["count"], "small count": st["small"],
                       "small ratio": round(st["small"] / st["count"], 4), "small duration(ms)": round(st["ms"], 4),
                       "small below(MB)": SMALL_PACKET_MB[tr]} for tr, st in issues.items()]
    for st in issues.values():
        evidence += sorted(st["ops"], key=lambda r: -r["Transit Time(ms)"])[:10]
    total_ms = sum(st["ms"] for st in issues.values())
    return [Finding("small_packets", ctx.say("small_packets.title", parts=joiner(ctx.lang).join(
        ctx.say("small_packets.part", small=st["small"], count=st["count"], transport=tr, limit=SMALL_PACKET_MB[tr])
        for tr, st in issues.items())), "low", total_ms / ctx.steps, evidence, ctx.say("small_packets.advice"))]


RULES.append(Rule("small_packets", "Small communication packets", small_packets,
                  Needs(events=(EventKind.COMM,), description="communication data: Level1 or above"),
                  docs="docs/advise.md#small_packets"))


# -- bandwidth and slow_link -------------------------------------------------------------------------------
# msprof-analyze's bandwidth rule (advisor/rules/en/bandwidth_contention.yaml): an SDMA link is slow below
# 0.8 x its 18 GB/s baseline. Other link types have no published baseline here: --link-gbps TYPE=X gives one.
DEFAULT_LINK_GBPS = {"HCCS": 18.0, "SDMA": 18.0}
BELOW_SHARE = 0.8
LINK_TYPES = ("HCCS", "PCIE", "SIO", "RDMA")


def bandwidth(ctx: RuleContext) -> CheckResult:
    """Communication operators whose transit over a link type runs below ``0.8 x`` that type's bandwidth
    (``--link-gbps TYPE=GBPS``; HCCS defaults to msprof-analyze's 18 GB/s SDMA baseline), per link type
    from each operator's Communication Bandwidth Info. At stake per step: the time those transits take beyond
    what they would at the link's bandwidth."""
    from ...rank_communication import comm_events, communication_json

    reference = {**DEFAULT_LINK_GBPS, **(ctx.options.get("link_gbps") or {})}
    per_step = communication_json(comm_events(ctx.result.events))
    per_type: dict = {}
    for step, kinds in per_step.items():
        for kind in ("collective", "p2p"):
            for op, info in kinds.get(kind, {}).items():
                if op == "Total Op Info":
                    continue
                for tr, bw in info.get("Communication Bandwidth Info", {}).items():
                    size, ms = bw.get("Transit Size(MB)", 0) or 0, bw.get("Transit Time(ms)", 0) or 0
                    if tr in LINK_TYPES and size and ms:
                        per_type.setdefault(tr, []).append((step, op, float(size), float(ms)))
    if not per_type:
        return NotChecked("communication operators with transit sizes per link type (Level1: HCCL tasks)")
    summary, slow_ops, unjudged = [], [], []
    total_ms = 0.0
    for tr, ops in sorted(per_type.items()):
        size, ms = sum(o[2] for o in ops), sum(o[3] for o in ops)
        ref = reference.get(tr)
        if ref is None:
            unjudged.append(tr)
            continue
        below = [o for o in ops if o[2] / o[3] < BELOW_SHARE * ref]
        lost = sum(o[3] - o[2] / ref for o in below)
        total_ms += lost
        summary.append({"link type": tr, "operators": len(ops), "below": len(below), "bandwidth(GB/s)": round(size / ms, 4),
                        "reference(GB/s)": ref, "judged below(GB/s)": round(BELOW_SHARE * ref, 4),
                        "time over reference(ms)": round(lost, 4)})
        slow_ops += [{"step": s, "op": op, "link type": tr, "Transit Size(MB)": round(sz, 6),
                      "Transit Time(ms)": round(t, 6), "bandwidth(GB/s)": round(sz / t, 4),
                      "time over reference(ms)": round(t - sz / ref, 6)} for s, op, sz, t in below]
    if unjudged:
        summary.append({"not judged": ", ".join(unjudged), "needs": "--link-gbps " + ",".join(f"{t}=GBPS" for t in unjudged)})
    if not slow_ops:
        return [] if summary and any("link type" in r for r in summary) else \
            NotChecked("the bandwidth of " + ", ".join(unjudged) + ": --link-gbps TYPE=GBPS")
    slow_ops.sort(key=lambda r: -r["time over reference(ms)"])
    return [Finding("bandwidth", ctx.say("bandwidth.title", parts=joiner(ctx.lang).join(
        ctx.say("bandwidth.part", below=r["below"], count=r["operators"], link=r["link type"],
                limit=r["judged below(GB/s)"]) for r in summary if r.get("below"))),
        "medium", total_ms / ctx.steps, summary + slow_ops[:20], ctx.say("bandwidth.advice"))]


def _run_links(result) -> dict:
    """(src-dst, link type) -> [size MB, time ms] over a run's operators (LOCAL copies left out)."""
    from ...rank_communication import comm_events, communication_matrix_json

    out: dict = {}
    for kinds in communication_matrix_json(comm_events(result.events)).values():
        for ops in kinds.values():
            ranked = any("-total@" in k for k in ops)
            for key, links in ops.items():
                if ranked and "-total@" not in key:
                    continue
                for link, info in links.items():
                    tr = str(info.get("Transport Type", ""))
                    if tr in ("LOCAL", "") or not info.get("Transit Time(ms)"):
                        continue
                    acc = out.setdefault((link, tr), [0.0, 0.0])
                    acc[0] += float(info["Transit Size(MB)"])
                    acc[1] += float(info["Transit Time(ms)"])
    return out


Z_LIMIT, MAD_SCALE, MIN_GAP = 3.5, 1.4826, 0.05


def slow_link(ctx: RuleContext) -> CheckResult:
    """Links (``src-dst`` rank pairs) slower than their peers of the same link type: a link's bandwidth
    (its transits' size over time, all operators and steps) below the type's median by more than
    ``max(3.5 x 1.4826 x MAD, 5 % of the median)``. A run compares the links it records (a rank's links to
    each peer); a job pools every rank's links. At stake per step: the slow links' time beyond what they
    would take at the median bandwidth."""
    ranks = ctx.options.get("ranks") or {None: ctx.result}
    links: dict = {}
    for res in ranks.values():
        for key, (size, ms) in _run_links(res).items():
            acc = links.setdefault(key, [0.0, 0.0])
            acc[0] += size
            acc[1] += ms
    if not links:
        return NotChecked("communication links with sizes and times (src-dst rank pairs: Level1 HCCL tasks)")
    by_type: dict = {}
    for (link, tr), (size, ms) in links.items():
        by_type.setdefault(tr, []).append((link, size, ms, size / ms))
    judged = {tr: v for tr, v in by_type.items() if len(v) >= 3}
    if not judged:
        return NotChecked("at least 3 links of one type to compare (" + ", ".join(
            f"{tr}: {len(v)}" for tr, v in sorted(by_type.items())) + ")")
    evidence: list = []
    total_ms = 0.0
    for tr, rows in sorted(judged.items()):
        bws = np.array([r[3] for r in rows])
        med = float(np.median(bws))
        mad = float(np.median(np.abs(bws - med)))
        limit = max(Z_LIMIT * MAD_SCALE * mad, MIN_GAP * med)
        for link, size, ms, bw in sorted(rows, key=lambda r: r[3]):
            if med - bw > limit:
                lost = ms - size / med
                total_ms += lost
                evidence.append({"link": link, "link type": tr, "bandwidth(GB/s)": round(bw, 4),
                                 "median of type(GB/s)": round(med, 4), "links of type": len(rows),
                                 "Transit Size(MB)": round(size, 6), "Transit Time(ms)": round(ms, 6),
                                 "time over median(ms)": round(lost, 6)})
    if not evidence:
        return []
    return [Finding("slow_link", ctx.say("slow_link.title", count=len(evidence), parts=joiner(ctx.lang).join(
        ctx.say("slow_link.part", link=r["link"], link_type=r["link type"], bw=r["bandwidth(GB/s)"],
                median=r["median of type(GB/s)"]) for r in evidence[:3])),
        "medium", total_ms / ctx.steps, evidence, ctx.say("slow_link.advice"))]


RULES += [
    Rule("bandwidth", "Communication below the link's bandwidth", bandwidth,
         Needs(events=(EventKind.COMM,), description="communication data: Level1 or above"),
         docs="docs/advise.md#bandwidth"),
    Rule("slow_link", "Links slower than their peers", slow_link,
         Needs(events=(EventKind.COMM,), description="communication data: Level1 or above"),
         docs="docs/advise.md#slow_link", scope="both"),
]
