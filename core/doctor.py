"""``npuprof doctor``: what npuprof runs on here, for a bug report or a first look at a new host.

The platform and Python (free-threaded or not, the GIL on or off and why), the memory page size,
whether each compiled module is in use (and why not), which private runtime APIs npuprof found or
replaced by their fallback, the framework versions installed, and how fast the output directory takes
a write. Nothing is imported from a framework: versions come from the installed distributions' metadata.

Example::

    report = diagnose(Path("./npuprof_output"))
    print(report.text())
"""
from __future__ import annotations

import json
import mmap
import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata, util
from pathlib import Path
from typing import Optional

from . import __version__
from .compiled import (COMPILED_MODULES, FALLBACK_COST, CompiledStatus, compiled_status, free_threaded_build,
                       gil_status, load_compiled)

# distribution names whose versions are shown (the frameworks npuprof profiles, and what it reads with)
FRAMEWORKS = ("mindspore", "tensorflow", "tensorflow-cpu", "torch", "torch-npu", "numpy", "msgspec")
WRITE_TEST_BYTES = 32 << 20


@dataclass
class WriteSpeed:
    """A test file written, synced and removed in the output directory."""

    directory: str
    mb_per_s: Optional[float]       # None: it could not be written
    error: str = ""


@dataclass
class DoctorReport:
    version: str
    python: str
    free_threaded: bool
    platform: str
    machine: str
    page_size: int
    compiled: list[CompiledStatus]
    compiled_public_capi_only: dict[str, bool]
    private_api: dict[str, str]
    frameworks: dict[str, str]
    pyacl: str
    write: WriteSpeed
    fallback_cost: str = field(default="")
    gil: str = field(default="")        # GilStatus.line(): on/off, and why on a free-threaded build

    def to_json(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        lines = [f"npuprof {self.version}",
                 f"python      {self.python}{' (free-threaded)' if self.free_threaded else ''}",
                 f"GIL         {self.gil}",
                 f"platform    {self.platform} {self.machine}",
                 f"page size   {self.page_size} bytes"]
        for s in self.compiled:
            what = COMPILED_MODULES.get(s.name, "")
            if s.loaded:
                how = " (built without CPython's private C API)" if self.compiled_public_capi_only.get(s.name) else ""
                lines.append(f"compiled    {s.name}: loaded{how} ({what})")
            else:
                lines.append(f"compiled    {s.name}: NOT loaded, its Python fallback runs ({what}): {s.reason}")
        if self.fallback_cost:
            lines.append(f"fallback    costs {self.fallback_cost}")
        for name, how in self.private_api.items():
            lines.append(f"private API {name}: {how}")
        for name, version in self.frameworks.items():
            lines.append(f"installed   {name} {version}")
        lines.append(f"installed   pyACL (acl): {self.pyacl}")
        w = self.write
        lines.append(f"output dir  {w.directory}: " + (f"writes {w.mb_per_s:.0f} MB/s ({WRITE_TEST_BYTES >> 20} MiB, "
                                                       "synced)" if w.mb_per_s is not None else
                                                       f"cannot be written: {w.error}"))
        return "\n".join(lines)


def write_speed(directory: Path, size: int = WRITE_TEST_BYTES) -> WriteSpeed:
    """MB/s of writing ``size`` bytes to a new file in ``directory`` and syncing it; the file is removed.

    Example::

        write_speed(Path("."))   # WriteSpeed(directory='.', mb_per_s=850.3, error='')
    """
    block = os.urandom(1 << 20)
    try:
        fd, name = tempfile.mkstemp(prefix=".npuprof-doctor-", dir=directory)
    except OSError as e:
        return WriteSpeed(str(directory), None, f"{type(e).__name__}: {e.strerror or e}")
    try:
        t0 = time.perf_counter()
        written = 0
        while written < size:
            written += os.write(fd, block[:min(len(block), size - written)])
        os.fsync(fd)
        seconds = time.perf_counter() - t0
        return WriteSpeed(str(directory), written / 1e6 / max(seconds, 1e-9))
    except OSError as e:
        return WriteSpeed(str(directory), None, f"{type(e).__name__}: {e.strerror or e}")
    finally:
        os.close(fd)
        os.unlink(name)


def _distribution_version(name: str) -> Optional[str]:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _private_api_state() -> dict[str, str]:
    from . import private_api

    return {"RLock._is_owned": "found" if private_api._RLOCK_IS_OWNED is not None else
            "missing: npuprof's own tracked lock replaces it",
            "sys._getframe": "found" if private_api._GETFRAME is not None else
            "missing: call stacks come from a traceback",
            "numpy _set_madvise_hugepage": "found" if private_api.numpy_hugepage_switch() is not None else
            "missing: analysis keeps numpy's huge-page advice",
            "sys._is_gil_enabled": "found" if private_api._IS_GIL_ENABLED is not None else
            "missing (Python < 3.13): the GIL is taken to be on"}


def diagnose(output_dir: Path) -> DoctorReport:
    """Everything ``npuprof doctor`` prints; ``output_dir`` gets a test write."""
    compiled = [compiled_status(name) for name in COMPILED_MODULES]
    public_only = {}
    for s in compiled:
        module = load_compiled(s.name) if s.loaded else None
        public_only[s.name] = bool(getattr(module, "PUBLIC_CAPI_ONLY", 0))
    frameworks = {name: v for name in FRAMEWORKS if (v := _distribution_version(name)) is not None}
    try:
        pyacl = "found" if util.find_spec("acl") is not None else "not found"
    except (ImportError, ValueError):
        pyacl = "not found"
    return DoctorReport(
        version=__version__,
        python=f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})",
        free_threaded=free_threaded_build(),
        platform=f"{platform.system()} {platform.release()}",
        machine=platform.machine(),
        page_size=mmap.PAGESIZE,
        compiled=compiled,
        compiled_public_capi_only=public_only,
        private_api=_private_api_state(),
        frameworks=frameworks,
        pyacl=pyacl,
        write=write_speed(output_dir),
        fallback_cost="" if all(s.loaded for s in compiled) else FALLBACK_COST.line(),
        gil=gil_status().line(),
    )


def doctor_json(report: DoctorReport) -> str:
    return json.dumps(report.to_json(), indent=1)
