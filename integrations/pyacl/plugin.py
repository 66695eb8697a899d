"""npuprof plugin for pyACL apps: backend, CANN-output parser, ``collect`` command.

Backend (``Profiler(activities=[NPU])`` in a process that imported ``acl``,
without MindSpore/TF/torch_npu): the Profiler's constructor does
``acl.prof.init`` (so create the Profiler after ``acl.init`` and before
loading models, as the contract requires); each recording window does
``create_config`` + ``start`` for ``device_id`` (one id or a list: every device
in one configuration, as ``acl.prof.start`` allows; none for LevelNone) and
``stop`` + ``destroy_config`` at its end; ``acl.prof.finalize`` runs just
before the app's ``acl.finalize`` (or at exit). The window's run directory
gets ``CANN/prof_dirs.json`` pointing at the PROF_ directories written for
it. With mstx on, ``record_function``/``mstx`` map onto msproftx stamps.

If acl.json, msprof or the environment already switched CANN profiling on,
the backend says so and stays out (the API would fail with 100042).

Parser: a ``PROF_*`` / SVP ``JOB*`` directory is recognised as a run;
``npuprof analyse PROF_x`` imports it (see :mod:`.cann_import`).
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any, Optional

from npuprof.errors import BackendUnavailable
from npuprof.fileio import atomic_write, secure_mkdir
from npuprof.hookspecs import hookimpl

log = logging.getLogger("npuprof")
NATIVE_DIR = "CANN"
_lock = threading.Lock()


class _Backend:
    """Process-wide: acl.prof is initialised once per process (the contract)."""

    def __init__(self) -> None:
        self.profiler: Any = None  # AclProfiler
        self.sink: Any = None  # MsprofTxSink
        self.handles: dict = {}  # id(session) -> StartedConfig
        self.atexit_registered = False

    def ensure_init(self, config: Any) -> None:
        from .contract import CONTRACT
        from .flags import config_mask
        from .profiler import AclProfiler

        if self.profiler is not None and self.profiler.initialised:
            return
        if CONTRACT.prof_initialised:
            raise BackendUnavailable("the application initialised acl.prof itself; npuprof leaves its "
                                     "collection alone (only one acl.prof.init per process)")
        mask, _ = config_mask(config)  # validates level/metrics before anything starts
        root = Path(config.output_path) / f"cann_{config.worker_name}_{os.getpid()}"
        secure_mkdir(root)
        (root / ".npuprof_cann_root").touch()
        prof = AclProfiler(root, profiler_level=config.profiler_level, aic_metrics=config.aic_metrics,
                           mstx=config.mstx, l2_cache=getattr(config, "l2_cache", False),
                           profile_memory=config.profile_memory)
        prof.init()
        self.profiler = prof
        if not self.atexit_registered:
            atexit.register(self.finalize_quietly)
            self.atexit_registered = True

    def finalize_quietly(self) -> None:
        prof = self.profiler
        if prof is not None and prof.initialised and not prof.finalized:
            try:
                prof.finalize(force=True)
            except Exception as e:
                log.warning("npuprof: acl.prof.finalize at exit failed: %s", e)


_backend = _Backend()


def _reset_for_tests() -> None:
    global _backend
    _backend = _Backend()


@hookimpl
def npuprof_configure(config: Any) -> None:
    from npuprof.enums import ProfilerActivity

    from ._acl import load_acl, pyacl_app_running
    from .contract import CONTRACT
    from .tracking import track_acl

    if ProfilerActivity.NPU not in config.activities:
        raise BackendUnavailable("NPU activity not requested")
    # A framework that drives CANN itself owns acl.prof: a second driver would fail (100042)
    # or double-count device events.
    for framework in ("mindspore", "npu_bridge", "npu_device"):
        if framework in sys.modules:
            raise BackendUnavailable(f"{framework} is imported and drives CANN profiling itself")
    why_not = pyacl_app_running()
    if why_not:
        raise BackendUnavailable(why_not)
    acl = load_acl()
    track_acl(acl)
    src = CONTRACT.cmd_mode()
    if src:
        raise BackendUnavailable(f"CANN profiling is already switched on by {src}; that configuration takes "
                                 "precedence over the acl.prof API (which would fail with 100042), so npuprof does "
                                 "not call it. Import the PROF_ data afterwards with 'npuprof analyse <dir>'")
    with _lock:
        _backend.ensure_init(config)


def _write_index(session: Any, handle: Any) -> None:
    """run_dir/CANN/prof_dirs.json: the PROF_ dirs this window's start created (relative paths)."""
    cann = session.native_dir(NATIVE_DIR)
    atomic_write(cann / "prof_dirs.json", json.dumps({"prof_dirs": getattr(session, "_acl_prof_dirs", []),
                                                      "devices": list(handle.devices), "mask": hex(handle.mask)},
                                                     indent=2))


