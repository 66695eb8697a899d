"""The summary files torch_npu (``*_ascend_pt``) and MindSpore (``*_ascend_ms``) write into a run's
``ASCEND_PROFILER_OUTPUT/``, read and checked as the tools wrote them, for cluster analysis's fast path
(:mod:`npuprof.cluster.tool_summary` builds a rank's summary from them):

==============================  =================================================================
``step_trace_time.csv``          one row per step (:func:`csv_rows`, each value a :func:`number`)
``op_statistic.csv``             :func:`op_statistic_rows`
``communication.json``           step -> kind -> operator -> info (:func:`operators`)
``communication_matrix.json``    the same layout, each operator's links (:func:`checked_matrix`)
==============================  =================================================================

Anything that does not read as the tools write it raises :class:`Unusable`, whose message says why (the
caller then parses the run's events instead). Nothing is written into the runs.

Example::

    ops = op_statistic_rows(Path("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/op_statistic.csv"))
    ops[0]          # ("MatMulV2", "AI_CORE", 120, 5321.5): type, core type, count, total us
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ..errors import ProfilerDataError
from ..fileio import check_input_file
from ..runinfo import RunInfo

STEP_TRACE = "step_trace_time.csv"
OP_STATISTIC = "op_statistic.csv"
COMMUNICATION = "communication.json"
COMMUNICATION_MATRIX = "communication_matrix.json"
TOOL_FILES = (STEP_TRACE, OP_STATISTIC, COMMUNICATION, COMMUNICATION_MATRIX)
OP_COLUMNS = ("OP Type", "Core Type", "Count", "Total Time(us)")
# step_trace_time columns every torch_npu/MindSpore version writes; the others (Preparing, Bubble, the
# receive-excluded communication ...) came and went across versions: absent means not measured (NaN)
STEP_CORE_COLUMNS = ("Step", "Computing", "Communication(Not Overlapped)", "Free")
_STEP_KEY = re.compile(r"^step(-?\d*)$")


class Unusable(Exception):
    """The tool's tables of a run cannot stand in for its events (the message says why)."""


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise Unusable(f"no {path.parent.name}/{path.name}")
    try:
        check_input_file(path)
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeError, ProfilerDataError) as e:
        raise Unusable(f"{path.name} unreadable: {e}") from None


def number(text: Any, what: str) -> float:
    try:
        x = float(str(text).strip())
    except ValueError:
        raise Unusable(f"{what}: {str(text)[:40]!r} is not a number") from None
    if not math.isfinite(x):
        raise Unusable(f"{what}: {text!r} is not finite")
    return x


def csv_rows(path: Path, columns: tuple) -> list[dict]:
    """The rows of one of the tool's CSVs as :func:`npuprof.readers.tool_csv_tables.read_own_tables` reads them
    (``show`` displays the same files), as dicts of strings; ``columns`` are the ones it must have."""
    from .ascend_contract import cut_short
    from .tool_csv_tables import read_own_tables

    if cut_short(path):
        raise Unusable(f"{path.name} cut short (its last row ends no line)")
    table = read_own_tables(path.parent.parent, [path.stem]).get(path.stem)
    if table is None:
        raise Unusable(f"no {path.parent.name}/{path.name} (or not readable as CSV)")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise Unusable(f"{path.name} lacks column(s) {missing}")
    return [row for row in table.records() if any(v.strip() for v in row.values())]



def op_statistic_rows(path: Path) -> list[tuple]:
    out = []
    for i, row in enumerate(csv_rows(path, OP_COLUMNS), 2):
        count = number(row["Count"], f"{path.name} line {i} Count")
        if count != int(count) or count < 0:
            raise Unusable(f"{path.name} line {i}: Count {row['Count']!r}")
        out.append((str(row["OP Type"]), str(row["Core Type"]), int(count),
                    number(row["Total Time(us)"], f"{path.name} line {i} Total Time(us)")))
    return out


