"""Communication events of one rank: operators, link transfers, and the
per-rank ``communication.json`` / ``communication_matrix.json`` files that
msprof-analyze ``cluster`` reads.

Convention for :data:`EventKind.COMM <npuprof.events.EventKind>` events
(parsers and user code follow it; ``args`` is a JSON object):

* an **operator** (``AllReduce``, ``Broadcast``, ``Send`` ...) has ``type`` =
  op type, ``name`` = op instance name and ``args`` ``{"group": "<name>"}``
  (optional ``"size"`` bytes, ``"wait_ns"`` time spent waiting for peers);
* a **link transfer** (a CANN communication task, a socket send) also carries
  ``"src_rank"``, ``"dst_rank"`` (global ranks), ``"size"`` (bytes) and
  ``"transport"`` (``LOCAL``, ``HCCS``, ``PCIE``, ``RDMA``, ``SIO``, ``TCP``);
  it belongs to the operator of the same rank and group whose span holds its
  start. A rank's copy into its own buffer is the link ``r-r`` (LOCAL);
* any other **task** of an operator (``"task_type"`` in args, e.g. HCCL's
  ``Notify_Wait`` or a ``Reduce_Inline`` without a peer) is neither: its time
  is inside its operator's.

Example::

    >>> import json
    >>> from npuprof.events import EventTable, EventKind
    >>> ev = EventTable.from_records(ts=[0, 10], dur=[100, 50], kind=[EventKind.COMM] * 2,
    ...     name=["allreduce_1", "allreduce_1"], type="AllReduce",
    ...     args=['{"group": "world"}',
    ...           '{"group": "world", "src_rank": 0, "dst_rank": 1, "size": 1048576, "transport": "HCCS"}'])
    >>> c = comm_events(ev)
    >>> len(c.ops["ts"]), c.links["size"].tolist()
    (1, [1048576.0])
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..events import EventKind, EventTable

P2P_WORDS = ("send", "recv", "receive")
MB = 1024.0 * 1024.0


def _parse_args(text: str) -> dict:
    if not text or not text.startswith("{"):
        return {}
    try:
        val = json.loads(text)
    except ValueError:
        return {}
    return val if isinstance(val, dict) else {}


def _int_or(v: Any, default: int) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


@dataclass
class CommEvents:
    """Column dicts of a rank's communication operators and link transfers."""

    ops: dict
    links: dict

    @property
    def has_ops(self) -> bool:
        return len(self.ops["ts"]) > 0

    @property
    def has_links(self) -> bool:
        return len(self.links["ts"]) > 0


def comm_events(events: EventTable) -> CommEvents:
    """Split a rank's COMM events into operators and link transfers.

    Each distinct ``args`` string is parsed once (vectorised over events).
    """
    comm = events.of_kind(EventKind.COMM)
    codes = comm["args"]
    uniq, inv = np.unique(codes, return_inverse=True) if len(comm) else (np.zeros(0, np.int32), np.zeros(0, int))
    parsed = [_parse_args(comm.strings[c]) for c in uniq.tolist()]
    group = np.array([str(p.get("group", p.get("group_name", "default"))) for p in parsed] or [""], dtype=object)
    src = np.array([_int_or(p.get("src_rank"), -1) for p in parsed] or [-1], dtype=np.int64)
    dst = np.array([_int_or(p.get("dst_rank"), -1) for p in parsed] or [-1], dtype=np.int64)
    size = np.array([float(p.get("size", 0) or 0) for p in parsed] or [0.0], dtype=np.float64)
    wait = np.array([float(p.get("wait_ns", 0) or 0) for p in parsed] or [0.0], dtype=np.float64)
    transport = np.array([str(p.get("transport", "UNKNOWN")) for p in parsed] or [""], dtype=object)
    is_link = (src >= 0) & (dst >= 0)
    # a task of an operator (HCCL's Notify/Memcpy/Reduce tasks) that is no transfer: neither op nor link
    is_task = np.array([("task_type" in p) for p in parsed] or [False], dtype=bool) & ~is_link
    types = comm.string_array("type") if len(comm) else np.zeros(0, dtype=object)
    names = comm.string_array("name") if len(comm) else np.zeros(0, dtype=object)
    types = np.where(types == "", names, types)
    link_mask = is_link[inv] if len(comm) else np.zeros(0, bool)
    op_mask = ~(is_link | is_task)[inv] if len(comm) else np.zeros(0, bool)

    def cols(mask: np.ndarray, with_links: bool) -> dict:
        sel = inv[mask]
        out = {"ts": comm["ts"][mask], "dur": comm["dur"][mask], "step": comm["step"][mask],
               "type": types[mask], "name": names[mask], "group": group[sel], "size": size[sel],
               "wait": wait[sel]}
        if with_links:
            out.update({"src": src[sel], "dst": dst[sel], "transport": transport[sel]})
        return out

    return CommEvents(ops=cols(op_mask, False), links=cols(link_mask, True))


