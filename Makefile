# The two set-up commands (README): `make demo` and `make test`. Each creates
# .venv and installs npuprof with what it needs on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.npuprof-installed

.PHONY: demo test test-fast test-loaded bench interop venv system-deps tf215 clean

$(STAMP): pyproject.toml setup.py core/_hotpath.c core/export/_rowrender.c
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

# The ecosystem tools (msprof-analyze, HTA, xprof) in their own .venv-interop; also part of `make test`.
interop: $(STAMP)
	$(PY) -m pytest -ra tests/interop/test_interop_tools.py

# torch 2.13 CPU is only for the record_function comparison row (pip takes the local CPU wheel here).
bench: $(STAMP)
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) benchmarks/run.py --readme README.md

clean:
	rm -rf $(VENV) .venv-tf215 .venv-interop npuprof_demo .pytest_cache build core/*.so core/export/*.so
