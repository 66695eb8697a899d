"""Coverage-guided fuzzing (atheris/libFuzzer) of npuprof's raw-record parser
and profiler_info check. Run by tests/reliability/test_rel_fuzz.py::test_atheris_*
with ``-runs=N``; any exception other than the documented ones is a crash
that libFuzzer reports with the input that caused it.
"""
from __future__ import annotations

import json
import sys

import atheris

with atheris.instrument_imports():
    from npuprof.rawstore import ReadReport, parse_records
    from npuprof.runinfo import info_problem


def one_input(data: bytes) -> None:
    report = ReadReport()
    parse_records(data, "fuzz.npr", report)
    if report.skipped_bytes > len(data):
        raise AssertionError("skipped more bytes than given")
    try:
        info = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return
    if isinstance(info, dict):
        info_problem(info)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
