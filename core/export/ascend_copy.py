"""``npuprof export ascend``: a copy of each run for the Ascend tools.

msprof-analyze's advisor and compare tools stream
``ASCEND_PROFILER_OUTPUT/trace_view.json`` as a JSON array (MindSpore and
torch_npu's form); npuprof writes the Kineto object form there (HTA,
Perfetto). The copy holds what those tools read: ``profiler_info*.json`` and
``profiler_metadata.json`` as they are in the run, and in
``ASCEND_PROFILER_OUTPUT`` npuprof's text outputs (CSVs,
``communication*.json``, ``analyse.done``) with ``trace_view.json`` in the
array form (:mod:`npuprof.export.trace_array`) and the memory files' times
on that trace's base (relative to its UTC day). For another tool's run
(torch_npu, MindSpore) the files that tool wrote into its
``ASCEND_PROFILER_OUTPUT`` are copied as they are and take precedence over
npuprof's. Raw data (``NPUPROF/``, native files) is not copied.

Layout: ``OUT/<run name>`` for a run, ``OUT/<path below DIR>`` for each run
of a parent (``OUT/rank0/<run>``...), so ``msprof-analyze cluster -d OUT``
sees the same job. msprof-analyze takes only ``*_ascend_ms`` and
``*_ascend_pt`` run directories, so the copy of any other npuprof run
(``*_ascend_tf``, ...) is named ``*_ascend_ms``: its files are in that layout
whatever the framework (``profiler_info`` still names it). ``OUT`` may
exist; a run copy already there is an error (nothing is overwritten or
merged). Each copy is built in a hidden sibling
directory and renamed into place, so a failed export leaves no partial copy.

Example::

    plan = plan_ascend_export("./prof", "./prof_ascend")        # checks paths, writes nothing
    results = analyse_path("./prof")                             # writes nothing either
    written = write_ascend_copies(plan, results)
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import IO, Sequence, Union

from ..analysis.memory import memory_record, npu_module_mem, operator_memory
from ..analysis.pipeline import find_runs
from ..analysis.result import AnalysisResult
from ..enums import ExportType
from ..errors import ProfilerConfigError, ProfilerDataError
from ..fileio import atomic_write, secure_mkdir
from ..runinfo import OUTPUT_DIR, RUN_DIR_RE
from .csvfiles import write_csv
from .trace_array import write_trace_array
from .trace_json import base_time_ns
from .writer import ExportTarget, write_outputs

TRACE_NAMES = ("trace_view.json", "trace_view.json.gz")
TOP_LEVEL = ("profiler_info*.json", "profiler_metadata.json")
TOOL_SUFFIXES = ("_ascend_ms", "_ascend_pt")   # the run directories msprof-analyze recognises


def copy_name(run_name: str) -> str:
    """The name of a run's copy: npuprof runs of other frameworks take the ``_ascend_ms`` suffix.

    Example::

        >>> copy_name("vm_10390_20261122055659654_ascend_tf")
        'vm_10390_20261122055659654_ascend_ms'
        >>> copy_name("PROF_000001_20261122055659654_ABCDEFGHIJ")
        'PROF_000001_20261122055659654_ABCDEFGHIJ'
    """
    m = RUN_DIR_RE.match(run_name)
    if m is None or run_name.endswith(TOOL_SUFFIXES):
        return run_name
    return run_name[:-len(m.group("fw"))] + "ms"


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def plan_ascend_export(source: Union[str, Path], out: Union[str, Path]) -> list[tuple[Path, Path]]:
    """(run, copy) pairs for ``export ascend -dir source -o out``; raises before anything is written.

    Example::

        >>> plan_ascend_export("./prof", "./prof")  # doctest: +SKIP
        ProfilerConfigError: invalid -o='./prof': expected a directory outside -dir ...
    """
    src, dst = Path(source), Path(out)
    if not src.is_dir():
        raise ProfilerConfigError("-dir", str(source), "an existing run directory or a parent of runs")
    if dst.exists() and not dst.is_dir():
        raise ProfilerConfigError("-o", str(out), "a directory (new or existing), not a file")
    src_r, dst_r = src.resolve(), dst.resolve()
    if _within(dst_r, src_r):
        raise ProfilerConfigError("-o", str(out), f"a directory outside -dir {str(source)!r}",
                                  "the copy must not be written into the source runs")
    try:
        runs = find_runs(src)
    except ProfilerDataError as e:
        raise ProfilerConfigError("-dir", str(source), "an existing run directory or a parent of runs") from e
    if not runs:
        raise ProfilerConfigError("-dir", str(source), "a run directory or a parent of runs",
                                  "no profiler_info_*.json or known raw data found")
    plan = []
    for run in runs:
        run_r = run.resolve()
        rel = Path(run_r.name) if run_r == src_r else run_r.relative_to(src_r)
        copy = dst_r / rel.parent / copy_name(rel.name)
        if any(copy == other for _, other in plan):
            raise ProfilerConfigError("-dir", str(source), "runs whose copies have distinct names",
                                      f"two runs would both be copied to {copy}")
        if _within(copy, run_r) or _within(run_r, copy):
            raise ProfilerConfigError("-o", str(out), "a directory whose copies do not overlap the source runs",
                                      f"{copy} would overlap {run}")
        if copy.exists() or copy.is_symlink():
            raise ProfilerConfigError("-o", str(out), "a directory without an earlier copy of these runs",
                                      f"{copy} already exists; remove it or choose another -o")
        plan.append((run, copy))
    return plan


def _copy_file(src: Path, dst: Path) -> Path:
    def write(fh: IO[bytes]) -> None:
        with open(src, "rb") as f:
            shutil.copyfileobj(f, fh, 1 << 20)

    return atomic_write(dst, write)


def _top_level_files(run: Path) -> list[Path]:
    return [f for pattern in TOP_LEVEL for f in sorted(run.glob(pattern)) if f.is_file() and not f.is_symlink()]


def _tool_outputs(run: Path) -> list[Path]:
    """What another tool wrote into its run's ASCEND_PROFILER_OUTPUT (copied as it is)."""
    out_dir = run / OUTPUT_DIR
    if not out_dir.is_dir():
        return []
    return [f for f in sorted(out_dir.iterdir()) if f.is_file() and not f.is_symlink() and ".tmp." not in f.name]