def is_p2p(op_type: str) -> bool:
    low = op_type.lower()
    return any(w in low for w in P2P_WORDS)


def link_owners(c: CommEvents) -> np.ndarray:
    """Index of the operator holding each link (same group, start inside), -1 if none."""
    n_links = len(c.links["ts"])
    owner = np.full(n_links, -1, dtype=np.int64)
    if not n_links or not c.has_ops:
        return owner
    ots, oend, ogroup = c.ops["ts"], c.ops["ts"] + c.ops["dur"], c.ops["group"]
    order = np.argsort(ots, kind="stable")
    sts = ots[order]
    for i, (t, g) in enumerate(zip(c.links["ts"].tolist(), c.links["group"].tolist())):
        j = int(np.searchsorted(sts, t, side="right")) - 1
        while j >= 0:
            k = order[j]
            if oend[k] >= t and ogroup[k] == g:
                owner[i] = k
                break
            if t - sts[j] > 10**10:  # no op spans 10 s back; stop scanning
                break
            j -= 1
    return owner


def op_instance_names(c: CommEvents) -> list[str]:
    """Unique ``name@group`` per operator (repeats within a step get ``_<n>``)."""
    seen: dict[tuple, int] = {}
    out = []
    for step, name, group in zip(c.ops["step"].tolist(), c.ops["name"].tolist(), c.ops["group"].tolist()):
        k = (step, name, group)
        n = seen.get(k, 0)
        seen[k] = n + 1
        out.append(f"{name}{'' if n == 0 else f'_{n}'}@{group}")
    return out


