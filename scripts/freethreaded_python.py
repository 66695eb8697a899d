"""A free-threaded CPython 3.13 (``python3.13t``) for ``make test-pythons``, built here once from Debian's source.

    python scripts/freethreaded_python.py [--build-dir build/cpython-3.13t]

No free-threaded CPython comes as a package this machine can install (Debian 12 has none, Debian 13's
python3.13 source package builds no free-threaded binary, and no package we found on the package
registry ships one for x86-64 Linux), so it is built from the upstream CPython tarball that Debian's ``python3.13``
source package carries (its ``.orig.tar.xz``), from the Debian mirror apt uses here:

1. ``dists/SUITE/InRelease`` is checked with ``gpgv`` against Debian's archive keyring, the suite's
   ``main/source/Sources.xz`` against the checksum it signs, the tarball against the checksum that
   ``Sources.xz`` gives for it. Nothing unchecked is built.
2. ``./configure --disable-gil --prefix=BUILD/install`` (no ``--enable-optimizations``: a profile-guided
   build takes far longer, and the check is about behaviour, not speed), ``make -j2``, ``make install``
   (configure 3 min, make 14, install 3 here, on 2 cores shared with other work).
3. The interpreter, ``BUILD/install/bin/python3.13t``, must say it is free-threaded
   (``sysconfig.get_config_var("Py_GIL_DISABLED")``) and have the modules npuprof and pip need.

Everything is kept under the build directory (``build/cpython-3.13t``, which ``make clean`` removes): a
second run finds the interpreter and downloads nothing. The C compiler and the -dev packages of the
libraries those modules use (Debian: ``libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev
libsqlite3-dev``) must be installed. Prints the interpreter's path on its last line; exits 1 with the
reason when it cannot be built. ``NPUPROF_DEBIAN_MIRROR`` names another mirror (a URL ending in
``/debian``), ``NPUPROF_CPYTHON_SUITE`` another suite (default ``trixie``).

Example::

    $ python scripts/freethreaded_python.py
    ...
    /path/to/npuprof/build/cpython-3.13t/install/bin/python3.13t
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BUILD = ROOT / "build" / "cpython-3.13t"
SOURCE_PACKAGE = "python3.13"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
# the standard modules npuprof (ctypes, sqlite3, lzma, bz2, zlib) and pip (ssl, zlib) import
NEEDED_MODULES = ("ctypes", "sqlite3", "lzma", "bz2", "zlib", "ssl", "_hashlib", "venv", "ensurepip")
BUILD_TIMEOUT_S = 3 * 3600


class BuildError(Exception):
    """Why the interpreter could not be had (printed as the last line, exit 1)."""


def say(msg: str) -> None:
    print(f"[python3.13t {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def interpreter(build: Path) -> Path:
    return build / "install" / "bin" / "python3.13t"


def is_free_threaded_313(python: Path) -> bool:
    """Whether ``python`` runs, is 3.13 built with ``--disable-gil``, and imports NEEDED_MODULES."""
    code = ("import sys, sysconfig\n"
            f"import {', '.join(NEEDED_MODULES)}\n"
            "assert sys.version_info[:2] == (3, 13) and sysconfig.get_config_var('Py_GIL_DISABLED')\n")
    try:
        return subprocess.run([str(python), "-c", code], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def debian_mirror() -> str:
    """The Debian mirror apt uses here (``URIs:`` or ``deb`` lines ending in ``/debian``), or NPUPROF_DEBIAN_MIRROR."""
    if os.environ.get("NPUPROF_DEBIAN_MIRROR"):
        return os.environ["NPUPROF_DEBIAN_MIRROR"].rstrip("/")
    files = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*.sources")),
             *sorted(Path("/etc/apt/sources.list.d").glob("*.list"))]
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        for url in re.findall(r"^(?:URIs:|deb(?:-src)?(?:\s+\[[^\]]*\])?)\s+(\S+)", text, re.M):
            if url.rstrip("/").endswith("/debian"):
                return url.rstrip("/")
    raise BuildError("no Debian mirror in /etc/apt/sources.list{,.d}: set NPUPROF_DEBIAN_MIRROR to one "
                     "(a URL ending in /debian)")


def download(url: str, to: Path) -> None:
    say(f"downloading {url}")
    tmp = to.with_name(to.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=120) as response, open(tmp, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
    except OSError as e:
        raise BuildError(f"cannot download {url}: {e}") from e
    tmp.replace(to)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Tarball:
    name: str       # python3.13_3.13.5.orig.tar.xz
    sha256: str
    url: str


def find_tarball(mirror: str, suite: str, work: Path) -> Tarball:
    """The upstream tarball of Debian's python3.13 source package in ``suite``, from the signed index."""
    if shutil.which("gpgv") is None or not KEYRING.exists():
        raise BuildError(f"gpgv and {KEYRING} (Debian's gpgv and debian-archive-keyring packages) check the "
                         "source index; install them")
    inrelease = work / f"{suite}.InRelease"
    download(f"{mirror}/dists/{suite}/InRelease", inrelease)
    release = work / f"{suite}.Release"
    done = subprocess.run(["gpgv", "--keyring", str(KEYRING), "--output", str(release), str(inrelease)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildError(f"{suite}'s InRelease does not verify against {KEYRING}: {done.stderr.strip()}")
    wanted = re.search(r"^ ([0-9a-f]{64})\s+\d+\s+main/source/Sources\.xz$",
                       release.read_text().split("SHA256:", 1)[-1], re.M)
    if wanted is None:
        raise BuildError(f"{suite}'s Release lists no SHA256 of main/source/Sources.xz")
    sources = work / f"{suite}.Sources.xz"
    download(f"{mirror}/dists/{suite}/main/source/Sources.xz", sources)
    if sha256(sources) != wanted.group(1):
        raise BuildError(f"{suite}'s Sources.xz does not match the checksum its signed Release gives")
    stanza = next((s for s in lzma.decompress(sources.read_bytes()).decode("utf-8", "replace").split("\n\n")
                   if re.search(rf"^Package: {re.escape(SOURCE_PACKAGE)}$", s, re.M)), None)
    if stanza is None:
        raise BuildError(f"{suite} has no source package {SOURCE_PACKAGE}")
    directory = re.search(r"^Directory: (\S+)$", stanza, re.M)
    checksums = stanza.split("Checksums-Sha256:", 1)[-1]
    orig = re.search(r"^ ([0-9a-f]{64}) \d+ (\S+\.orig\.tar\.xz)$", checksums, re.M)
    if directory is None or orig is None:
        raise BuildError(f"{suite}'s {SOURCE_PACKAGE} stanza names no directory or .orig.tar.xz")
    return Tarball(orig.group(2), orig.group(1), f"{mirror}/{directory.group(1)}/{orig.group(2)}")


def run(argv: list[str], cwd: Path, log: Path) -> None:
    say(f"$ {' '.join(argv)}   (output: {log})")
    t0 = time.monotonic()
    with open(log, "ab") as out:
        try:
            done = subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise BuildError(f"{' '.join(argv)} ran past {BUILD_TIMEOUT_S} s (see {log})") from e
    took = f"exit {done.returncode} in {time.monotonic() - t0:.0f} s"
    say(f"  {took}")
    with open(log, "a") as out:     # kept with the build: where the times quoted in the docs come from
        out.write(f"[freethreaded_python] {' '.join(argv)}: {took}\n")
    if done.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise BuildError(f"{' '.join(argv)} failed (exit {done.returncode}); the end of {log}:\n" + "\n".join(tail))


def build(build_dir: Path) -> Path:
    """The free-threaded interpreter, built into ``build_dir`` unless it is there already."""
    python = interpreter(build_dir)
    if is_free_threaded_313(python):
        return python
    for tool in ("cc", "make"):
        if shutil.which(tool) is None:
            raise BuildError(f"building CPython needs {tool}: apt-get install build-essential")
    suite = os.environ.get("NPUPROF_CPYTHON_SUITE", "trixie")
    downloads = build_dir / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    checked = downloads / "checked.sha256"     # "SHA256  NAME" of a tarball checked against the signed index
    tar_path: Optional[Path] = None
    if checked.exists():
        digest, _, name = checked.read_text().strip().partition("  ")
        if (downloads / name).exists() and sha256(downloads / name) == digest:
            tar_path = downloads / name
    if tar_path is None:
        tarball = find_tarball(debian_mirror(), suite, downloads)
        tar_path = downloads / tarball.name
        if not tar_path.exists() or sha256(tar_path) != tarball.sha256:
            download(tarball.url, tar_path)
        if sha256(tar_path) != tarball.sha256:
            raise BuildError(f"{tarball.url} does not match the SHA256 in {suite}'s signed source index")
        checked.write_text(f"{tarball.sha256}  {tarball.name}\n")
    src = build_dir / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    say(f"unpacking {tar_path.name}")
    with tarfile.open(tar_path) as tar:
        top = tar.getnames()[0].split("/")[0]
        if hasattr(tarfile, "data_filter"):    # Python 3.12+ (and the 3.11/3.9 security releases)
            tar.extractall(src, filter="data")
        else:
            tar.extractall(src)
    tree = src / top
    prefix = build_dir / "install"
    shutil.rmtree(prefix, ignore_errors=True)
    log = build_dir / "build.log"
    log.write_text("")
    run(["./configure", "--disable-gil", f"--prefix={prefix}", "--with-ensurepip=install"], tree, log)
    run(["make", "-j2"], tree, log)
    run(["make", "install"], tree, log)
    if not is_free_threaded_313(python):
        raise BuildError(f"{python} was built but is not a free-threaded 3.13 with {', '.join(NEEDED_MODULES)} "
                         f"(a library's -dev package missing? see 'optional modules were not found' in {log})")
    shutil.rmtree(src, ignore_errors=True)    # ~600 MB of objects; the tarball stays for a rebuild
    return python


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", type=Path, default=DEFAULT_BUILD)
    args = ap.parse_args(argv)
    args.build_dir.mkdir(parents=True, exist_ok=True)
    with open(args.build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)     # one build at a time; a second caller waits and finds it built
        try:
            python = build(args.build_dir)
        except BuildError as e:
            print(f"python3.13t: not built: {e}", flush=True)
            return 1
    print(python, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
