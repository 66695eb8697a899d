"""Drive MindSpore's own profiler (``mindspore.profiler``) inside npuprof windows.

For each recording window npuprof opens, :class:`MindSporeBackend` starts a
``mindspore.profiler.profile`` with the window's settings (activities,
level, AI Core metrics, memory, shapes, stacks, mstx) writing under
``<run_dir>/MINDSPORE/``, and stops it when the window ends. On CPU (and
GPU) the host operator files (``FRAMEWORK/``) move to the top of the run
directory, where ``npuprof analyse`` reads them next to npuprof's own host
events; MindSpore's analysis is not run. On Ascend MindSpore's
``*_ascend_ms`` directory (``FRAMEWORK/``, CANN ``PROF_*``,
``profiler_info``) stays whole under ``MINDSPORE/``: ``npuprof analyse``
has MindSpore turn it into ``ASCEND_PROFILER_OUTPUT`` there and reads that.

Time base: MindSpore's CPU profiler stamps operators with the wall clock
(``CLOCK_REALTIME``, ns since the epoch); npuprof stores host events on the
same base (monotonic reading + the window's clock anchor), so the two line
up with no conversion. The residual error is the drift between the two
clocks since the anchor (NTP slewing, ppm) or a wall-clock step during the
window.

Example (what the plugin does for you; users just create a Profiler)::

    backend = MindSporeBackend()
    backend.configure(prof.config)     # raises BackendUnavailable when it cannot run
    backend.start(session); ...; backend.stop(session)
"""
from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

from npuprof.enums import ProfilerActivity
from npuprof.errors import BackendUnavailable

from .framework_files import OP_TIMESTAMP_GLOB
from .options import mindspore_device_target, mindspore_options

log = logging.getLogger("npuprof")
NATIVE_DIR = "MINDSPORE"
# MindSpore warnings that only describe how npuprof drives it (one window, no schedule).
_NOISE = ("Profiler won't be using warmup", "Incorrect schedule: Stop profiler while current state is RECORD")
# What of MindSpore's *_ascend_ms directory moves to the top of the run directory
# (CPU/GPU only: on Ascend MindSpore's directory stays whole for its CANN analysis).
_MOVED = ("FRAMEWORK",)


class _NoiseFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return not any(n in msg for n in _NOISE)


@contextmanager
def quiet_mindspore_logger() -> Iterator[None]:
    """Drop the two MindSpore warnings that are artefacts of how npuprof drives it."""
    try:
        from mindspore import log as ms_log

        logger = ms_log._get_logger()
    except Exception:
        logger = None
    flt = _NoiseFilter()
    if logger is not None:
        logger.addFilter(flt)
    try:
        yield
    finally:
        if logger is not None:
            logger.removeFilter(flt)


class _Window:
    __slots__ = ("prof", "native_dir", "activities", "interface", "lost")

    def __init__(self, prof: Any, native_dir: Path, activities: list, interface: Any) -> None:
        self.prof = prof
        self.native_dir = native_dir
        self.activities = activities
        self.interface = interface   # MindSpore's ProfilerInterface class (is_initialized while running)
        self.lost = False


