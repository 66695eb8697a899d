"""The ``>>>`` examples in npuprof's docstrings run and print what they say.

Public API docstrings carry an example; this keeps every runnable one honest.
Modules are walked by import name (``npuprof.*`` and each
``npuprof.integrations.<framework>.*``, which live in other directories), so
exception names in the examples read ``npuprof.errors...`` as users see them.
"""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import npuprof

FRAMEWORK_PACKAGES = ("npuprof.integrations.mindspore", "npuprof.integrations.tensorflow",
                      "npuprof.integrations.pyacl")


def module_names() -> list:
    names = []
    for root in ("npuprof",) + FRAMEWORK_PACKAGES:
        pkg = importlib.import_module(root)
        names.append(root)
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, root + ".")
                  if not m.name.endswith("__main__")]   # importing __main__ would run the CLI
    return sorted(set(names))


def doctests_of(name: str) -> list:
    return [t for t in doctest.DocTestFinder().find(importlib.import_module(name), name) if t.examples]


MODULES = module_names()


def test_the_walk_reaches_core_and_every_integration():
    assert "npuprof.analysis.analyzers" in MODULES
    for pkg in FRAMEWORK_PACKAGES:
        assert any(m.startswith(pkg + ".") for m in MODULES), pkg
    assert sum(len(doctests_of(m)) for m in MODULES) >= 30


@pytest.mark.parametrize("name", [m for m in MODULES if doctests_of(m)])
def test_docstring_examples_run(name):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report: list = []
    for test in doctests_of(name):
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
