"""Plugins: lifecycle hooks, error isolation by name, autoload switch."""
import subprocess
import sys
import textwrap

import pytest

from npuprof import BackendUnavailable, Profiler, ProfilerConfigError, hookimpl, schedule
from npuprof.events import EventKind, EventTable
from npuprof.plugins.manager import get_plugin_host


class Recorder:
    def __init__(self):
        self.calls = []

    @hookimpl
    def npuprof_configure(self, config):
        self.calls.append("configure")

    @hookimpl
    def npuprof_start(self, session):
        self.calls.append("start")
        (session.native_dir("FAKE") / "ops.txt").write_text("FakeOp 5000\n")

    @hookimpl
    def npuprof_step(self, session, step_num):
        self.calls.append(f"step{step_num}")

    @hookimpl
    def npuprof_stop(self, session):
        self.calls.append(f"stop saved={session.saved}")

    @hookimpl
    def npuprof_trace_ready(self, session):
        self.calls.append("ready")

    @hookimpl
    def npuprof_parse_run(self, run_dir, context):
        f = run_dir / "FAKE" / "ops.txt"
        if not f.exists():
            return None
        name, dur = f.read_text().split()
        start = context.info.raw["npuprof"]["start_time_ns"]
        return EventTable.from_records(ts=[start], dur=[int(dur)], kind=EventKind.OP, name=[name], type=[name],
                                       source="fake")


@pytest.fixture
def plugin():
    host = get_plugin_host()
    rec = Recorder()
    host.register(rec, name="fake")
    yield rec
    host.unregister("fake")


def test_lifecycle_hooks_in_order_and_parser_output_in_tables(tmp_path, plugin):
    with Profiler(output_path=tmp_path, schedule=schedule(wait=1, active=2, repeat=1)) as prof:
        for _ in range(4):
            prof.step()
    assert plugin.calls == ["configure", "start", "step2", "step3", "stop saved=True", "ready"]
    (res,) = prof.analyse()
    ops = res.tables["op_statistic"].records()
    assert ops[0]["OP Type"] == "FakeOp" and ops[0]["Total Time(us)"] == 5.0


def test_failing_hook_is_named_and_disabled_training_goes_on(tmp_path, caplog):
    class Broken:
        @hookimpl
        def npuprof_step(self, session, step_num):
            raise ZeroDivisionError("oops")

    host = get_plugin_host()
    host.register(Broken(), name="broken")
    try:
        with Profiler(output_path=tmp_path) as prof:
            for _ in range(5):
                prof.step()
    finally:
        host.unregister("broken")
    msgs = [r.getMessage() for r in caplog.records if "broken" in r.getMessage()]
    assert len(msgs) == 1 and "ZeroDivisionError" in msgs[0]
    assert len(prof.saved_runs) == 1


def test_step_hooks_get_their_arguments_by_name_and_a_failing_one_leaves_the_others(tmp_path):
    """pluggy passes hook arguments by name: a step hook may take a subset,
    in any order; one that fails is dropped while the others go on."""
    seen = []

    class OnlyStep:
        @hookimpl
        def npuprof_step(self, step_num):
            seen.append(("only", step_num))

    class Reordered:
        @hookimpl
        def npuprof_step(self, step_num, session):
            seen.append(("reordered", step_num, session.step_num))

    class FailsAtTwo:
        @hookimpl
        def npuprof_step(self, session, step_num):
            seen.append(("fails", step_num))
            if step_num == 2:
                raise RuntimeError("boom")

    host = get_plugin_host()
    for name, p in (("only", OnlyStep()), ("reordered", Reordered()), ("failsat2", FailsAtTwo())):
        host.register(p, name=name)
    try:
        with Profiler(output_path=tmp_path) as prof:
            for _ in range(3):
                prof.step()
    finally:
        for name in ("only", "reordered", "failsat2"):
            host.unregister(name)
    assert sorted(e for e in seen if e[0] == "only") == [("only", 1), ("only", 2), ("only", 3)]
    assert sorted(e for e in seen if e[0] == "reordered") == [("reordered", n, n) for n in (1, 2, 3)]
    assert [e for e in seen if e[0] == "fails"] == [("fails", 1), ("fails", 2)]
    assert "failsat2" not in prof._active_plugins


