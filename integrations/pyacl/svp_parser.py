"""The SS928/SS927 vendor parser (``msprof.pyc``) run on a raw JOB directory.

A JOB collected on an SS928/SS927 board holds raw data (``data/`` and
``info.json.N``) that npuprof does not decode: the vendor's ``msprof.pyc``
(CANN toolkit, ``toolkit/tools/profiler/profiler_tool/analysis/msprof/``)
does, with ``import -dir JOB``, ``export timeline -dir JOB`` and ``export
summary -dir JOB --format csv`` (seed 002). npuprof runs those three on a
*copy* of the JOB in a temporary directory (the tool writes into the JOB it
parses; the user's JOB is another tool's data and stays untouched), reads the
exports of the copy and removes it.

Where ``msprof.pyc`` is looked for, first found wins: ``$NPUPROF_MSPROF_PYC``
(the command line's ``--msprof PATH`` sets it for the command);
a ``msprof.pyc`` in a ``PATH`` directory; under ``$ASCEND_TOOLKIT_HOME``,
``$ASCEND_HOME_PATH`` or ``$INSTALL_DIR``. It runs with
``$NPUPROF_MSPROF_PYTHON`` (a ``.pyc`` runs only on the Python version that
compiled it; the manual's is ``python3.7.5``), else this interpreter.
``NPUPROF_NO_MSPROF=1`` turns the vendor parser off.

Example::

    parser = find_svp_parser()
    if parser is not None:
        with vendor_exports(Path("JOB123"), parser, warn=print) as exported:
            table = read_svp_timeline(exported, warn=print)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

from npuprof.errors import ProfilerDataError

PARSER_ENV = "NPUPROF_MSPROF_PYC"
PYTHON_ENV = "NPUPROF_MSPROF_PYTHON"
NO_PARSER_ENV = "NPUPROF_NO_MSPROF"
PARSER_NAME = "msprof.pyc"
# where the toolkit installs it, below its root (the manual's ${INSTALL_DIR})
_INSTALLED = ("toolkit/tools/profiler/profiler_tool/analysis/msprof/msprof.pyc",
              "tools/profiler/profiler_tool/analysis/msprof/msprof.pyc")
PARSER_TIMEOUT = 3600
Warn = Callable[[str], None]

HOW_TO_GET_IT = (f"npuprof does not decode SS928/SS927 raw data; the vendor's {PARSER_NAME} does. It is in the "
                 "CANN toolkit (toolkit/tools/profiler/profiler_tool/analysis/msprof/msprof.pyc): pass "
                 f"--msprof /path/to/msprof.pyc or set {PARSER_ENV}=/path/to/msprof.pyc (and "
                 f"{PYTHON_ENV}=python3.7 if it was built for another "
                 f"Python), put {PARSER_NAME} on PATH, or set ASCEND_TOOLKIT_HOME; or run 'python3 msprof.pyc "
                 "import -dir JOB' and 'export timeline -dir JOB' yourself and give npuprof the JOB")


def is_svp_job(path: Path) -> bool:
    """A JOB folder of an SS928/SS927 board (``info.json.N`` with raw ``data/`` or msprof.pyc's ``timeline/``)."""
    return (path.is_dir() and path.name.startswith("JOB") and any(path.glob("info.json*"))
            and ((path / "data").is_dir() or (path / "timeline").is_dir()))


def is_raw_job(path: Path) -> bool:
    """An SVP JOB directory (``data/`` + ``info.json.N``) that msprof.pyc has not exported yet."""
    return (path.name.startswith("JOB") and (path / "data").is_dir() and any(path.glob("info.json*"))
            and not (path / "timeline").is_dir())


def find_svp_parser() -> Optional[Path]:
    """``msprof.pyc`` (see the module doc for where it is looked for), or None."""
    if os.environ.get(NO_PARSER_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return None
    given = os.environ.get(PARSER_ENV, "").strip()
    if given:
        path = Path(given)
        if not path.is_file():
            raise ProfilerDataError(path, f"({PARSER_ENV}) is not a file; give the path of {PARSER_NAME}")
        return path
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if folder and (Path(folder) / PARSER_NAME).is_file():
            return Path(folder) / PARSER_NAME
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "INSTALL_DIR"):
        root = os.environ.get(var)
        if root:
            for rel in _INSTALLED:
                if (Path(root) / rel).is_file():
                    return Path(root) / rel
    return None


@contextmanager
def vendor_exports(job_dir: Path, parser: Path, warn: Warn, timeout: float = PARSER_TIMEOUT) -> Iterator[Path]:
    """A temporary copy of ``job_dir`` that ``parser`` has imported and exported (timeline, csv summary).

    Raises :class:`~npuprof.ProfilerDataError` when a command fails or leaves no ``timeline/``.
    """
    python = os.environ.get(PYTHON_ENV, "").strip() or sys.executable
    with tempfile.TemporaryDirectory(prefix="npuprof-svp-") as scratch:
        copy = Path(scratch) / job_dir.name
        shutil.copytree(job_dir, copy, symlinks=True)
        for args in (["import", "-dir", str(copy)], ["export", "timeline", "-dir", str(copy)],
                     ["export", "summary", "-dir", str(copy), "--format", "csv"]):
            _run(python, parser, args, job_dir, timeout)
        if not (copy / "timeline").is_dir():
            raise ProfilerDataError(job_dir, f"{parser} exported no timeline/ directory")
        if not (copy / "summary").is_dir():
            warn(f"{job_dir}: {parser} exported no summary/ directory")
        yield copy


def _run(python: str, parser: Path, args: list, job_dir: Path, timeout: float) -> None:
    cmd = [python, str(parser), *args]
    command = " ".join(args[:args.index("-dir")])    # import / export timeline / export summary
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ProfilerDataError(job_dir, f"running {PARSER_NAME} {command} failed ({e})") from None
    if proc.returncode != 0:
        tail = " | ".join(proc.stdout.strip().splitlines()[-3:]) if proc.stdout else ""
        raise ProfilerDataError(job_dir, f"{PARSER_NAME} {command} exited {proc.returncode}: {tail}")