def json_object(path: Path) -> dict:
    try:
        doc = json.loads(_read_text(path))
    except ValueError as e:
        raise Unusable(f"{path.name} is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise Unusable(f"{path.name} is not a JSON object")
    return doc


def operators(doc: dict, name: str) -> list[tuple[str, str, str, dict]]:
    """(step key, kind, operator, info) of a communication(checked_matrix).json, Total Op Info included;
    raises Unusable unless it has the tools' step -> kind -> operator -> object layout."""
    out = []
    for step, kinds in doc.items():
        if not _STEP_KEY.match(str(step)) or not isinstance(kinds, dict):
            raise Unusable(f"{name}: {str(step)[:40]!r} is not a step of operators")
        for kind, ops in kinds.items():
            if not isinstance(ops, dict):
                raise Unusable(f"{name}: {step} > {kind} is not an object of operators")
            for op, info in ops.items():
                if not isinstance(info, dict):
                    raise Unusable(f"{name}: {step} > {kind} > {op[:60]} is not an object")
                out.append((str(step), str(kind), str(op), info))
    return out


def step_of(key: str) -> int:
    m = _STEP_KEY.match(key)
    return int(m.group(1)) if m and m.group(1) not in ("", "-") else -1



def checked_matrix(doc: dict) -> dict:
    for step, kind, op, links in operators(doc, COMMUNICATION_MATRIX):
        for link, info in links.items():
            src, sep, dst = str(link).partition("-")
            if not (sep and src.isdigit() and dst.isdigit() and isinstance(info, dict)):
                raise Unusable(f"{COMMUNICATION_MATRIX}: {step} > {op[:60]} > {str(link)[:40]!r} is not a link")
            for k in ("Transit Time(ms)", "Transit Size(MB)"):
                number(info.get(k, 0), f"{COMMUNICATION_MATRIX} {op[:60]} {link} {k}")
    return doc


def device_of(info: RunInfo, out_dir: Path) -> int:
    """The rank's device as the full parse finds it (:func:`npuprof.readers.ascend_output.device_from_data`:
    profiler_info, else the trace's ``NPU <n>`` process label, the memory files' ``NPU:<n>``, msprof's
    encoded device process ids), from the trace's metadata events and the memory files' heads only."""
    if info.device_id is not None:
        return info.device_id
    from .ascend_output import device_from_data
    from .ascend_trace_view import TraceMeta

    trace = out_dir / "trace_view.json"
    return device_from_data(out_dir, TraceMeta.of(trace_metadata(trace, (b'"process_labels"',))),
                            lambda: TraceMeta.of(trace_metadata(trace, (b'"process_labels"',
                                                                          b'"process_sort_index"'))))


def trace_metadata(path: Path, needles: tuple) -> list:
    """The metadata events named by ``needles`` (``b'"process_labels"'``, ...) of a trace_view.json, found
    in its text (each a flat object with one ``args`` object, its name first, as torch_npu and MindSpore
    write them) without parsing the whole trace; raises Unusable for one written otherwise."""
    import mmap

    out: list = []
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for needle in needles:
                pos = data.find(needle)
                while pos >= 0:
                    start = data.rfind(b"{", max(0, pos - 4096), pos)
                    end = data.find(b"}", pos)
                    end = data.find(b"}", end + 1) if end >= 0 else -1
                    try:
                        ev = json.loads(data[start:end + 1]) if start >= 0 and end >= 0 else None
                    except ValueError:
                        ev = None
                    if not isinstance(ev, dict):     # not the usual layout: let the full parse read it
                        raise Unusable(f"{path.name}: a {needle.decode()} event not in the usual layout")
                    out.append(ev)
                    pos = data.find(needle, pos + 1)
    except (OSError, ValueError):      # no trace, or an empty one (mmap of 0 bytes)
        return []
    return out



def json_closed(path: Path) -> bool:
    """False for a plain JSON file whose last non-blank byte closes no array or object (a file cut short);
    a check of its tail only, not a parse. Compressed files are taken as they are."""
    if path.suffix == ".gz":
        return True
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - 256))
            tail = fh.read().rstrip()
    except OSError:
        return False
    return tail.endswith((b"]", b"}"))


