"""Progress reporting for long commands: what the analysis says, and a
terminal bar that shows it.

The analysis layer only calls a ``progress(message, done, total)``
callback (``done``/``total`` count units of work, e.g. the phases of every
run); :func:`terminal_progress` renders those calls as a rich progress bar on
stderr. The bar appears only when the work takes more than a moment (default
0.5 s), so quick commands print nothing extra, and it never appears when
stderr is not a terminal (logs, pipes, CI).

Example::

    from npuprof.analysis.pipeline import analyse_path

    with terminal_progress("analysing") as progress:
        analyse_path("./npuprof_data", progress=progress)
"""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import IO, Any, Iterator, Optional, Protocol

SHOW_AFTER_S = 0.5


class ProgressCallback(Protocol):
    """What long-running functions call: ``message`` says what starts now;
    ``done`` of ``total`` units are finished (both None when unknown)."""

    def __call__(self, message: str, done: Optional[int] = None, total: Optional[int] = None) -> None: ...


class TerminalProgress:
    """A rich progress bar driven by :class:`ProgressCallback` calls.

    It starts ``show_after`` seconds after creation (from a timer, so a single
    long phase still shows the bar) and only if the work is not finished by
    then. Thread-safe: calls may come from any thread.
    """

    def __init__(self, label: str, file: Optional[IO[str]] = None, show_after: float = SHOW_AFTER_S,
                 force_terminal: Optional[bool] = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, \
            TimeElapsedColumn

        from rich.table import Column

        console = Console(file=file, stderr=file is None, force_terminal=force_terminal)
        # the bar keeps its width; a long message (run names are long) is cut, not the bar
        message = TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1))
        self._bar = Progress(SpinnerColumn(), TextColumn(f"npuprof: {label}"), BarColumn(bar_width=24),
                             MofNCompleteColumn(), TimeElapsedColumn(), message, console=console, transient=True,
                             expand=True)
        self._task = self._bar.add_task("", total=None)
        self._lock = threading.Lock()
        self._shown = False
        self._closed = False
        self._timer = threading.Timer(show_after, self._show)
        self._timer.daemon = True
        self._timer.start()

    @property
    def shown(self) -> bool:
        """Whether the bar has been put on the terminal."""
        return self._shown

    def __call__(self, message: str, done: Optional[int] = None, total: Optional[int] = None) -> None:
        fields: dict[str, Any] = {"description": message}
        if total is not None:
            fields["total"] = total
        if done is not None:
            fields["completed"] = done
        with self._lock:
            self._bar.update(self._task, **fields)
            if self._shown:
                self._bar.refresh()

    def _show(self) -> None:
        with self._lock:
            if not self._closed and not self._shown:
                self._shown = True
                self._bar.start()

    def close(self) -> None:
        """Stop the timer and take the bar off the terminal."""
        self._timer.cancel()
        with self._lock:
            self._closed = True
            if self._shown:
                self._bar.stop()


@contextlib.contextmanager
def terminal_progress(label: str, enabled: bool = True, file: Optional[IO[str]] = None,
                      show_after: float = SHOW_AFTER_S) -> Iterator[Optional[ProgressCallback]]:
    """A :class:`TerminalProgress` for the duration of the block, or None
    when disabled or when the output (stderr by default) is not a terminal."""
    stream = file if file is not None else sys.stderr
    if not enabled or not stream.isatty():
        yield None
        return
    bar = TerminalProgress(label, file=stream, show_after=show_after)
    try:
        yield bar
    finally:
        bar.close()


class PhaseCounter:
    """Turns "phase starts" / "phase done" into ``progress(message, done, total)``
    calls, counting the phases of all the work of one command (every run's
    parsing, analyzers and exporters).

    Example::

        >>> calls = []
        >>> phases = PhaseCounter(lambda m, d, t: calls.append((m, d, t)), total=1)
        >>> with phases.phase("parsing"):
        ...     pass
        >>> calls
        [('parsing', 0, 1), ('done', 1, 1)]
    """

    def __init__(self, progress: Optional[ProgressCallback], total: int) -> None:
        self.progress = progress
        self.total = total
        self.done = 0

    @contextlib.contextmanager
    def phase(self, message: str) -> Iterator[None]:
        if self.progress:
            self.progress(message, self.done, self.total)
        yield
        self.done += 1
        if self.progress and self.done == self.total:
            self.progress("done", self.done, self.total)
