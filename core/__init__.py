"""npuprof: one profiler for MindSpore, TensorFlow on Ascend and pyACL apps.

Example::

    from npuprof import Profiler, schedule, tensorboard_trace_handler, record_function

    with Profiler(schedule=schedule(wait=1, warmup=1, active=3, repeat=2),
                  on_trace_ready=tensorboard_trace_handler("./prof")) as prof:
        for batch in data:
            with record_function("train_step"):
                train_step(batch)
            prof.step()

Importing npuprof never imports mindspore, tensorflow or acl.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

# first: it notes whether the GIL was on before npuprof's imports (a free-threaded Python, see compiled.py)
from . import compiled as _compiled  # noqa: F401  (isort: skip)
from .enums import (AicoreMetrics, ExportType, HostSystem, ProfilerAction, ProfilerActivity,
                    ProfilerLevel)
from .errors import (BackendUnavailable, ProfilerConfigError, ProfilerDataError, ProfilerError,
                     ProfilerPluginError, ProfilerStateError)
from .events import EventKind, EventTable
from .handlers import chrome_trace_handler, tensorboard_trace_handler
from .hookspecs import hookimpl
from .profiler import Profiler, profile, running_profiler
from .recorder import mstx, record_function, trace_api
from .schedule import Schedule, schedule

__version__ = "0.1.0"


if TYPE_CHECKING:
    from .analysis.diff import DiffResult
    from .types import ExportTypeLike, PathLike


def analyse(path: "PathLike", export_type: "Optional[Sequence[ExportTypeLike]]" = None,
            output_path: "Optional[PathLike]" = None, **options: Any) -> list:
    """Offline analysis of a run directory or a folder of runs, writing their
    outputs (same as ``Profiler.offline_analyse``). Returns one AnalysisResult per run.

    Example::

        for res in npuprof.analyse("./npuprof_data"):
            print(res.run_dir, res.tables["op_statistic"].rows()[:3])
    """
    return Profiler.offline_analyse(path, export_type=export_type, output_path=output_path, **options)


def diff(base: "Any", new: "Any", **options: Any) -> "DiffResult":
    """Compare two runs or jobs (paths to anything npuprof reads, or analysed results); writes nothing.

    Options: ``steps``/``base_steps``/``new_steps`` ("A-B"), ``rank``/``base_rank``/``new_rank``,
    ``by`` ("op", "kernel", "api", "range", "communication", "step", "all" or several joined by commas),
    ``top``, ``metric`` ("step", a breakdown column, or "range:NAME"...), ``name_map`` (a dict or a JSON
    file of base name -> new name). The JSON shape of ``.to_json()`` is described in docs/diff.md.

    Example::

        d = npuprof.diff("./before", "./after")
        assert not d.regressed_beyond(5), d.table()
        print(d.top_contributors[0].name, d.step_time.ci95_pct)
    """
    from .rundiff import diff_paths

    return diff_paths(base, new, **options)


__all__ = [
    "AicoreMetrics", "BackendUnavailable", "EventKind", "EventTable", "ExportType", "HostSystem", "Profiler",
    "ProfilerAction", "ProfilerActivity", "ProfilerConfigError", "ProfilerDataError", "ProfilerError",
    "ProfilerLevel", "ProfilerPluginError", "ProfilerStateError", "Schedule", "analyse", "chrome_trace_handler", "diff",
    "hookimpl", "mstx", "profile", "record_function", "running_profiler", "schedule", "tensorboard_trace_handler", "trace_api",
]
