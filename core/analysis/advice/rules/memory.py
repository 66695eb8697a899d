"""The ``memory`` rule: the allocated-memory peak, what was alive then, and memory reserved but unused."""
from __future__ import annotations

from ....events import EventKind
from ...memory import memory_summary
from ..model import CheckResult, Finding, Needs, NotChecked, Rule, RuleContext

TOP = 10


def memory(ctx: RuleContext) -> CheckResult:
    """The peak of allocated memory (npuprof's memory headline: the largest any source records), its step,
    the operators whose allocations were alive at it, and each series' peak (Reserved over Allocated is
    the allocator's cache and fragmentation). With ``--device-memory-gb`` the peak's share of the device.
    At stake: 0 ms. Memory costs no step time by itself; the finding says how close the run is to the
    device's memory, for larger batches or fewer recomputations."""
    summary = memory_summary(ctx.result.events, top=TOP)
    if summary.peak_mb is None:
        return NotChecked("allocated-memory data: profile_memory=True")
    device_gb = ctx.options.get("device_memory_gb")
    head: dict = {"peak allocated(MB)": round(summary.peak_mb, 3), "step": summary.peak_step,
            "source": summary.peak_source, "allocations": summary.allocations}
    reserved = [s for s in summary.series if "Reserved" in s.name]
    if reserved:
        top_reserved = max(reserved, key=lambda s: s.peak)
        head["peak reserved(MB)"] = round(top_reserved.peak, 3)
        head["reserved series"] = top_reserved.name
    share = None
    if device_gb:
        share = round(summary.peak_mb / (device_gb * 1024) * 100, 2)
        head["device memory(MB)"] = device_gb * 1024
        head["share of device(%)"] = share
    evidence = [head]
    evidence += [{"operator": name, "allocations alive": count, "MB alive at peak": round(size / 2**20, 3)}
                 for name, count, size in summary.live_by_operator[:TOP]]
    evidence += [{"series": s.name, "samples": s.samples, "peak": round(s.peak, 3), "last": round(s.last, 3)}
                 for s in summary.series]
    severity = "high" if share is not None and share >= 90 else "info"
    title = ctx.say("memory.title", mb=summary.peak_mb) + (ctx.say("memory.title.step", step=summary.peak_step)
                                                           if summary.peak_step is not None else "")
    if share is not None:
        title += ctx.say("memory.title.share", share=share, gb=device_gb)
    return [Finding("memory", title, severity, 0.0, evidence, ctx.say("memory.advice"))]


RULES = [
    Rule("memory", "Memory peak and what was alive then", memory,
         Needs(events=(EventKind.MEMORY,), description="profile_memory=True", reads=("operator_memory",
                                                                                     "memory_record")),
         docs="docs/advise.md#memory"),
]
