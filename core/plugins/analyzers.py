"""Built-in plugin: npuprof's analyzers, family by family, in the order they run.

steps (:mod:`npuprof.analysis.step_breakdown`), operators
(:mod:`npuprof.analysis.operators`), APIs, user ranges and host series
(:mod:`npuprof.analysis.host_statistics`), memory (:mod:`npuprof.analysis.memory`).
A third-party plugin adds its own the same way (see the ``npuprof_analyzers`` hook).
"""
from __future__ import annotations

from ..analysis.analyzer import Analyzer
from ..analysis.host_statistics import API_STATISTIC, HOST_USAGE, RANGE_STATISTIC
from ..analysis.memory import MEMORY_RECORD, NPU_MODULE_MEM, OPERATOR_MEMORY
from ..analysis.operators import KERNEL_DETAILS, OP_SHAPE_STATISTIC, OP_STATISTIC, OPERATOR_DETAILS
from ..analysis.step_breakdown import STEP_TRACE_TIME
from ..hookspecs import hookimpl

BUILTIN_ANALYZERS = (STEP_TRACE_TIME, OP_STATISTIC, API_STATISTIC, KERNEL_DETAILS, RANGE_STATISTIC, HOST_USAGE,
                     OPERATOR_DETAILS, OP_SHAPE_STATISTIC, OPERATOR_MEMORY, MEMORY_RECORD, NPU_MODULE_MEM)


@hookimpl
def npuprof_analyzers() -> list[Analyzer]:
    return list(BUILTIN_ANALYZERS)
