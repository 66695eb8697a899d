"""Defect (a): an ``on_trace_ready`` that wraps ``tensorboard_trace_handler(dir)`` in the user's own function
(log, then call it) saves its windows in ``dir``, as mindspore.profiler's handler does when wrapped."""
from __future__ import annotations

import functools
import logging

import pytest

from npuprof import Profiler, schedule, tensorboard_trace_handler
from npuprof.handlers import handler_settings


def _train(prof: Profiler, steps: int = 3) -> None:
    for _ in range(steps):
        sum(range(1000))
        prof.step()


def _wrappers(tb):
    seen = []

    def closure(prof):
        seen.append("ready")
        tb(prof)

    @functools.wraps(tb)
    def wrapped(prof):
        seen.append("ready")
        tb(prof)

    class Callable:
        def __init__(self):
            self.inner = tb

        def __call__(self, prof):
            seen.append("ready")
            self.inner(prof)

    return {"closure": closure, "lambda": lambda prof: (seen.append("ready"), tb(prof)),
            "functools.wraps": wrapped, "partial": functools.partial(lambda h, prof: (seen.append("ready"), h(prof)), tb),
            "callable object": Callable()}, seen


@pytest.mark.parametrize("kind", ["closure", "lambda", "functools.wraps", "partial", "callable object"])
def test_a_wrapped_handler_saves_into_its_own_directory(tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tmp_path)                       # ./npuprof_data would appear here if the dir were lost
    tb = tensorboard_trace_handler(str(tmp_path / "tb"), analyse_flag=False)
    handlers, seen = _wrappers(tb)
    with Profiler(schedule=schedule(wait=0, active=2, repeat=1), on_trace_ready=handlers[kind]) as prof:
        _train(prof)
    assert seen == ["ready"]
    assert [p.parent for p in map(type(tmp_path), prof.saved_runs)] == [tmp_path / "tb"]
    assert not (tmp_path / "npuprof_data").exists()


def test_a_handler_hidden_where_the_profiler_cannot_look_still_ends_in_its_directory(tmp_path, caplog):
    tb = tensorboard_trace_handler(str(tmp_path / "tb"), analyse_flag=False)
    registry = {"tb": tb}                             # reached only at call time, through a dict lookup
    assert handler_settings(lambda prof: registry["tb"](prof)) is None
    with caplog.at_level(logging.WARNING, logger="npuprof"):
        with Profiler(tmp_path / "elsewhere", schedule=schedule(wait=0, active=2, repeat=1),
                      on_trace_ready=lambda prof: registry["tb"](prof)) as prof:
            _train(prof)
    (run,) = prof.saved_runs
    assert run.parent == tmp_path / "tb" and run.is_dir()
    assert not list((tmp_path / "elsewhere").glob("*_ascend_ms"))
    assert "moved it" in caplog.text


def test_two_different_handlers_in_one_function_leave_output_path_alone(tmp_path):
    a = tensorboard_trace_handler(str(tmp_path / "a"), analyse_flag=False)
    b = tensorboard_trace_handler(str(tmp_path / "b"), analyse_flag=False)
    assert handler_settings(lambda prof: (a(prof), b(prof))) is None
    assert handler_settings(a).dir_name == str(tmp_path / "a")