@hookimpl
def npuprof_start(session: Any) -> None:
    from npuprof.recorder import active_recorder

    from . import constants as C
    from .msproftx import MsprofTxSink

    prof = _backend.profiler
    if prof is None or not prof.initialised:
        return
    cfg = session.config
    before = set(prof.prof_dirs)
    handle = prof.start(devices=list(cfg.device_ids or (cfg.device_id,)))
    _backend.handles[id(session)] = handle
    session._acl_prof_dirs = [os.path.relpath(p, session.run_dir / NATIVE_DIR)
                              for p in prof.prof_dirs if p not in before]
    _write_index(session, handle)
    if handle.mask & C.ACL_PROF_MSPROFTX:
        sink = _backend.sink or MsprofTxSink(prof.prof)
        _backend.sink = sink
        sink.activate()
        rec = active_recorder()
        if rec is not None and sink not in rec.sinks:
            rec.sinks = tuple(rec.sinks) + (sink,)


@hookimpl
def npuprof_stop(session: Any) -> None:
    from npuprof.recorder import active_recorder

    handle = _backend.handles.pop(id(session), None)
    if handle is None:
        return
    sink = _backend.sink
    if sink is not None:
        sink.deactivate()  # msproftx only between start and stop
        rec = active_recorder()
        if rec is not None and sink in rec.sinks:
            rec.sinks = tuple(s for s in rec.sinks if s is not sink)
    _backend.profiler.stop(handle)
    _write_index(session, handle)


@hookimpl
def npuprof_recognise_run(path: Path, named: bool) -> Optional[bool]:
    from .cann_import import is_prof_dir, owned_by_npuprof

    path = Path(path)
    # a PROF_ of an npuprof run is read with that run when searching; named on its own, it is read alone
    if is_prof_dir(path) and (named or not owned_by_npuprof(path)):
        return True
    return None


@hookimpl
def npuprof_parse_run(run_dir: Path, context: Any) -> Any:
    from .cann_import import is_prof_dir, parse_many, parse_prof_dir, referenced_prof_dirs
    from .svp_parser import is_svp_job

    run_dir = Path(run_dir)
    if is_svp_job(run_dir):
        from .svp_read import parse_svp_job

        return parse_svp_job(run_dir, context.flag_message, context.add_table)
    if is_prof_dir(run_dir):
        return parse_prof_dir(run_dir, context.flag_message, note=context.warn)
    dirs = referenced_prof_dirs(run_dir)
    if not dirs:
        if (run_dir / NATIVE_DIR / "prof_dirs.json").exists():
            context.flag_message(f"{run_dir}: the CANN PROF_ directories listed in {NATIVE_DIR}/prof_dirs.json are "
                                 "missing")
        return None
    return parse_many(dirs, context.flag_message, note=context.warn)


@hookimpl
def npuprof_add_commands(subparsers: Any) -> None:
    from .collect import add_collect_command

    add_collect_command(subparsers)


@hookimpl
def npuprof_tool_layout(run_dir: Path) -> Any:
    from .svp_layout import SvpLayout, collected_by_npuprof
    from .svp_parser import is_svp_job

    run_dir = Path(run_dir)
    if is_svp_job(run_dir):
        return SvpLayout(collected_by_npuprof=collected_by_npuprof(run_dir))
    return None
