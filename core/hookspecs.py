"""The npuprof plugin hooks.

Plugins are pluggy plugins registered under the ``npuprof`` entry-point group
(built-in ones the same way). Hooks are called at lifecycle points only, never
per event. Each hook is called for each plugin separately: a plugin whose hook
raises is reported by name, disabled for the rest of the run, and the user's
program goes on (see :mod:`npuprof.plugins.manager`).

A minimal backend plugin::

    from npuprof import hookimpl, BackendUnavailable

    @hookimpl
    def npuprof_configure(config):
        if "NPU" not in config.activities:
            raise BackendUnavailable("NPU activity not requested")

    @hookimpl
    def npuprof_start(session):
        my_native_profiler.start(session.native_dir("MYPROF"))

    @hookimpl
    def npuprof_stop(session):
        my_native_profiler.stop()

    @hookimpl
    def npuprof_parse_run(run_dir, context):
        return parse_my_files(run_dir / "MYPROF", context)   # -> EventTable
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    import argparse

    from .analysis.analyzer import Analyzer
    from .analysis.result import AnalysisResult
    from .config import ProfilerConfig
    from .events import EventTable
    from .export.tool_layout import ToolLayout
    from .export.writer import ExportTarget
    from .session import CollectionSession, ParseContext

PROJECT = "npuprof"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def npuprof_configure(config: "ProfilerConfig") -> None:
    """Check a validated config before collection starts.

    Called once per :class:`~npuprof.Profiler`, in its constructor, after the
    core has validated every argument.

    Raise :class:`~npuprof.ProfilerConfigError` for a setting this plugin
    cannot accept (the user sees it before anything starts), or
    :class:`~npuprof.BackendUnavailable` when this plugin cannot run here
    (framework not imported, no device): the reason is logged once and the
    plugin takes no part in this profiler's lifecycle hooks.

    Example::

        @hookimpl
        def npuprof_configure(config):
            if "mindspore" not in sys.modules:
                raise BackendUnavailable("mindspore is not imported")
    """


@hookspec
def npuprof_start(session: "CollectionSession") -> None:
    """A recording window starts (schedule action turns to RECORD).

    ``session.run_dir`` is this window's run directory (already created,
    with ``profiler_info_{rank}.json`` in it); ``session.native_dir(name)``
    gives a sub-directory for a native profiler's files. Start native
    collection here.

    Example::

        @hookimpl
        def npuprof_start(session):
            tf.profiler.experimental.start(str(session.native_dir("TF")))
    """


@hookspec
def npuprof_step(session: "CollectionSession", step_num: int) -> None:
    """``Profiler.step()`` was called while a window is open.

    ``step_num`` is the number of the step that begins now (the one that just
    ended is ``step_num - 1``). Keep this cheap: it runs on the training
    thread once per step.

    Example::

        @hookimpl
        def npuprof_step(session, step_num):
            native.mark_step(step_num)
    """


@hookspec
def npuprof_stop(session: "CollectionSession") -> None:
    """A window ends. Stop native collection and flush its files.

    ``session.saved`` tells whether the window will be analysed (False when
    it ended in WARMUP or the data is discarded); ``session.partial`` is True
    when the profiler was left before the window's last step.

    Example::

        @hookimpl
        def npuprof_stop(session):
            tf.profiler.experimental.stop()
    """


@hookspec
def npuprof_trace_ready(session: "CollectionSession") -> None:
    """A saved window's raw data is complete on disk.

    Called after every ``npuprof_stop`` of a saved window and before the
    user's ``on_trace_ready``.

    Example::

        @hookimpl
        def npuprof_trace_ready(session):
            print("raw data in", session.run_dir)
    """


@hookspec
def npuprof_recognise_run(path: Path, named: bool) -> Optional[bool]:
    """Say whether ``path`` is a run directory this plugin can parse.

    Lets ``npuprof analyse`` find directories written by other tools (a
    MindSpore ``*_ascend_ms`` dir, a CANN ``PROF_*`` dir). Return True to
    claim it, None otherwise. ``named`` is True when ``path`` is the folder
    the user named, False for one found while searching below it: data an
    enclosing run already reads (a ``PROF_*`` of an npuprof pyACL run) is
    claimed only when named. An implementation may leave ``named`` out.

    Example::

        @hookimpl
        def npuprof_recognise_run(path):
            return True if (path / "FRAMEWORK").is_dir() else None
    """


@hookspec
def npuprof_parse_run(run_dir: Path, context: "ParseContext") -> Optional["EventTable"]:
    """Turn the raw data this plugin knows in ``run_dir`` into events.

    Return an :class:`~npuprof.events.EventTable` (timestamps in ns on the
    run's epoch time base: ``context.to_epoch_ns`` converts monotonic ns) or
    None when the directory holds nothing of yours. Raise
    :class:`~npuprof.ProfilerDataError` for a corrupt file after keeping
    what is readable via ``context.warn``. Called once per run directory.

    Example::

        @hookimpl
        def npuprof_parse_run(run_dir, context):
            f = run_dir / "MYPROF" / "ops.csv"
            return parse_ops(f) if f.exists() else None
    """


@hookspec
def npuprof_export(result: "AnalysisResult", target: "ExportTarget") -> Optional[list]:
    """Write outputs for an analysed run; return the paths written.

    The one seam for outputs: an exporter is a function of the
    :class:`~npuprof.analysis.result.AnalysisResult` and a target folder.
    The writer (:func:`npuprof.export.writer.write_outputs`) may call every
    exporter at once, each on a thread of an executor it owns, while the
    analyzers still run (a large run), or one after another once they are
    done: ``result.events`` and ``result.info`` are there from the start;
    reading ``result.tables`` waits until the analyzers are done (and raises
    :class:`~npuprof.errors.ProfilerDataError` if they failed), so an exporter
    that reads only the events may write beside them. ``result``
    holds the event table, the run's info and every analyzer's table; read
    it, never change it. ``target.output_dir`` is the run's
    ``ASCEND_PROFILER_OUTPUT`` folder (inside the run for npuprof's own runs,
    elsewhere for another tool's read-only run) and ``target.export_type``
    the kinds asked for (``target.text``, ``target.db``). Write to a temporary
    name and rename (``npuprof.fileio.atomic_write``).

    Example::

        @hookimpl
        def npuprof_export(result, target):
            path = target.output_dir / "my_table.csv"
            write_csv(result.tables["op_statistic"], path)
            return [path]
    """


@hookspec
def npuprof_tool_layout(run_dir: Path) -> Optional["ToolLayout"]:
    """The export layout of the tool whose data ``run_dir`` is, when this plugin writes it.

    ``npuprof export timeline|summary`` then writes the run's files in that
    layout (:class:`~npuprof.export.tool_layout.ToolLayout`) instead of
    npuprof's own: under ``-o``, or into the run itself with ``--in-place`` or
    when ``collected_by_npuprof`` (as the tool would). Return None for runs
    of other tools.

    Example::

        @hookimpl
        def npuprof_tool_layout(run_dir):
            return SvpLayout() if run_dir.name.startswith("JOB") else None
    """


@hookspec
def npuprof_add_commands(subparsers: "argparse._SubParsersAction") -> None:
    """Add sub-commands to the ``npuprof`` command line.

    Each command sets ``func`` on its parser (``parser.set_defaults(func=...)``);
    ``func(args)`` returns the exit code.

    Example::

        @hookimpl
        def npuprof_add_commands(subparsers):
            p = subparsers.add_parser("hello")
            p.set_defaults(func=lambda args: print("hi") or 0)
    """


@hookspec
def npuprof_advice_rules() -> Optional[list]:
    """Return the :class:`~npuprof.analysis.advice.Rule` objects this plugin adds to ``npuprof advise``.

    A rule is a small pure unit over an analysed run: a stable ``id`` (unique among all plugins; a
    second rule with a taken id is reported and left out), a title, what it needs (tables, columns,
    event kinds: without them the rule is answered "not checked: needs ...") and ``check(ctx)``
    returning its findings (``[]``: checked, nothing found) or ``NotChecked(needs)``. Called once per
    ``advise``; no core edit is needed for a rule to appear in its output.

    Example::

        from npuprof.analysis.advice import Finding, Needs, Rule

        def _many_ranges(ctx):
            n = len(ctx.result.tables["range_statistic"])
            return [Finding("many_ranges", f"{n} ranges", "info", 0.0, [{"ranges": n}], "fewer ranges")] \\
                if n > 100 else []

        @hookimpl
        def npuprof_advice_rules():
            return [Rule("many_ranges", "Many user ranges", _many_ranges,
                         Needs(tables={"range_statistic": ("Name",)}))]
    """


@hookspec
def npuprof_analyzers() -> Optional[list["Analyzer"]]:
    """Return the :class:`~npuprof.analysis.analyzer.Analyzer` objects this plugin adds.

    An analyzer is a pure function from the run's event table to one
    :class:`~npuprof.analysis.table.Table`, declared with the table it makes
    (a name unique among all plugins: a second analyzer of a taken name is
    reported and left out; its columns; ``summary``: printed by ``npuprof
    show`` and merged over the ranks by ``npuprof cluster`` and ``npuprof
    report``; ``csv``: when ``npuprof analyse`` writes ``<table>.csv``) and what
    it needs (:class:`~npuprof.analysis.analyzer.AnalyzerNeeds`: event kinds,
    event columns, what must be collected). Called once per analysed run;
    every analyzer runs on every run, its table joins
    ``AnalysisResult.tables`` and ``show``, ``export summary`` and
    ``npuprof plugins`` list it, with no core edit; a summary table of a
    third-party plugin is also ``cluster_<table>`` (each rank's rows) of
    ``npuprof cluster`` and a section of the HTML report.

    Example::

        from npuprof.analysis.analyzer import Analyzer, AnalyzerNeeds
        from npuprof.analysis.table import Table
        from npuprof.events import EventKind

        def range_names(events):
            ranges = events.of_kind(EventKind.RANGE)
            return Table("range_names", ["Name"], {"Name": ranges.column_strings("name")})

        @hookimpl
        def npuprof_analyzers():
            return [Analyzer("range_names", ("Name",), range_names,
                             AnalyzerNeeds(events=(EventKind.RANGE,), columns=("name",)), summary=True)]
    """
