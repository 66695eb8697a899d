"""A forked child never runs its parent's profiler.

Invariant: in a child forked while a profiler runs (a data loader worker, ``multiprocessing`` with the
fork start method), the copy of the parent's profiler is inert: every module that keeps process-wide
profiler state registers a reset here, and the resets run in the child right after ``fork`` (in
registration order). The child holds no lock of its parent (see :mod:`npuprof.dirlock`) and buffers no
annotation into memory no flusher will ever write. A child forked from C, where ``os.register_at_fork``
hooks do not run, is covered by the Profiler's own pid checks.

Example::

    on_fork_in_child(lambda: my_state.clear())
"""
from __future__ import annotations

import os
from typing import Callable

from .sigsafe import reset_after_fork

_resets: list[Callable[[], None]] = [reset_after_fork]


def on_fork_in_child(reset: Callable[[], None]) -> None:
    """Run ``reset`` in every child forked from now on."""
    _resets.append(reset)


def _run_resets() -> None:
    for reset in list(_resets):
        try:
            reset()
        except Exception:   # a child must start whatever one reset does
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_run_resets)
