"""A free-threaded Python (3.13t) running with the GIL off: npuprof leaves its compiled modules unloaded
(they need the GIL, and loading one would turn it on for the whole process) and runs their Python twins;
``npuprof doctor`` says what the GIL is doing and why.

Here the free-threaded state is monkeypatched (this interpreter is whatever runs the suite); the real
3.13t runs in ``make test-pythons`` (scripts/test_pythons.py: recording from threads with the GIL off and
on, every output compared with this interpreter's).
"""
from __future__ import annotations

import pytest

from npuprof import compiled


@pytest.fixture
def free_threaded(monkeypatch):
    """This process as a free-threaded build; the test sets whether the GIL is on."""
    monkeypatch.setattr(compiled, "free_threaded_build", lambda: True)
    monkeypatch.setattr(compiled, "_declined_for_gil", set())
    monkeypatch.setattr(compiled, "_why_not", {})
    monkeypatch.delenv("PYTHON_GIL", raising=False)
    monkeypatch.delenv(compiled.PURE_PYTHON_ENV, raising=False)
    return monkeypatch


def test_with_the_gil_off_the_compiled_modules_are_not_loaded_and_it_stays_so(free_threaded):
    free_threaded.setattr(compiled, "gil_enabled", lambda: False)
    for name in compiled.COMPILED_MODULES:
        status = compiled.compiled_status(name)
        assert not status.loaded
        assert status.reason.startswith("free-threaded Python with the GIL off: the module needs the GIL")
    # something turns the GIL on later: the code that asked first runs the twin, so the answer stays
    free_threaded.setattr(compiled, "gil_enabled", lambda: True)
    assert not compiled.compiled_status("npuprof._hotpath").loaded
    assert [s.name for s in compiled.fallback_in_use()] == list(compiled.COMPILED_MODULES)
    status = compiled.gil_status()
    assert status.free_threaded and status.enabled


def test_with_the_gil_on_they_load_where_they_were_built(free_threaded):
    free_threaded.setattr(compiled, "gil_enabled", lambda: True)
    for name in compiled.COMPILED_MODULES:
        status = compiled.compiled_status(name)
        assert status.loaded or status.reason.startswith("not built for this Python"), status


def test_the_gil_line_says_on_or_off_and_why(free_threaded):
    free_threaded.setattr(compiled, "gil_enabled", lambda: False)
    assert compiled.gil_status().line() == ("off (free-threaded build): npuprof's compiled modules are not "
                                            "loaded (they need the GIL); their Python twins run")
    free_threaded.setattr(compiled, "gil_enabled", lambda: True)
    free_threaded.setattr(compiled, "GIL_ON_BEFORE_NPUPROF", True)
    assert compiled.gil_status().line().endswith("it was on before npuprof was imported (a module imported "
                                                 "earlier needs it)")
    free_threaded.setattr(compiled, "GIL_ON_BEFORE_NPUPROF", False)
    assert "npuprof's imports turned it on: " in compiled.gil_status().line()
    assert compiled.gil_status().line().endswith("PYTHON_GIL=0 keeps it off (npuprof then runs its Python twins)")
    free_threaded.setenv("PYTHON_GIL", "1")
    assert compiled.gil_status().line() == "on (free-threaded build): PYTHON_GIL=1 / -X gil=1 turns it on"


def test_a_python_that_is_not_free_threaded_has_the_gil_on(monkeypatch):
    monkeypatch.setattr(compiled, "free_threaded_build", lambda: False)
    assert compiled.gil_status() == compiled.GilStatus(False, True, "")
    assert compiled.gil_status().line() == "on (not a free-threaded build)"