def write_ascend_copy(run: Path, copy: Path, result: AnalysisResult) -> Path:
    """Build one run's copy in a hidden sibling directory, then rename it to ``copy``."""
    secure_mkdir(copy.parent)
    staging = copy.with_name(f".{copy.name}.npuprof-export.{os.getpid()}")
    if staging.exists():
        shutil.rmtree(staging)
    try:
        out_dir = staging / OUTPUT_DIR
        secure_mkdir(out_dir)
        for f in _top_level_files(run):
            _copy_file(f, staging / f.name)
        kinds = tuple(ExportType(k) for k in result.info.export_type if k in ("text", "db")) or (ExportType.Text,)
        written = write_outputs(result, ExportTarget(output_dir=out_dir, export_type=(ExportType.Text,) + tuple(
            k for k in kinds if k is not ExportType.Text)))
        if written.failures:   # an incomplete copy is not kept
            raise ProfilerDataError(run, "no copy written: " + "; ".join(map(str, written.failures)))
        tool_files = [] if result.info.writable else _tool_outputs(run)
        for f in tool_files:
            _copy_file(f, out_dir / f.name)
        if not any(f.name in TRACE_NAMES for f in tool_files):
            for name in TRACE_NAMES:
                (out_dir / name).unlink(missing_ok=True)
            write_trace_array(result.events, out_dir / "trace_view.json", host_pid=result.info.pid)
            _memory_files_on_the_trace_base(result, out_dir)
        os.rename(staging, copy)   # a non-empty copy that appeared meanwhile makes this fail: never merged
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return copy


def _memory_files_on_the_trace_base(result: AnalysisResult, out_dir: Path) -> None:
    """The array trace's ``ts`` are relative to its base: the memory files' times follow it, so compare
    can place each allocation in the operator that made it."""
    base = base_time_ns(result.events)
    for name, table in (("operator_memory", operator_memory), ("memory_record", memory_record),
                        ("npu_module_mem", npu_module_mem)):
        if (out_dir / f"{name}.csv").is_file():
            write_csv(table(result.events, base_ns=base), out_dir / f"{name}.csv")


def write_ascend_copies(plan: Sequence[tuple[Path, Path]], results: Sequence[AnalysisResult]) -> list[Path]:
    """Every planned copy, from the analysed ``results`` of the same runs."""
    by_run = {r.run_dir.resolve(): r for r in results}
    written = []
    for run, copy in plan:
        result = by_run.get(run.resolve())
        if result is None:
            raise ProfilerDataError(run, "was not analysed; no copy written")
        written.append(write_ascend_copy(run, copy, result))
    return written