def test_backend_unavailable_skips_its_hooks(tmp_path):
    class Absent:
        started = False

        @hookimpl
        def npuprof_configure(self, config):
            raise BackendUnavailable("device not present")

        @hookimpl
        def npuprof_start(self, session):
            Absent.started = True

    host = get_plugin_host()
    host.register(Absent(), name="absent")
    try:
        with Profiler(output_path=tmp_path):
            pass
    finally:
        host.unregister("absent")
    assert Absent.started is False


def test_plugin_config_error_reaches_the_user(tmp_path):
    class Strict:
        @hookimpl
        def npuprof_configure(self, config):
            raise ProfilerConfigError("aic_metrics", "X", "something else")

    host = get_plugin_host()
    host.register(Strict(), name="strict")
    try:
        with pytest.raises(ProfilerConfigError):
            Profiler(output_path=tmp_path)
    finally:
        host.unregister("strict")


THIRD_PARTY = textwrap.dedent('''
    from npuprof import hookimpl

    @hookimpl
    def npuprof_add_commands(subparsers):
        p = subparsers.add_parser("hello")
        p.set_defaults(func=lambda args: print("hello from plugin") or 0)
''')


def _third_party_env(tmp_path, module_code):
    site = tmp_path / "site"
    (site / "thirdparty_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "thirdparty_plugin-1.0.dist-info" / "METADATA").write_text("Name: thirdparty-plugin\nVersion: 1.0\n")
    (site / "thirdparty_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[npuprof]\nthirdparty = thirdparty_plugin\n")
    (site / "thirdparty_plugin.py").write_text(module_code)
    return str(site)


def _run_cli(args, pythonpath, extra_env=None):
    import os

    env = dict(os.environ, PYTHONPATH=pythonpath, **(extra_env or {}))
    return subprocess.run([sys.executable, "-m", "npuprof", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_third_party_entry_point_adds_a_command(tmp_path):
    site = _third_party_env(tmp_path, THIRD_PARTY)
    out = _run_cli(["hello"], site)
    assert out.returncode == 0 and "hello from plugin" in out.stdout
    listing = _run_cli(["plugins"], site).stdout
    assert "thirdparty" in listing and "third-party" in listing


def test_autoload_can_be_disabled(tmp_path):
    site = _third_party_env(tmp_path, THIRD_PARTY)
    out = _run_cli(["plugins"], site, {"NPUPROF_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert "NPUPROF_DISABLE_PLUGIN_AUTOLOAD" in out.stdout and "host" in out.stdout


def test_broken_third_party_plugin_is_reported_by_name_and_skipped(tmp_path):
    site = _third_party_env(tmp_path, "raise RuntimeError('cannot import me')\n")
    out = _run_cli(["plugins"], site)
    assert out.returncode == 0
    assert "thirdparty" in out.stderr and "cannot import me" in out.stderr
    assert "host" in out.stdout


def test_hooks_are_called_last_registered_first_as_documented():
    """The order impls() returns is the order call() calls: pluggy's, the last registered first."""
    host = get_plugin_host()
    calls = []

    def plugin(tag):
        class P:
            @hookimpl
            def npuprof_step(self, session, step_num):
                calls.append(tag)
        return P()

    host.register(plugin("first"), name="order_first")
    host.register(plugin("second"), name="order_second")
    try:
        names = [i.plugin_name for i in host.impls("npuprof_step", only=["order_first", "order_second"])]
        host.call("npuprof_step", only=["order_first", "order_second"], session=None, step_num=1)
    finally:
        host.unregister("order_first")
        host.unregister("order_second")
    assert names == ["order_second", "order_first"]
    assert calls == ["second", "first"]