class MindSporeBackend:
    """Starts/stops ``mindspore.profiler`` for npuprof collection windows."""

    def __init__(self) -> None:
        self._windows: dict[Path, _Window] = {}
        self._lock = threading.Lock()

    # -- configure ------------------------------------------------------------------------
    def configure(self, config: Any) -> None:
        """Raise :class:`BackendUnavailable` unless MindSpore can record this config here."""
        if getattr(config, "framework", "ms") != "ms":
            raise BackendUnavailable(f"profiling a {config.framework!r} program, not MindSpore")
        if "mindspore" not in sys.modules:
            raise BackendUnavailable("mindspore is not imported in this process")
        target = mindspore_device_target()
        acts = set(config.activities)
        if target == "CPU" and ProfilerActivity.CPU not in acts:
            raise BackendUnavailable("MindSpore runs on CPU and records host operators only with the CPU activity")
        if target == "GPU" and not acts & {ProfilerActivity.CPU, ProfilerActivity.GPU}:
            raise BackendUnavailable("MindSpore runs on GPU; request the GPU or CPU activity")
        try:
            import mindspore.profiler  # noqa: F401
        except Exception as e:  # a broken install must not break the user's Profiler
            raise BackendUnavailable(f"mindspore.profiler cannot be imported: {e}") from None
        _prewarm_mindspore_context(target)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, session: Any) -> None:
        """Start MindSpore's profiler writing under ``<run_dir>/MINDSPORE``."""
        from mindspore import profiler as msp

        if _mindspore_profiler_running():
            session.warn_once("mindspore-busy", "npuprof: a mindspore.profiler session is already running; "
                                                "MindSpore operator data is not collected by npuprof")
            return
        cfg = session.config
        native = session.native_dir(NATIVE_DIR)
        activities = _ms_activities(msp, cfg.activities, mindspore_device_target())
        with quiet_mindspore_logger():
            handler = msp.tensorboard_trace_handler(dir_name=str(native), analyse_flag=False)
            if handler is None:  # MindSpore refused the path (it logs why and returns None)
                session.warn_once("mindspore-path", f"npuprof: mindspore.profiler refused the directory {native} "
                                                    "(see the MindSpore log); no MindSpore operator data")
                return
            kwargs = dict(activities=activities, with_stack=cfg.with_stack, profile_memory=cfg.profile_memory,
                          record_shapes=cfg.record_shapes and msp.ProfilerActivity.CPU in activities,
                          start_profile=False, on_trace_ready=handler,
                          experimental_config=_experimental(msp, cfg))
            opts = mindspore_options(cfg)
            for key in ("data_process", "parallel_strategy", "hbm_ddr", "pcie", "sync_enable"):
                if key in opts:
                    kwargs[key] = opts[key]
            prof = msp.profile(**kwargs)
            if prof is None:
                session.warn_once("mindspore-init", "npuprof: mindspore.profiler.profile() failed (see the "
                                                    "MindSpore log); no MindSpore operator data")
                return
            prof.start()
        if not _mindspore_profiler_running():
            session.warn_once("mindspore-start", "npuprof: mindspore.profiler did not start (see the MindSpore "
                                                 "log); no MindSpore operator data")
            _reset_mindspore_output_path()
            return
        from mindspore.profiler.profiler_interface import ProfilerInterface

        with self._lock:
            self._windows[session.run_dir] = _Window(prof, native, activities, ProfilerInterface)
        _add_mstx_sink(cfg)

    def step(self, session: Any, step_num: int) -> None:
        """Notice a MindSpore profiler stopped behind npuprof's back (cheap)."""
        win = self._windows.get(session.run_dir)
        if win is not None and not win.lost and not win.interface.is_initialized:
            win.lost = True
            session.warn_once("mindspore-lost", "npuprof: mindspore.profiler was stopped by other code during "
                                                f"step {step_num}; MindSpore operator data ends there")

    def stop(self, session: Any) -> None:
        """Stop MindSpore's profiler and move its raw data to the run directory."""
        with self._lock:
            win = self._windows.pop(session.run_dir, None)
        if win is None:
            return
        try:
            with quiet_mindspore_logger():
                win.prof.stop()
        finally:
            _reset_mindspore_output_path()
        if mindspore_device_target() == "Ascend":
            return  # PROF_* + FRAMEWORK + profiler_info stay together; the parser analyses them there
        moved = relocate_native_output(win.native_dir, session.run_dir)
        if any(str(a) == "CPU" or getattr(a, "value", "") == "CPU" for a in win.activities):
            fw = session.run_dir / "FRAMEWORK"
            if not (fw.is_dir() and any(fw.glob(OP_TIMESTAMP_GLOB))):
                # Normal when MindSpore is merely imported and the window ran no MindSpore op: say it quietly.
                log.info("npuprof: mindspore.profiler wrote no host operator file for %s (no MindSpore op ran in "
                         "the window, or see the MindSpore log)", session.run_dir.name)
        log.debug("npuprof: MindSpore data moved into %s: %s", session.run_dir, moved)


def _prewarm_mindspore_context(target: Optional[str]) -> None:
    """Create MindSpore's profiler context now, in the Profiler constructor (CPU/GPU only).

    Its first creation looks for the CANN version by walking
    ``$ASCEND_HOME_PATH`` up to depth 10, and with the variable unset it
    walks the *current directory* (0.2 s in a source checkout, much more in
    a large home directory). Without an Ascend device there is no CANN to
    find: the walk is pointed at an empty directory and done here, so the
    cost stays out of the first recorded step. On Ascend the context is left
    to MindSpore (it caches the rank, which may not be initialised yet, and
    CANN's set_env.sh sets ASCEND_HOME_PATH).
    """
    import tempfile

    if target == "Ascend" or os.environ.get("ASCEND_HOME_PATH"):
        return
    try:
        from mindspore.profiler.common.profiler_context import ProfilerContext
    except Exception:
        return
    with tempfile.TemporaryDirectory(prefix="npuprof-nocann-") as empty:
        os.environ["ASCEND_HOME_PATH"] = empty
        try:
            ProfilerContext()
        except Exception:
            pass
        finally:
            os.environ.pop("ASCEND_HOME_PATH", None)


