"""The layout contract of an Ascend profiler's text output (``ASCEND_PROFILER_OUTPUT/`` of a torch_npu or
MindSpore run): which files a run should hold given its profiler_info, which columns each file's numbers
come from, and how a file looks when it was cut short. Each difference is a
:class:`~npuprof.quality.QualityIssue` naming the tables it affects (see :mod:`npuprof.quality`).

Columns are read by name. A column a reader copies through unchanged (kernel_details' ``Model ID``, an AI
Core metric) may be absent: the output then lacks it too (not measured). A column numbers are computed
from is in :data:`SOURCE_COLUMNS`; its absence is an issue, as is the absence of any column of the tool's
own summary tables that ``show`` and ``cluster`` print as the tool wrote them.

Example::

    issues = layout_issues(run / "ASCEND_PROFILER_OUTPUT", read_info(run), has_communication=True)
    [str(i) for i in issues]     # ['ASCEND_PROFILER_OUTPUT/op_statistic.csv: missing (...) (affects ...)']
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from ..quality import QualityIssue
from .ascend_output import COMMUNICATION, KERNEL_DETAILS, MEMORY_RECORD, NPU_MODULE_MEM, OPERATOR_MEMORY, TRACE_VIEW

COMMUNICATION_MATRIX = "communication_matrix.json"
OP_STATISTIC = "op_statistic.csv"
STEP_TRACE_TIME = "step_trace_time.csv"
API_STATISTIC = "api_statistic.csv"

# What each file gives the analysis: its absence or damage changes these tables.
FILE_AFFECTS = {
    TRACE_VIEW: ("trace_view", "api_statistic", "range_statistic", "step_trace_time", "communication"),
    KERNEL_DETAILS: ("kernel_details", "op_statistic", "step_trace_time"),
    MEMORY_RECORD: ("memory",),
    NPU_MODULE_MEM: ("memory",),
    OPERATOR_MEMORY: ("memory", "operator_memory"),
    COMMUNICATION: ("communication group names", "cluster communication"),
    COMMUNICATION_MATRIX: ("cluster communication matrix",),
    OP_STATISTIC: ("the tool's op_statistic (show, cluster)",),
    STEP_TRACE_TIME: ("the tool's step_trace_time (show, cluster)",),
    API_STATISTIC: ("the tool's api_statistic (show)",),
}

# The columns numbers are computed from (readers of this package) or that the tool's own tables show.
SOURCE_COLUMNS = {
    KERNEL_DETAILS: ("Type", "Stream ID", "Accelerator Core", "Wait Time(us)"),
    MEMORY_RECORD: ("Component", "Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)",
                    "Device Type"),
    NPU_MODULE_MEM: ("Component", "Timestamp(us)", "Total Reserved(MB)", "Device"),
    OPERATOR_MEMORY: ("Name", "Size(KB)", "Allocation Time(us)", "Release Time(us)", "Active Release Time(us)",
                      "Allocation Total Allocated(MB)", "Allocation Total Reserved(MB)", "Allocation Total Active(MB)",
                      "Release Total Allocated(MB)", "Release Total Reserved(MB)", "Release Total Active(MB)",
                      "Device Type"),
    OP_STATISTIC: ("OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)", "Max Time(us)",
                   "Ratio(%)"),
    STEP_TRACE_TIME: ("Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                      "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"),
    API_STATISTIC: ("Level", "API Name", "Time(us)", "Count", "Avg(us)", "Min(us)", "Max(us)", "Variance"),
}


# what Level1/2 kernel_details add (Level0 drops them): the shapes and data types op_flops counts FLOPs from
LEVEL1_KERNEL_COLUMNS = ("Input Shapes", "Input Data Types")


def _dig(data: Any, *keys: str) -> dict:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def run_settings(info: dict) -> dict[str, Any]:
    """What a profiler_info says the run collected (torch_npu's ``config`` and MindSpore's
    ``profiler_parameters`` forms): ``text``, ``npu``, ``memory``, ``level`` (None when unsaid)."""
    common = _dig(info, "config", "common_config")
    experimental = _dig(info, "config", "experimental_config")
    params = info.get("profiler_parameters") if isinstance(info.get("profiler_parameters"), dict) else {}
    export = experimental.get("_export_type", params.get("export_type", "text"))
    activities = " ".join(map(str, common.get("activities") or params.get("activities") or ())).upper()
    level = experimental.get("_profiler_level", params.get("profiler_level"))
    return {"text": "text" in ([export] if isinstance(export, str) else list(export or ["text"])),
            "npu": "NPU" in activities, "memory": common.get("profile_memory", params.get("profile_memory")) is True,
            "level": str(level).rpartition(".")[2] if level is not None else None}


def expected_outputs(info: dict, has_communication: bool = False) -> dict[str, str]:
    """The files of ``ASCEND_PROFILER_OUTPUT/`` a run's profiler_info says it should hold, each with the
    setting that asks for it. An info that says nothing expects the trace alone; a db-only export none.

    Example::

        >>> expected_outputs({"config": {"common_config": {"activities": ["ProfilerActivity.NPU"],
        ...                                                "profile_memory": True}}})["operator_memory.csv"]
        'profile_memory'
    """
    s = run_settings(info)
    if not s["text"]:
        return {}
    out = {TRACE_VIEW: "always written"}
    if s["npu"] and s["level"] != "LevelNone":
        out.update({KERNEL_DETAILS: "NPU activity", OP_STATISTIC: "NPU activity", STEP_TRACE_TIME: "NPU activity"})
        if s["memory"]:
            out.update({OPERATOR_MEMORY: "profile_memory", MEMORY_RECORD: "profile_memory",
                        NPU_MODULE_MEM: "profile_memory"})
        if s["level"] in ("Level1", "Level2"):
            out[API_STATISTIC] = s["level"]
            if has_communication:
                out.update({COMMUNICATION: f"{s['level']} with communication",
                            COMMUNICATION_MATRIX: f"{s['level']} with communication"})
    return out


def cut_short(path: Path) -> bool:
    """True for a non-empty text table whose last byte ends no line: the tools end every row with one, so
    the file was cut (its last row may be partial)."""
    try:
        with open(path, "rb") as fh:
            if fh.seek(0, 2) == 0:
                return False
            fh.seek(-1, 2)
            return fh.read(1) != b"\n"
    except OSError:
        return False


def _header(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            return next(csv.reader(fh), [])
    except (OSError, UnicodeError, csv.Error):
        return []


def layout_issues(out_dir: Path, info: dict, has_communication: bool = False) -> list[QualityIssue]:
    """An issue for each file :func:`expected_outputs` names that ``out_dir`` lacks or holds empty, each
    table cut short, and each :data:`SOURCE_COLUMNS` column a present table lacks."""
    issues = []
    where = out_dir.name
    for name, why in expected_outputs(info, has_communication).items():
        path = out_dir / name
        if not path.exists() and not (name == TRACE_VIEW and (out_dir / (name + ".gz")).exists()):
            issues.append(QualityIssue(f"{where}/{name}", f"missing (the run asked for it: {why})",
                                       FILE_AFFECTS.get(name, ())))
        elif path.is_file() and path.stat().st_size == 0:
            issues.append(QualityIssue(f"{where}/{name}", "empty", FILE_AFFECTS.get(name, ())))
    settings = run_settings(info)
    for name, columns in SOURCE_COLUMNS.items():
        if name == KERNEL_DETAILS and settings["level"] in ("Level1", "Level2"):
            columns = columns + LEVEL1_KERNEL_COLUMNS
        path = out_dir / name
        if not path.is_file() or path.stat().st_size == 0:
            continue
        if cut_short(path):
            issues.append(QualityIssue(f"{where}/{name}", "cut short (its last row ends no line)",
                                       FILE_AFFECTS.get(name, ())))
        header = _header(path)
        absent = [c for c in columns if c not in header]
        if absent:
            issues.append(QualityIssue(f"{where}/{name}", f"has no {', '.join(absent)} column(s): not measured",
                                       tuple(f"{Path(name).stem}.{c}" for c in absent)))
    return issues


def problem_issue(problem: str) -> QualityIssue:
    """A reader problem (``"<path>[:line]: what"``) as a data-quality issue naming what it affects."""
    issue = QualityIssue.from_message(problem)
    return QualityIssue(issue.subject, issue.problem, FILE_AFFECTS.get(Path(issue.subject.split(":")[0]).name, ()))


def tool_step_trace(out_dir: Path) -> dict[int, dict[str, float]]:
    """The tool's own step_trace_time.csv of ``out_dir`` as {step: {column: µs}}, read by column name
    (a column absent or a cell not a number is left out); {} when there is none or it cannot be read."""
    path = out_dir / STEP_TRACE_TIME
    rows: dict[int, dict[str, float]] = {}
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            for row in csv.DictReader(fh):
                try:
                    step = int(float(row.get("Step") or ""))
                except ValueError:
                    continue
                values = {}
                for column, text in row.items():
                    try:
                        values[column] = float(text)
                    except (TypeError, ValueError):
                        continue
                rows[step] = values
    except (OSError, UnicodeError, csv.Error):
        return {}
    return rows
