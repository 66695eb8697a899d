"""npuprof on aarch64 under qemu-user, with 4 KiB and 64 KiB pages (``make test-aarch64``).

1. ``setup.sh``: Debian's arm64 CPython 3.11 and the registry's manylinux aarch64 wheels, cached.
2. Install: the arm64 interpreter's own ``pip install .`` of the tracked files (setup.py, the C modules cross-built by
   ``aarch64-linux-gnu-gcc``, which is the compiler that interpreter's sysconfig names) into
   build/aarch64/install; fails unless both compiled modules were built and load there.
3. Outputs: one synthetic run analysed to every output through the CLI (scripts/aarch64/outputs.py),
   here and under qemu at each page size, in the same folder (paths inside outputs agree); every file's
   md5 must match the x86 run's.
4. Tests: the listed test files run by the arm64 pytest at each page size.

``--bench`` runs the bench's annotations and analysis rows there instead (ratios and bytes, not speed).
``--smoke`` is the CI subset (install, record + analyse through the parity workload and the outputs, the
parity tests) on 64 KiB pages. Prints each step's command and time; exit 0 when all passed.

Example::

    .venv/bin/python scripts/aarch64/check.py --pages 4096,65536
    .venv/bin/python scripts/aarch64/check.py --smoke
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUILD = ROOT / "build" / "aarch64"

# collection from threads and a SIGKILLed run recovered, analysis and export, the C-vs-Python parity tests,
# pages, the raw store and its fuzz cases (hypothesis, derandomized: the same cases every run), the CLI
FULL_TESTS = [
    "tests/performance/test_hotpath.py", "tests/performance/test_rowrender.py",
    "tests/readers/test_kineto_scanner.py",
    "tests/performance/test_perf_pages.py",
    "tests/performance/test_perf_recorder.py",
    "tests/reliability/test_rel_concurrency.py::test_eight_threads_times_100k_events_all_accounted_for",
    "tests/reliability/test_rel_concurrency.py::test_steps_from_many_threads_are_serialised",
    "tests/core/test_core_crash.py",
    "tests/reliability/test_rel_fuzz.py::test_raw_reader_never_raises_on_arbitrary_bytes",
    "tests/reliability/test_rel_fuzz.py::test_raw_reader_truncation_keeps_exactly_the_whole_records",
    "tests/reliability/test_rel_fuzz.py::test_raw_reader_flipped_bytes_drop_exactly_the_touched_records",
    "tests/reliability/test_rel_fuzz.py::test_raw_reader_junk_spliced_between_records_loses_nothing",
    "tests/reliability/test_rel_fuzz.py::test_raw_reader_survives_records_with_valid_checksums_and_hostile_payloads",
    "tests/reliability/test_rel_corrupt.py::test_truncated_segment_keeps_every_whole_record",
    "tests/reliability/test_rel_corrupt.py::test_flipped_byte_drops_only_its_record_and_resynchronises",
    "tests/reliability/test_rel_corrupt.py::test_inserted_junk_between_records_is_skipped",
    "tests/platform/test_aarch64.py::test_multithreaded_recording_and_cli_end_to_end",
]
SMOKE_TESTS = ["tests/performance/test_hotpath.py::test_the_install_built_the_compiled_hot_paths",
               "tests/performance/test_hotpath.py::test_compiled_and_python_paths_record_the_same_events",
               "tests/performance/test_rowrender.py"]


def log(msg: str) -> None:
    print(f"[aarch64 {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def step(argv: list[str], *, env: dict | None = None, cwd: Path = ROOT, capture: bool = False,
         timeout: int = 3600) -> subprocess.CompletedProcess:
    log("$ " + " ".join(shlex.quote(str(a)) for a in argv))
    t0 = time.monotonic()
    done = subprocess.run([str(a) for a in argv], env=env, cwd=cwd, timeout=timeout,
                          stdout=subprocess.PIPE if capture else None, text=True)
    log(f"  exit {done.returncode} in {time.monotonic() - t0:.1f} s")
    return done


class Arm64:
    """The arm64 interpreter under qemu: its environment for a page size."""

    def __init__(self, cache: Path):
        self.cache = cache
        self.root = cache / "root"
        self.python = self.root / "bin" / "pyw"

    def env(self, page: int, *paths: Path) -> dict:
        # NPUPROF_PURE_PYTHON is the host run's choice: the check is of the aarch64 build, compiled modules
        # included (its parity tests set the fallback themselves)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTHON", "VIRTUAL_ENV")) and k != "NPUPROF_PURE_PYTHON"}
        env.update(NPUPROF_QEMU_PAGE=str(page), PYTHONPATH=os.pathsep.join(str(p) for p in paths),
                   PYTHONDONTWRITEBYTECODE="1")
        return env

    def run_env(self, page: int) -> dict:
        return self.env(page, BUILD / "install", self.cache / "site")

    def build_env(self) -> dict:
        """The environment in which this interpreter's pip builds npuprof: its pip and setuptools, and the
        compiler its sysconfig names (aarch64-linux-gnu-gcc, running natively) pointed at the root's arm64
        libc and Python headers."""
        env = self.env(4096, self.cache / "tools")
        env["CPPFLAGS"] = f"--sysroot={self.root} -I{self.root}/usr/include/python3.11"
        env["LDFLAGS"] = f"--sysroot={self.root}"
        return env

    def library_dirs(self) -> list[Path]:
        """The root's arm64 library folders (where auditwheel looks for the libraries a wheel links)."""
        return [self.root / "lib" / "aarch64-linux-gnu", self.root / "usr" / "lib" / "aarch64-linux-gnu"]