def alignment_keys(c: CommEvents) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Keys matching the same collective across ranks: step|type|group|ordinal."""
    order = np.lexsort((c.ops["ts"],))
    seen: dict[tuple, int] = {}
    keys = []
    for i in order.tolist():
        k = (int(c.ops["step"][i]), c.ops["type"][i], c.ops["group"][i])
        n = seen.get(k, 0)
        seen[k] = n + 1
        keys.append(f"{k[0]}|{k[1]}|{k[2]}|{n}")
    return keys, c.ops["ts"][order], (c.ops["ts"] + c.ops["dur"])[order]


def _step_key(step: int) -> str:
    return f"step{step}" if step >= 0 else "step"


def communication_json(c: CommEvents) -> dict:
    """The per-rank ``communication.json`` (torch_npu/MindSpore layout), times from events."""
    out: dict = {}
    owner = link_owners(c)
    names = op_instance_names(c)
    for i, name in enumerate(names):
        step = int(c.ops["step"][i])
        kind = "p2p" if is_p2p(str(c.ops["type"][i])) else "collective"
        mine = owner == i
        transit_ns = float(c.links["dur"][mine].sum()) if mine.any() else 0.0
        elapse = float(c.ops["dur"][i]) / 1e6
        transit = transit_ns / 1e6
        wait = float(c.ops["wait"][i]) / 1e6
        bw: dict = {}
        for tr in sorted(set(c.links["transport"][mine].tolist())):
            sel = mine & (c.links["transport"] == tr)
            t_ms = float(c.links["dur"][sel].sum()) / 1e6
            s_mb = float(c.links["size"][sel].sum()) / MB
            dist: dict = {}
            for s, d in zip(c.links["size"][sel].tolist(), c.links["dur"][sel].tolist()):
                key = str(round(s / MB, 6))
                cnt, tm = dist.get(key, [0, 0.0])
                dist[key] = [cnt + 1, round(tm + d / 1e6, 6)]
            bw[tr] = {"Transit Time(ms)": round(t_ms, 6), "Transit Size(MB)": round(s_mb, 6),
                      "Bandwidth(GB/s)": round(s_mb / 1024.0 / (t_ms / 1e3), 4) if t_ms > 0 else 0,
                      "Large Packet Ratio": 0, "Size Distribution": dist}
        info = {"Start Timestamp(us)": round(float(c.ops["ts"][i]) / 1e3, 3),
                "Elapse Time(ms)": round(elapse, 6), "Transit Time(ms)": round(transit, 6),
                "Wait Time(ms)": round(wait, 6), "Synchronization Time(ms)": 0.0,
                "Idle Time(ms)": round(max(elapse - transit - wait, 0.0), 6),
                "Wait Time Ratio": round(wait / (wait + transit), 4) if wait + transit > 0 else 0,
                "Synchronization Time Ratio": 0}
        out.setdefault(_step_key(step), {"collective": {}, "p2p": {}})[kind][name] = {
            "Communication Time Info": info, "Communication Bandwidth Info": bw}
    for step_dict in out.values():
        for kind, ops in step_dict.items():
            if ops:
                ops["Total Op Info"] = _total_op_info(list(ops.values()))
    return out


def _total_op_info(ops: list) -> dict:
    """The per-step "Total Op Info" entry torch_npu writes: sums over the step's ops."""
    keys = ("Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)", "Synchronization Time(ms)", "Idle Time(ms)")
    t = {k: round(sum(o["Communication Time Info"][k] for o in ops), 6) for k in keys}
    wait, transit, sync = t["Wait Time(ms)"], t["Transit Time(ms)"], t["Synchronization Time(ms)"]
    t["Wait Time Ratio"] = round(wait / (wait + transit), 4) if wait + transit > 0 else 0
    t["Synchronization Time Ratio"] = round(sync / (sync + transit), 4) if sync + transit > 0 else 0
    bw: dict = {}
    for o in ops:
        for tr, v in o["Communication Bandwidth Info"].items():
            a = bw.setdefault(tr, {"Transit Time(ms)": 0.0, "Transit Size(MB)": 0.0, "Bandwidth(GB/s)": 0,
                                   "Large Packet Ratio": 0, "Size Distribution": {}})
            a["Transit Time(ms)"] = round(a["Transit Time(ms)"] + v["Transit Time(ms)"], 6)
            a["Transit Size(MB)"] = round(a["Transit Size(MB)"] + v["Transit Size(MB)"], 6)
            for size, (cnt, tm) in v["Size Distribution"].items():
                c0, t0 = a["Size Distribution"].get(size, [0, 0.0])
                a["Size Distribution"][size] = [c0 + cnt, round(t0 + tm, 6)]
    for a in bw.values():
        t_ms, s_mb = a["Transit Time(ms)"], a["Transit Size(MB)"]
        a["Bandwidth(GB/s)"] = round(s_mb / 1024.0 / (t_ms / 1e3), 4) if t_ms > 0 else 0
    return {"Communication Time Info": t, "Communication Bandwidth Info": bw}


def communication_matrix_json(c: CommEvents) -> dict:
    """The per-rank ``communication_matrix.json``: per step and op type, ``"src-dst"`` links."""
    out: dict = {}
    if not c.has_links:
        return out
    owner = link_owners(c)
    op_type = np.where(owner >= 0, c.ops["type"][np.maximum(owner, 0)] if c.has_ops else "", c.links["type"])
    agg: dict = {}
    for i in range(len(c.links["ts"])):
        step = int(c.links["step"][i])
        t = str(op_type[i])
        kind = "p2p" if is_p2p(t) else "collective"
        key = (step, kind, f"{t}@{c.links['group'][i]}", f"{int(c.links['src'][i])}-{int(c.links['dst'][i])}")
        a = agg.setdefault(key, [str(c.links["transport"][i]), 0.0, 0.0, str(c.links["name"][i])])
        a[1] += float(c.links["dur"][i]) / 1e6
        a[2] += float(c.links["size"][i]) / MB
    for (step, kind, op, link), (tr, t_ms, s_mb, name) in sorted(agg.items()):
        out.setdefault(_step_key(step), {"collective": {}, "p2p": {}})[kind].setdefault(op, {})[link] = {
            "Transport Type": tr, "Transit Time(ms)": round(t_ms, 6), "Transit Size(MB)": round(s_mb, 6),
            "Bandwidth(GB/s)": round(s_mb / 1024.0 / (t_ms / 1e3), 4) if t_ms > 0 else 0, "Op Name": name}
    return out
