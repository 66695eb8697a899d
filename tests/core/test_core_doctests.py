"""The ``>>>`` examples in npuprof's docstrings run and print what they say.

Public API docstrings carry an example; this keeps every runnable one honest.
Modules are walked by import name (``npuprof.*`` and each
``npuprof.integrations.<framework>.*``, which live in other directories), so
exception names in the examples read ``npuprof.errors...`` as users see them.

The examples run in one child process: some integration modules import their
framework, and a MindSpore or TensorFlow imported into the suite's own process
would change what every later test sees (the pyACL backend steps aside once
mindspore is imported, the MindSpore backend joins every Profiler).
"""
from __future__ import annotations

import importlib.util
import json
import pkgutil
import subprocess
import sys

import pytest

import npuprof
import npuprof.integrations.mindspore
import npuprof.integrations.pyacl
import npuprof.integrations.tensorflow

FRAMEWORK_PACKAGES = (npuprof.integrations.mindspore, npuprof.integrations.tensorflow, npuprof.integrations.pyacl)

RUN_EXAMPLES = r"""
import doctest, importlib, json, sys
out = {}
for name in json.loads(sys.argv[1]):
    tests = [t for t in doctest.DocTestFinder().find(importlib.import_module(name), name) if t.examples]
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = []
    for t in tests:
        runner.run(t, out=report.append)
    out[name] = {"docstrings": len(tests), "examples": runner.tries, "failed": runner.failures,
                 "report": "".join(report)}
print(json.dumps(out))
"""


def module_names() -> list:
    """Every module below npuprof and the integration packages (packages are imported to walk them; they
    import no framework), ``__main__`` left out: importing it runs the CLI."""
    names = []
    for pkg in (npuprof,) + FRAMEWORK_PACKAGES:
        names.append(pkg.__name__)
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
                  if not m.name.endswith("__main__")]
    return sorted(set(names))


def has_examples(name: str) -> bool:
    """Whether the module's source holds a ``>>>`` line (read without importing the module)."""
    origin = importlib.util.find_spec(name).origin
    return bool(origin) and origin.endswith(".py") and ">>>" in open(origin, encoding="utf-8").read()


MODULES = module_names()
WITH_EXAMPLES = [m for m in MODULES if has_examples(m)]


@pytest.fixture(scope="module")
def examples() -> dict:
    proc = subprocess.run([sys.executable, "-c", RUN_EXAMPLES, json.dumps(WITH_EXAMPLES)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_walk_reaches_core_and_every_integration(examples):
    assert "npuprof.analysis.operators" in MODULES
    for pkg in FRAMEWORK_PACKAGES:
        assert any(m.startswith(pkg.__name__ + ".") for m in MODULES), pkg.__name__
    assert set(examples) == set(WITH_EXAMPLES) and len(WITH_EXAMPLES) >= 20
    assert sum(r["docstrings"] for r in examples.values()) >= 30


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples_run(examples, name):
    result = examples[name]
    assert result["docstrings"] > 0, f"{name} has >>> lines but doctest found no example in its docstrings"
    assert result["failed"] == 0, result["report"]
