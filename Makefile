# The two set-up commands (README): `make demo` and `make test`. Each creates
# .venv and installs npuprof with what it needs on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.npuprof-installed

.PHONY: demo test test-fast test-loaded test-pythons test-freethreaded test-pure test-aarch64 dist bench bench-aarch64 interop venv system-deps tf215 clean

$(STAMP): pyproject.toml setup.py core/_hotpath.c core/export/_rowrender.c core/readers/_tracescan.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[all,dev]"
	# an editable install leaves npuprof's own modules uncompiled (a wheel's install compiles them); compiled
	# here so every npuprof process imports bytecode, also where PYTHONDONTWRITEBYTECODE is set
	$(PY) -m compileall -q core integrations
	$(PY) -m npuprof dynamic hook install
	touch $(STAMP)

venv: $(STAMP)

# System packages some end-to-end tests drive for real (sshd on loopback).
system-deps:
	bash scripts/system-deps.sh

demo: $(STAMP)
	$(PY) -m npuprof demo --output ./npuprof_demo

# .venv-tf215: TF 2.15 + tensorflow-estimator for the real tf.estimator tests.
tf215: $(STAMP)
	$(PY) tests/tf_support.py

test: $(STAMP) system-deps tf215
	$(PY) -m pytest -ra

test-fast: $(STAMP)
	$(PY) -m pytest -ra -m "not slow"

# The suite beside two busy processes, as on a loaded machine: a timing-dependent test fails here.
# LOADED_RUNS=3 runs it three times; LOADED_TESTS picks tests (default: the whole suite).
LOADED_RUNS ?= 1
LOADED_TESTS ?=
test-loaded: $(STAMP) system-deps tf215
	$(PY) scripts/run_loaded.py --busy 2 --runs $(LOADED_RUNS) -- $(PY) -m pytest -ra $(LOADED_TESTS)

# The smoke subset on the oldest and newest Python npuprof claims (3.9, 3.13) and the free-threaded 3.13t,
# each in its own .venv-pyX.Y with npuprof installed as a user installs it. 3.13t, where none is found, is
# built once from the CPython source Debian ships (build/cpython-3.13t, scripts/freethreaded_python.py:
# 19 min here on 2 shared cores) and needs Rust's cargo for orjson; it records from 8 threads with the GIL
# on and off, and its outputs must be byte-identical to .venv's (the report's Parquet files: equal as
# tables). PYTHONS picks them; a version with no interpreter here (3.13t: its build failed, with the
# reason) fails unless ALLOW_MISSING names it.
PYTHONS ?= 3.9,3.13,3.13t
ALLOW_MISSING ?=
test-pythons: $(STAMP)
	$(PY) scripts/test_pythons.py --versions $(PYTHONS) --allow-missing "$(ALLOW_MISSING)" --host-python $(PY)

# The free-threaded part of test-pythons alone.
test-freethreaded: $(STAMP)
	$(PY) scripts/test_pythons.py --versions 3.13t --host-python $(PY)

# The tests of collection and export on the pure-Python fallback (NPUPROF_PURE_PYTHON=1): the parity tests
# skip with the reason, everything else passes as compiled.
PURE_TESTS ?= tests/performance/test_hotpath.py tests/performance/test_rowrender.py tests/platform/test_private_api.py tests/platform/test_doctor.py \
	tests/performance/test_perf_recorder.py tests/performance/test_perf_flush.py tests/performance/test_perf_textrows.py tests/performance/test_perf_textrows_bands.py \
	tests/performance/test_perf_trace.py tests/performance/test_perf_trace_fork.py tests/export/test_core_export.py tests/export/test_core_export_ascend.py \
	tests/core/test_core_profiler.py tests/core/test_core_crash.py tests/core/test_core_correlation.py \
	tests/readers/test_kineto_columnar.py tests/readers/test_kineto_scanner.py
test-pure: $(STAMP)
	NPUPROF_PURE_PYTHON=1 $(PY) -m pytest -ra $(PURE_TESTS)

# dist/: the sdist (setuptools installed here, >= 61, offline), from it the manylinux x86-64 wheel and the
# manylinux aarch64 wheel (cross-built by the arm64 CPython of `make test-aarch64` under qemu-user), both
# retagged by auditwheel (its own venv, build/dist-tools, made from the package registry on first use), and
# the pure py3-none-any wheel. DIST_AARCH64=no leaves the aarch64 wheel out, DIST_AARCH64=auto where its
# environment can be set up; NPUPROF_DIST_HOOK runs a command that adds wheels built elsewhere.
# tests/platform/test_dist.py installs each into a fresh environment and smoke-tests it.
DIST_AARCH64 ?= yes
dist: $(STAMP) $(if $(filter no,$(DIST_AARCH64)),,system-deps)
	$(PY) scripts/dist.py --out dist --aarch64 $(DIST_AARCH64)

# aarch64 under qemu-user at 4 KiB and 64 KiB pages (scripts/aarch64/check.py): Debian's arm64 Python 3.11
# and the registry's aarch64 wheels (cached in ~/.cache/npuprof-aarch64), npuprof installed there by its own
# pip with the C modules cross-built; outputs compared byte for byte with this machine's. Slow: qemu-user runs
# Python 5-20x slower (on a shared 2-core VM, 4-10 min per page size for the outputs alone, more for the tests).
AARCH64_PAGES ?= 4096,65536
test-aarch64: $(STAMP) system-deps
	$(PY) scripts/aarch64/check.py --pages $(AARCH64_PAGES)

# The annotations and analysis rows of the bench on aarch64 under qemu: ratios (compiled/fallback) and
# output bytes, not speed (qemu-user is 5-20x slower than the hardware). Results in build/aarch64/bench-65536.
bench-aarch64: $(STAMP) system-deps
	$(PY) scripts/aarch64/check.py --bench

# The ecosystem tools (msprof-analyze, HTA, xprof) in their own .venv-interop; also part of `make test`.
interop: $(STAMP)
	$(PY) -m pytest -ra tests/interop/test_interop_tools.py

# torch 2.13 CPU is only for the record_function comparison row (pip takes the local CPU wheel here).
bench: $(STAMP)
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) benchmarks/run.py --readme README.md

clean:
	rm -rf $(VENV) .venv-tf215 .venv-interop .venv-py3.* npuprof_demo .pytest_cache build dist core/*.so core/export/*.so core/readers/*.so
