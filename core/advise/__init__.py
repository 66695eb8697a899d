"""``npuprof advise``: the rules every plugin registers, run over a run (or each run of a job).

The rules themselves are pure units in :mod:`npuprof.analysis.advice`; this module gathers them
from the plugin host (``npuprof_advice_rules``), reads the runs and runs them.

Example::

    from npuprof.advise import advise_path
    for advice in advise_path("./my_run", min_ms=1.0):
        for f in advice.findings:
            print(f.rule, round(f.at_stake_ms, 3), f.title)
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

from ..errors import ProfilerConfigError, ProfilerDataError
from ..validate import check_number

if TYPE_CHECKING:
    from ..analysis.advice import Advice, Rule
    from ..analysis.result import AnalysisResult

# the rules and the analysis are imported by the functions that run them: every npuprof command loads the
# ``advise`` plugin (npuprof.advise.plugin, in this package), only ``npuprof advise`` and ``cluster --explain`` advise


def registered_rules() -> list[Rule]:
    """Every rule the plugins register: the built-in plugins' first, then the others in the order they
    were loaded; a rule whose id is taken is left out with a warning naming both plugins (a third-party
    rule never replaces a built-in one)."""
    from ..analysis.advice import Rule
    from ..plugins.manager import get_plugin_host

    return [rule for rule, _, _ in
            get_plugin_host().contributions("npuprof_advice_rules", Rule, lambda r: r.id, "rule id", "a Rule")]


def parse_rule_ids(value: Any) -> Optional[list[str]]:
    """``--rules ID,...`` -> ids (None: all); checked against the registered rules."""
    from ..analysis.advice import select_rules

    if value is None:
        return None
    ids = value.split(",") if isinstance(value, str) else list(value)
    select_rules(registered_rules(), ids)
    return [i.strip() for i in ids if i.strip()]


def parse_ai_cores(value: Any) -> dict:
    """``--ai-cores CUBE[,VECTOR]`` -> {"cube": n, "vector": m} (VECTOR defaults to CUBE)."""
    parts = [p.strip() for p in str(value).split(",")] if not isinstance(value, (list, tuple)) else list(value)
    try:
        numbers = [int(p) for p in parts]
    except (TypeError, ValueError):
        numbers = []
    if not 1 <= len(numbers) <= 2 or any(n < 1 for n in numbers):
        raise ProfilerConfigError("--ai-cores", value, "CUBE[,VECTOR]: one or two core counts >= 1, e.g. 24,48")
    return {"cube": numbers[0], "vector": numbers[-1]}


def parse_link_gbps(value: Any) -> dict:
    """``--link-gbps TYPE=GBPS[,...]`` -> {"HCCS": 18.0, ...}; types among HCCS, PCIE, SIO, RDMA."""
    from ..analysis.advice.rules.communication import LINK_TYPES

    allowed = f"TYPE=GBPS[,...] with TYPE among {', '.join(LINK_TYPES)} and GBPS > 0, e.g. HCCS=18,RDMA=12.5"
    out: dict = {}
    for part in str(value).split(","):
        name, sep, number = part.partition("=")
        try:
            gbps = float(number)
        except ValueError:
            gbps = math.nan
        if not sep or name.strip().upper() not in LINK_TYPES or not gbps > 0 or math.isinf(gbps):
            raise ProfilerConfigError("--link-gbps", value, allowed)
        out[name.strip().upper()] = gbps
    return out


def advise_path(path: Union[str, Path, AnalysisResult], *, rules: Optional[Iterable[str]] = None,
                min_ms: Any = 0.0, force: bool = False, peak_tflops: Any = None,
                peak_device: Optional[str] = None, ai_cores: Any = None,
                device_memory_gb: Any = None, link_gbps: Any = None, lang: str = "en") -> list[Advice]:
    """The advice of each run at ``path`` (a run, a trace file, or a folder of runs such as a job).

    When ``path`` holds the runs of several ranks (one run each), the job rules' advice comes first
    (``run`` is ``"job: PATH"``). ``rules`` restricts to those ids; ``min_ms`` hides findings with less at stake per step (counted in
    ``below_min``). ``peak_tflops`` (or ``peak_device``, a name in the documented peak table) is the
    device's peak for the ``mfu`` rule; ``link_gbps`` (``"HCCS=18,RDMA=12.5"`` or a dict) the links' bandwidth
    for ``bandwidth``; ``lang`` the findings' language (``en``, ``zh``). Options are checked before anything is read (``ProfilerConfigError``).
    """
    from ..analysis.advice import advise, advise_job, select_rules
    from ..analysis.advice.flops import PEAK_TFLOPS
    from ..analysis.advice.messages import check_lang
    from ..analysis.pipeline import analyse_run, find_runs
    from ..analysis.result import AnalysisResult

    threshold = check_number("--min-ms", min_ms, 0.0)
    options: dict = {}
    if peak_tflops is not None:
        options["peak_tflops"] = check_number("--peak-tflops", peak_tflops, 0.0, exclusive_min=True)
    if peak_device is not None:
        if str(peak_device).lower() not in PEAK_TFLOPS:
            raise ProfilerConfigError("--peak", peak_device, f"one of {', '.join(sorted(PEAK_TFLOPS))}")
        options["peak_device"] = str(peak_device).lower()
    if ai_cores is not None:
        options["ai_cores"] = parse_ai_cores(ai_cores)
    if device_memory_gb is not None:
        options["device_memory_gb"] = check_number("--device-memory-gb", device_memory_gb, 0.0, exclusive_min=True)
    if link_gbps is not None:
        options["link_gbps"] = dict(link_gbps) if isinstance(link_gbps, dict) else parse_link_gbps(link_gbps)
    options["lang"] = check_lang(lang)
    every = registered_rules()
    only = None if rules is None else list(rules)
    select_rules(every, only)
    if isinstance(path, AnalysisResult):
        return [advise(path, every, only=only, min_ms=threshold, options=options)]
    runs = find_runs(path)
    if not runs:
        raise ProfilerDataError(path, "holds no profiling run any reader understands")
    results = [analyse_run(run, force=force) for run in runs]
    advices = [advise(res, every, only=only, min_ms=threshold, options=options) for res in results]
    ranks = {res.rank: res for res in results}
    if len(results) > 1 and len(ranks) == len(results):
        advices.insert(0, advise_job(f"job: {path}", ranks, every, only=only, min_ms=threshold, options=options))
    return advices


def explain_job(name: str, runs_by_rank: dict, min_ms: float = 0.0) -> Advice:
    """The ``slow_rank`` rule over a job's runs (rank -> run directory): which rank is slow and where its
    extra step time goes (``npuprof cluster --explain``)."""
    from ..analysis.advice import advise_job
    from ..analysis.pipeline import analyse_run

    ranks = {rank: analyse_run(Path(run)) for rank, run in sorted(runs_by_rank.items())}
    return advise_job(name, ranks, registered_rules(), only=["slow_rank"], min_ms=min_ms)


__all__ = ["advise_path", "explain_job", "parse_ai_cores", "parse_link_gbps", "parse_rule_ids", "registered_rules"]
