"""Device compute time by family (FlashAttention, Conv, MatMul, Vector, SDMA tensor move, other Cube),
classified the way msprof-analyze's overall summary does.

A kernel launched (its ``corr`` link) from inside a framework cube operator (``aten::conv*``,
``aten::addmm``/``bmm``/``mm``/``matmul``, flash attention) belongs to that operator's family, Cube
and Vector kernels alike; other kernels go by their op type (``FlashAttention*``, ``Conv*``,
``*MatMul*``), then by whether the Cube unit ran (``aicore_time``/``mac_time`` > 0: other Cube), else
Vector. ``aclnnInplaceCopy*TensorMove*`` kernels are SDMA tensor moves. Kernels whose PMU columns are
all ``N/A`` (AI CPU, DSA) are counted apart as "Other (no PMU data)"; memory copies and fills are not
compute (docs/quality.md).

Example::

    fams = compute_families(result.events)
    print(fams.ms["Conv"])
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...events import MEMORY_ACTIVITY_TYPES, EventKind, EventTable

FA_MASK = ("flash_attention", "fusion_attention", "flashattn", "xformers_flash", "efficient_attention",
           "flash2attn")
CONV_MASK = ("aten::conv",)
MATMUL_MASK = ("aten::addmm", "aten::bmm", "aten::mm", "aten::matmul")
FAMILIES = ("Flash Attention", "Conv", "Matmul", "Vector", "SDMA(Tensor Move)", "Other Cube", "Paged Attention",
            "Other (no PMU data)")


@dataclass
class ComputeFamilies:
    """Milliseconds and kernel counts per family; ``by_type`` the ms per (family, op type)."""

    ms: dict = field(default_factory=lambda: {f: 0.0 for f in FAMILIES})
    count: dict = field(default_factory=lambda: {f: 0 for f in FAMILIES})
    by_type: dict = field(default_factory=dict)
    kernels: int = 0


def _num(obj: dict, key: str) -> float:
    v = obj.get(key)
    if v is None or v == "" or v == "N/A":
        return math.nan
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _cube_op_family(name: str) -> str:
    low = name.lower()
    if any(m in low for m in FA_MASK):
        return "Flash Attention"
    if any(m in low for m in CONV_MASK):
        return "Conv"
    if any(m in low for m in MATMUL_MASK):
        return "Matmul"
    return ""


def _kernel_family(op_type: str, name: str, args: dict) -> str:
    low_type, low_name = op_type.lower(), name.lower()
    if "flashattention" in low_type or "fusedinferattention" in low_type:
        return "Flash Attention"
    if low_type.startswith("conv"):
        return "Conv"
    if "matmul" in low_type:
        return "Matmul"
    if _num(args, "mac_time(us)") > 0 or _num(args, "aicore_time(us)") > 0:
        return "Other Cube"
    return "Vector"


def compute_families(events: EventTable) -> ComputeFamilies:
    """Device compute kernels of ``events`` summed per family (see the module's docstring)."""
    out = ComputeFamilies()
    if not len(events):
        return out
    kind, device = events["kind"], events["device"]
    krows = np.flatnonzero((kind == np.uint8(EventKind.KERNEL)) & (device >= 0))
    if not len(krows):
        return out
    kernels = events.select(krows)
    types = kernels.string_array("type")
    keep = ~np.isin(types, MEMORY_ACTIVITY_TYPES)
    kernels, types = kernels.select(np.flatnonzero(keep)), types[keep]
    names = kernels.string_array("name")
    args = kernels.args_objects(kernels["args"])
    # the host start of each kernel's launch (its corr link), 0 without one
    flow = np.zeros(len(kernels), np.int64)
    if events.has_links():
        hrows = np.flatnonzero((device < 0) & (events["corr"] >= 0))
        hc, hts = events["corr"][hrows], events["ts"][hrows]
        order = np.lexsort((hts, hc))
        hc, hts = hc[order], hts[order]
        first = np.r_[True, hc[1:] != hc[:-1]] if len(hc) else np.zeros(0, bool)
        hc, hts = hc[first], hts[first]
        kc = kernels["corr"]
        pos = np.clip(np.searchsorted(hc, kc), 0, max(len(hc) - 1, 0))
        linked = (kc >= 0) & (len(hc) > 0) & (hc[pos] == kc) if len(hc) else np.zeros(len(kc), bool)
        flow = np.where(linked, hts[pos] if len(hc) else 0, 0)
    orows = np.flatnonzero((kind == np.uint8(EventKind.OP)) & (device < 0))
    onames = events.string_array("name")[orows] if len(orows) else np.array([], dtype=object)
    cube = [(int(events["ts"][r]), int(events["ts"][r] + events["dur"][r]), fam)
            for r, n in zip(orows, onames) for fam in [_cube_op_family(str(n))] if fam]
    cube.sort(key=lambda c: c[0])
    index = 0
    dur = kernels["dur"]
    for i in np.argsort(flow, kind="stable"):
        name, op_type, a = str(names[i]), str(types[i]), args[i]
        low_name = name.lower()
        if "pagedattention" in op_type.lower():
            fam = "Paged Attention"
        elif low_name.startswith("aclnninplacecopy") and "tensormove" in low_name:
            fam = "SDMA(Tensor Move)"
        elif math.isnan(_num(a, "aiv_vec_time(us)")) and math.isnan(_num(a, "mac_time(us)")) and \
                ("aiv_vec_time(us)" in a or "mac_time(us)" in a):
            fam = "Other (no PMU data)"
        else:
            fam = ""
            start = int(flow[i])
            if start:
                while index < len(cube):
                    lo, hi, cube_fam = cube[index]
                    if hi < start:
                        index += 1
                        continue
                    if lo <= start:
                        fam = cube_fam
                    break
            fam = fam or _kernel_family(op_type, name, a)
        ms = int(dur[i]) / 1e6
        out.ms[fam] += ms
        out.count[fam] += 1
        out.by_type[(fam, op_type)] = out.by_type.get((fam, op_type), 0.0) + ms
        out.kernels += 1
    return out