def setup(host_python: str) -> Arm64:
    done = step(["bash", HERE / "setup.sh"], env=dict(os.environ, HOST_PY=host_python), capture=True)
    if done.returncode != 0:
        raise SystemExit("aarch64: environment setup failed (see above)")
    return Arm64(Path(done.stdout.strip().splitlines()[-1]))


def install(arm: Arm64) -> None:
    target = BUILD / "install"
    shutil.rmtree(target, ignore_errors=True)
    # pip installs from a copy of the tracked files (as from an sdist): setuptools' build/ and egg-info
    # stay out of the checkout, and runs side by side do not share them
    source = BUILD / "src"
    shutil.rmtree(source, ignore_errors=True)
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    done = step([arm.python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                 "--no-cache-dir", "--root-user-action=ignore", "--target", target, "."], env=arm.build_env(),
                cwd=source)
    if done.returncode != 0:
        raise SystemExit("aarch64: pip install . failed")
    probe = ("import platform, mmap, npuprof; from npuprof import recorder; from npuprof.export import textrows;"
             "print(platform.machine(), mmap.PAGESIZE, recorder._hotpath is not None, textrows._compiled is not None,"
             " npuprof.__file__)")
    for page in (4096, 65536):
        out = step([arm.python, "-c", probe], env=arm.run_env(page), capture=True)
        log(f"  {out.stdout.strip()}")
        machine, size, hot, rows, _ = out.stdout.split()
        if (machine, size, hot, rows) != ("aarch64", str(page), "True", "True"):
            raise SystemExit(f"aarch64: the install does not load both compiled modules at {page}-byte pages")


def outputs(arm: Arm64, host_python: str, pages: list[int]) -> bool:
    base = BUILD / "outputs"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    script = HERE / "outputs.py"
    made = step([host_python, script, "make-input", base / "input"], capture=True)
    run_dir = Path(made.stdout.strip().splitlines()[-1])
    work = base / "work"
    results = {}
    for label, python, env in [("x86_64", host_python, None)] + [
            (f"aarch64-{page}", arm.python, arm.run_env(page)) for page in pages]:
        done = step([python, script, "run", run_dir, work], env=env, capture=True)
        if done.returncode != 0:
            log(f"  {label}: the output run failed")
            return False
        results[label] = json.loads(done.stdout)
        (base / f"{label}.json").write_text(done.stdout)
        work.rename(base / label)   # the next platform writes to the same paths
    reference = results.pop("x86_64")
    ok = True
    for label, got in results.items():
        differ = sorted(k for k in set(reference) | set(got) if reference.get(k) != got.get(k))
        log(f"  {label}: {len(got)} output files, {len(got) - len(differ)} byte-identical to x86_64"
            + (f"; DIFFERENT: {differ}" if differ else ""))
        ok &= not differ and len(got) == len(reference) > 0
    return ok


def tests(arm: Arm64, page: int, names: list[str]) -> bool:
    done = step([arm.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-ra", *names],
                env=arm.run_env(page), timeout=5400)
    return done.returncode == 0


def bench(arm: Arm64, pages: list[int]) -> bool:
    """The bench's annotations and analysis rows (quick sizes) under qemu; results per page size in
    build/aarch64/bench-PAGE (latest.json, latest.md)."""
    ok = True
    for page in pages:
        out = BUILD / f"bench-{page}"
        shutil.rmtree(out, ignore_errors=True)
        env = arm.run_env(page)
        env["PYTHONPATH"] += os.pathsep + str(ROOT / "benchmarks")
        done = step([arm.python, ROOT / "benchmarks" / "run.py", "--quick", "--only", "annotations,analysis",
                     "--out", out, "--workdir", out / "work"], env=env, timeout=7200)
        shutil.rmtree(out / "work", ignore_errors=True)
        ok &= done.returncode == 0
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", default="4096,65536", help="page sizes for qemu (-p), comma-separated")
    ap.add_argument("--smoke", action="store_true", help="the CI subset, 64 KiB pages unless --pages")
    ap.add_argument("--tests", default="", help="test ids to run instead of the list (comma-separated)")
    ap.add_argument("--build", type=Path, help="folder for the install, outputs and bench results "
                    "(default build/aarch64)")
    ap.add_argument("--host-python", default=sys.executable, help="the x86 interpreter with npuprof installed")
    ap.add_argument("--skip-outputs", action="store_true", help="no output comparison")
    ap.add_argument("--bench", action="store_true", help="the bench's annotations and analysis rows instead of "
                    "the tests (64 KiB pages unless --pages)")
    args = ap.parse_args()
    global BUILD
    BUILD = (args.build or BUILD).resolve()
    one = (args.smoke or args.bench) and args.pages == ap.get_default("pages")
    pages = [int(p) for p in ("65536" if one else args.pages).split(",")]
    names = args.tests.split(",") if args.tests else SMOKE_TESTS if args.smoke else FULL_TESTS
    t0 = time.monotonic()
    arm = setup(args.host_python)
    install(arm)
    verdict = {}
    if args.bench:
        verdict["bench (annotations, analysis)"] = bench(arm, pages)
    elif not args.skip_outputs:
        verdict["outputs byte-identical to x86_64"] = outputs(arm, args.host_python, pages)
    for page in pages if not args.bench else []:
        verdict[f"tests at {page}-byte pages"] = tests(arm, page, names)
    for what, ok in verdict.items():
        log(f"{'PASS' if ok else 'FAIL'}: {what}")
    log(f"total {time.monotonic() - t0:.0f} s")
    return 0 if all(verdict.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