def _mindspore_profiler_running() -> bool:
    try:
        from mindspore.profiler.profiler_interface import ProfilerInterface
    except Exception:
        return False
    return bool(getattr(ProfilerInterface, "is_initialized", False))


def _reset_mindspore_output_path() -> None:
    """Forget the directory our handler stored in MindSpore's process-wide context,
    so a later plain mindspore.profiler run does not write into our run directory."""
    try:
        from mindspore.profiler.common.profiler_context import ProfilerContext

        ProfilerContext().on_trace_ready_output_path = None
    except Exception:
        pass


def _ms_activities(msp: Any, activities: Any, target: Optional[str]) -> list:
    out = []
    for act in activities:
        value = getattr(act, "value", act)
        if value == "NPU" and target != "Ascend":
            continue  # no device here: MindSpore would only warn
        if value == "GPU" and target != "GPU":
            continue
        out.append(msp.ProfilerActivity(value))
    return out


def _experimental(msp: Any, cfg: Any) -> Any:
    from mindspore.profiler import _ExperimentalConfig

    opts = mindspore_options(cfg)
    return _ExperimentalConfig(
        profiler_level=msp.ProfilerLevel(getattr(cfg.profiler_level, "value", cfg.profiler_level)),
        aic_metrics=msp.AicoreMetrics(getattr(cfg.aic_metrics, "value", cfg.aic_metrics)),
        l2_cache=bool(cfg.l2_cache),
        mstx=bool(cfg.mstx),
        data_simplification=bool(cfg.data_simplification),
        export_type=[msp.ExportType(getattr(e, "value", e)) for e in cfg.export_type],
        mstx_domain_include=list(cfg.mstx_domain_include) or None,
        mstx_domain_exclude=list(cfg.mstx_domain_exclude) or None,
        sys_io=bool(opts.get("sys_io", False)),
        sys_interconnection=bool(opts.get("sys_interconnection", False)),
    )


def relocate_native_output(native_dir: Path, run_dir: Path) -> list[str]:
    """Move ``FRAMEWORK/`` out of MindSpore's ``*_ascend_ms`` dirs into ``run_dir``.

    MindSpore's own logs stay under ``native_dir``. A name already present in
    ``run_dir`` is merged file by file (never overwritten). Returns the
    names moved.
    """
    moved: list[str] = []
    if not native_dir.is_dir():
        return moved
    for ms_dir in sorted(native_dir.glob("*_ascend_ms")):
        for child in sorted(ms_dir.iterdir()):
            if child.name not in _MOVED or child.is_symlink():
                continue
            target = run_dir / child.name
            if not target.exists():
                os.replace(child, target)
                moved.append(child.name)
                continue
            for item in child.iterdir():
                dest = target / item.name
                if not dest.exists():
                    shutil.move(str(item), str(dest))
                    moved.append(f"{child.name}/{item.name}")
    return moved


def _add_mstx_sink(cfg: Any) -> None:
    """On an Ascend device with mstx on, forward npuprof ranges to MindSpore's mstx
    so they also appear on the device timeline (msprof's MsTx layer)."""
    if not cfg.mstx or mindspore_device_target() != "Ascend":
        return
    try:
        from mindspore.profiler import mstx as ms_mstx
        from npuprof.recorder import active_recorder
    except Exception:
        return
    rec = active_recorder()
    if rec is None or any(isinstance(s, _MsMstxSink) for s in rec.sinks):
        return
    rec.sinks = tuple(rec.sinks) + (_MsMstxSink(ms_mstx),)


class _MsMstxSink:
    """Annotation sink calling mindspore.profiler.mstx (NPU only; unverified without one)."""

    def __init__(self, ms_mstx: Any) -> None:
        self._mstx = ms_mstx

    def mark(self, message: str, stream: Any = None) -> None:
        self._mstx.mark(message, stream)

    def range_start(self, message: str, same_thread: bool = True) -> int:
        return int(self._mstx.range_start(message) or 0)   # MindSpore's ranges may end on any thread

    def range_end(self, range_id: int) -> None:
        if range_id:
            self._mstx.range_end(range_id)
