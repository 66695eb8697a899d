"""npuprof plugin for TensorFlow: drive TF's native profiler, parse its XSpace.

Backend: when a Profiler asks for CPU or GPU activity and ``tensorflow`` is
imported, each recording window starts
``tf.profiler.experimental.start(<run_dir>/TF)`` and stops it at the window's
end (ProfilerOptions are not passed: TF 2.20/2.21 ignore them). A profiler
with ``framework="tf"`` created before ``import tensorflow`` starts TF's
profiler at the first ``step()`` after the import. If another
TF profiler is already running (e.g. Keras' TensorBoard callback), npuprof
says so once and leaves it alone.

Parser: ``<run_dir>/TF/plugins/profile/*/*.xplane.pb`` become OP / API /
KERNEL / step rows (see :mod:`npuprof.integrations.tensorflow.xplane`). A bare
TensorBoard logdir (``plugins/profile/...`` with no npuprof run info) is also
recognised, so ``npuprof analyse ./logs`` works on it.

This module never imports TensorFlow at import time.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any, Optional

from npuprof.errors import BackendUnavailable
from npuprof.events import EventKind, EventTable
from npuprof.hookspecs import hookimpl

log = logging.getLogger("npuprof")

NATIVE_DIR = "TF"
_state_lock = threading.Lock()
_running_for: Optional[Path] = None  # run_dir whose window owns TF's profiler
_pending: Any = None  # session waiting for `import tensorflow`


def tensorflow_imported() -> bool:
    return "tensorflow" in sys.modules


def tensorflow_installed() -> bool:
    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


@hookimpl
def npuprof_configure(config: Any) -> None:
    acts = {str(getattr(a, "value", a)) for a in config.activities}
    if not acts & {"CPU", "GPU"}:
        raise BackendUnavailable("tensorflow: neither CPU nor GPU activity requested")
    if tensorflow_imported():
        if config.profile_memory:
            _allocator_events_on()
        return
    # A TensorFlow profiler built before `import tensorflow` (or under `npuprof collect`)
    # starts TF's profiler at the first step after TensorFlow appears.
    if str(config.framework) != "tf" or not tensorflow_installed():
        raise BackendUnavailable("tensorflow is not imported in this process")
    if config.profile_memory:
        _allocator_events_on()     # only where this backend runs: nobody else's allocator is changed


CPU_BFC_ENV = "TF_CPU_ALLOCATOR_USE_BFC"


def _allocator_events_on() -> None:
    """profile_memory: TensorFlow records its allocator events (MemoryAllocation/Deallocation) on CPU
    only with its BFC allocator there, chosen when TensorFlow creates the CPU allocator. Before
    ``import tensorflow`` npuprof turns it on; after, it can only say so (once)."""
    if os.environ.get(CPU_BFC_ENV, "").lower() in ("1", "true"):
        return
    if not tensorflow_imported():
        os.environ[CPU_BFC_ENV] = "true"
        return
    log.warning("npuprof: profile_memory: TensorFlow is already imported and %s is not set, so its CPU "
                "allocator records no allocations; set %s=true before TensorFlow starts (GPU allocations "
                "are recorded either way)", CPU_BFC_ENV, CPU_BFC_ENV)


def _start_tf(session: Any) -> None:
    global _running_for, _pending
    import tensorflow as tf

    _pending = None
    logdir = session.native_dir(NATIVE_DIR)
    try:
        tf.profiler.experimental.start(str(logdir))
    except Exception as e:  # AlreadyExistsError when another TF profiler runs
        session.warn_once("tf-profiler-busy",
                          f"npuprof: TensorFlow's profiler could not start ({type(e).__name__}: {e}); "
                          "this window has no TensorFlow op data")
        return
    _running_for = session.run_dir


@hookimpl
def npuprof_start(session: Any) -> None:
    global _pending
    with _state_lock:
        if tensorflow_imported():
            _start_tf(session)
        else:
            _pending = session


@hookimpl
def npuprof_step(session: Any, step_num: int) -> None:
    if _pending is session and tensorflow_imported():
        with _state_lock:
            if _pending is session:
                _start_tf(session)


@hookimpl
def npuprof_stop(session: Any) -> None:
    global _running_for, _pending
    with _state_lock:
        if _pending is session:
            _pending = None
        if _running_for != session.run_dir:
            return
        _running_for = None
        import tensorflow as tf

        try:
            tf.profiler.experimental.stop(save=bool(getattr(session, "saved", True)))
        except Exception as e:
            session.warn_once("tf-profiler-stop",
                              f"npuprof: stopping TensorFlow's profiler failed ({type(e).__name__}: {e})")
        if session.config.record_shapes and getattr(session, "saved", True):
            from .opshapes import write_op_shapes

            try:
                write_op_shapes(session.run_dir)
            except Exception as e:      # shapes are extra: the window's data stands without them
                session.warn_once("tf-op-shapes", f"npuprof: record_shapes: TensorFlow's op shapes could not be "
                                                  f"written ({type(e).__name__}: {e})")


@hookimpl
def npuprof_recognise_run(path: Path) -> Optional[bool]:
    from .xplane import find_xspace_files

    path = Path(path)
    if find_xspace_files(path) and not any(path.glob("profiler_info*.json")):
        return True
    return None


@hookimpl
def npuprof_parse_run(run_dir: Path, context: Any) -> Optional[EventTable]:
    from .xplane import find_xspace_files, read_logdir

    run_dir = Path(run_dir)
    root = run_dir / NATIVE_DIR
    if not find_xspace_files(root):
        root = run_dir
        if not find_xspace_files(root):
            return None
    info = context.info
    # npuprof's own ProfilerStep rows exist when the run recorded steps; TF markers are then plain ranges.
    own_steps = bool(info.steps)
    pid = info.pid if 0 <= info.pid < 1 << 62 else 0
    table = read_logdir(root, pid=pid, step_kind=EventKind.RANGE if own_steps else EventKind.STEP,
                        on_error=context.flag_message)
    from .opshapes import FILE_NAME, read_op_shapes

    try:
        shapes = read_op_shapes(run_dir)
    except (OSError, ValueError) as e:     # the trace stands without them; the run says what was not read
        context.flag_message(f"{run_dir / FILE_NAME}: unreadable, the ops have no shapes ({type(e).__name__}: {e})")
        shapes = {}
    return _with_shapes(table, shapes) if table is not None and shapes else table


def _with_shapes(table: EventTable, shapes: dict) -> EventTable:
    """OP events of an op ``shapes`` names carry its shapes as args (record_shapes; see ``opshapes``)."""
    import json

    import numpy as np

    names = table.string_array("name")
    ops = np.flatnonzero(table["kind"] == np.uint8(EventKind.OP))
    strings = list(table.strings)
    code_of: dict = {}
    merged: dict = {}     # (args code, op name) -> the merged args' code: each pair is encoded once
    args = table["args"].copy()
    for i in ops.tolist():
        name, old = str(names[i]), int(args[i])
        code = merged.get((old, name))
        if code is None:
            entry = shapes.get(name)
            if entry is None:
                continue
            text = json.dumps({**table.args_object(old), **entry}, sort_keys=True)
            code = merged[(old, name)] = code_of.setdefault(text, len(strings))
            if code == len(strings):
                strings.append(text)
        args[i] = code
    if not code_of:
        return table
    return EventTable(dict(table.cols, args=args), strings)
