"""A rank's ``communication.json`` and ``communication_matrix.json`` (torch_npu's and MindSpore's
layout, what msprof-analyze ``cluster`` reads), written beside its other ASCEND_PROFILER_OUTPUT files
when the run records communication details (tasks or transfers). The numbers are :mod:`npuprof.analysis.rank_communication`'s.

Example::

    paths = write_communication_files(result, out_dir)    # [] for a run without communication
"""
from __future__ import annotations

import json
from pathlib import Path

from ..analysis.rank_communication import comm_events, communication_json, communication_matrix_json
from ..analysis.result import AnalysisResult
from ..fileio import atomic_write


def write_communication_files(result: AnalysisResult, out_dir: Path) -> list[Path]:
    """Write the rank's communication files into ``out_dir``; the paths written (none where the data has no
    communication, or only operators without their tasks or transfers: Level0 measures no wait, transit or
    bandwidth, and a file of zeros would say it did)."""
    c = comm_events(result.events)
    if not c.details_measured:
        return []
    written = [atomic_write(out_dir / "communication.json", json.dumps(communication_json(c), indent=1))]
    if c.has_links or c.has_tasks:
        written.append(atomic_write(out_dir / "communication_matrix.json",
                                    json.dumps(communication_matrix_json(c), indent=1)))
    return written
