"""Communication rules: ``byte_alignment``."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ....events import EventKind
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
    return [Finding("byte_alignment", f"{len(evidence)} communication operator(s) move data not aligned to "
                                      f"{ALIGNMENT_BYTES} bytes", "medium",
                    total_abnormal_ns / 1e6 / ctx.steps, evidence,
                    f"Pad the tensors a collective sends (bucket sizes, fused gradient buffers) to a multiple of "
                    f"{ALIGNMENT_BYTES} bytes: SDMA copies of unaligned sizes run below the link's bandwidth.")]


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
    return [Finding("small_packets", "Small communication packets: " + ", ".join(
        f"{st['small']} of {st['count']} {tr} operators under {SMALL_PACKET_MB[tr]:g} MB" for tr, st in issues.items()),
        "low", total_ms / ctx.steps, evidence,
        "Fewer, larger collectives: larger gradient buckets, gradient accumulation, a larger batch; fused "
        "optimizers; ZeRO-2/1 instead of ZeRO-3 where memory allows.")]


RULES.append(Rule("small_packets", "Small communication packets", small_packets,
                  Needs(events=(EventKind.COMM,), description="communication data: Level1 or above"),
                  docs="docs/advise.md#small_packets"))
