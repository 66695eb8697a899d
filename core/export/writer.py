"""Writing an analysed run's outputs: the one place that decides where they
go and which exporter plugins write them.

Where: a run npuprof wrote gets ``<run>/ASCEND_PROFILER_OUTPUT/``. Another
tool's run (torch_npu, MindSpore, CANN, a foreign trace: see
:class:`~npuprof.runinfo.RunOrigin`) is read-only input: its outputs go to
``<output>/<run's path below the analysed folder>/ASCEND_PROFILER_OUTPUT/``,
``<output>`` being ``-o`` / ``output_path`` or, when none is given,
:data:`DEFAULT_OUTPUT` in the current directory. An output place inside a
read-only run is refused before anything is written.

Example::

    from npuprof.analysis.pipeline import analyse_run
    result = analyse_run("./prof/w_1_20250101000000000_ascend_ms")
    outputs = export_result(result)                       # text files, as the run asked
    export_result(result, export_type=["db"], output="./elsewhere")
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from ..analysis.pipeline import ANALYSIS_PHASES, analyse_run, find_runs
from ..analysis.result import AnalysisResult
from ..enums import ExportType
from ..errors import ProfilerConfigError, ProfilerDataError
from ..plugins.manager import get_plugin_host
from ..progress import PhaseCounter, ProgressCallback
from ..runinfo import OUTPUT_DIR, RunOrigin, origin_of, read_run_info
from ..validate import check_enum_list, check_output_path

log = logging.getLogger("npuprof")
DEFAULT_OUTPUT = Path("npuprof_output")   # outputs of read-only runs when no output place is given
ExportTypeLike = Union[ExportType, str]


@dataclass(frozen=True)
class ExportTarget:
    """What one exporter plugin is asked to write, and where.

    ``output_dir`` is the run's ``ASCEND_PROFILER_OUTPUT`` folder (created by
    the plugin as needed; write with :func:`npuprof.fileio.atomic_write`).
    """

    output_dir: Path
    export_type: tuple[ExportType, ...] = (ExportType.Text,)

    @property
    def text(self) -> bool:
        return ExportType.Text in self.export_type

    @property
    def db(self) -> bool:
        return ExportType.Db in self.export_type


@dataclass
class ExportedRun:
    """An analysed run and the files its export wrote."""

    result: AnalysisResult
    output_dir: Path
    outputs: list[Path] = field(default_factory=list)


def output_root(run_dir: Path, writable: bool, output: Optional[Union[str, Path]] = None,
                analysed_root: Optional[Path] = None) -> Path:
    """The directory that receives a run's ``ASCEND_PROFILER_OUTPUT/``.

    Example::

        >>> output_root(Path("/data/job/rank0_ascend_pt"), writable=False, output="/out",
        ...             analysed_root=Path("/data"))
        PosixPath('/out/job/rank0_ascend_pt')
        >>> output_root(Path("/data/mine_ascend_ms"), writable=True)
        PosixPath('/data/mine_ascend_ms')
    """
    if output is None:
        if writable:
            return run_dir
        output = DEFAULT_OUTPUT
    base = Path(output)
    if analysed_root is not None and run_dir != analysed_root:
        try:
            return base / run_dir.relative_to(analysed_root)
        except ValueError:
            pass
    return base / run_dir.name


def _check_outside(place: Path, run_dir: Path, writable: bool) -> None:
    if writable:
        return
    where, run = place.resolve(), run_dir.resolve()
    if where == run or run in where.parents:
        raise ProfilerConfigError("output", str(place), "a place outside the run being read",
                                  f"{run_dir} was written by another tool and is read-only input")


def export_result(result: AnalysisResult, export_type: Optional[Sequence[ExportTypeLike]] = None,
                  output: Optional[Union[str, Path]] = None, analysed_root: Optional[Path] = None,
                  phases: Optional[PhaseCounter] = None) -> ExportedRun:
    """Write ``result``'s outputs through every exporter plugin.

    ``export_type`` defaults to what the run asked for (its profiler_info),
    else text. See the module docstring for where files go.
    """
    kinds = tuple(check_enum_list("export_type", export_type if export_type is not None
                                  else (result.info.export_type or ("text",)), ExportType))
    root = output_root(result.run_dir, result.info.writable, output, analysed_root)
    _check_outside(root, result.run_dir, result.info.writable)
    if root != result.run_dir:
        check_output_path("output", str(root))
    target = ExportTarget(output_dir=root / OUTPUT_DIR, export_type=kinds)
    return ExportedRun(result=result, output_dir=target.output_dir, outputs=write_outputs(result, target, phases))


def write_outputs(result: AnalysisResult, target: ExportTarget,
                  phases: Optional[PhaseCounter] = None) -> list[Path]:
    """Call every exporter plugin for ``target``, one at a time (a failing
    plugin is named and disabled by the plugin host); the paths written."""
    host = get_plugin_host()
    written: list[Path] = []
    for exporter in exporter_names():
        if phases is None:
            written += _call_exporter(host, exporter, result, target)
            continue
        with phases.phase(f"writing {exporter} outputs ({result.run_dir.name})"):
            written += _call_exporter(host, exporter, result, target)
    return written


def _call_exporter(host: Any, exporter: str, result: AnalysisResult, target: ExportTarget) -> list[Path]:
    return [Path(p) for _, paths in host.call("npuprof_export", only=[exporter], result=result, target=target)
            for p in paths]


def exporter_names() -> list[str]:
    """The plugins that write outputs, in call order."""
    return [i.plugin_name for i in get_plugin_host().impls("npuprof_export")]


def analyse_and_export(path: Union[str, Path], export_type: Optional[Sequence[ExportTypeLike]] = None,
                       output: Optional[Union[str, Path]] = None, progress: Optional[ProgressCallback] = None,
                       force: bool = False) -> list[ExportedRun]:
    """Analyse every run at ``path`` and write each one's outputs (``npuprof analyse``).

    Output places are checked for every run before any run is analysed.

    Example::

        for run in analyse_and_export("./npuprof_data"):
            print(run.output_dir, len(run.result.events))
    """
    root = Path(path)
    runs = find_runs(root)
    if not runs:
        raise ProfilerDataError(root, "holds no profiling run (no profiler_info_*.json or data any reader "
                                      "understands)")
    if output is not None:
        check_output_path("output", str(output))
    for run in runs:   # refuse a bad output place before anything is written
        try:
            writable = read_run_info(run).writable
        except ProfilerDataError:
            writable = origin_of(run) is RunOrigin.NPUPROF
        _check_outside(output_root(run, writable, output, root), run, writable)
    phases = PhaseCounter(progress, len(runs) * (ANALYSIS_PHASES + len(exporter_names())))
    out = []
    for run in runs:
        result = analyse_run(run, force=force, phases=phases)
        out.append(export_result(result, export_type, output, root, phases))
    return out
