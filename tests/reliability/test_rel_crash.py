"""Crash recovery: a real training loop under the Profiler, ended at random
instants by SIGKILL, SIGTERM, SIGINT, an unhandled exception and os._exit.

After every kill each run directory the child left must analyse without
error, no recorded event may be invented, duplicated or mistimed, and:

- SIGKILL / os._exit: every event made longer than the flush interval (plus
  the flusher's tick and scheduling slack, see rel_support) before the kill
  is present;
- SIGTERM, SIGINT, an exception, a normal interpreter exit: every event made
  before the end is present and every window is finished (state "stopped"),
  chaining to the user's own SIGTERM handler when there is one.

Each worker reuses one output directory for all its kills, so every child
also proves that a killed owner's directory lock does not stick. The number
of kills is printed in the terminal summary ("npuprof reliability counts").
"""
from __future__ import annotations

import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import rel_support as rs
from npuprof import analyse
from npuprof.analysis.pipeline import analyse_run
from npuprof.cli import main as cli_main
from rel_support import counts_summary  # noqa: F401  (prints the kill count at the end)

FLUSH = 0.1
WORKERS = 2


def _plan(seed: int, mode: str, n: int, *, startup_share: float = 0.0, **fixed) -> list[dict]:
    """n deterministic kill plans: delay, phase and workload variant."""
    rng = random.Random(f"{seed}-{mode}")
    plans = []
    for k in range(n):
        startup = rng.random() < startup_share
        plans.append(dict(
            mode=mode, tag=f"{mode.lower()}{seed}x{k}",
            phase="startup" if startup else "running",
            delay=rng.uniform(0.0, 0.35) if startup else rng.uniform(0.0, 1.3),
            schedule=rng.choice([None, None, [1, 1, 3], [0, 1, 2]]),
            style=rng.choice(["with", "explicit"]), threads=rng.choice([1, 2]),
            host_sys=rng.random() < 0.3, **fixed))
    return plans


def _run_plans(tmp_path: Path, plans: list[dict]) -> list[rs.KillOutcome]:
    """Run plans on WORKERS threads; each worker reuses one output directory."""
    def worker(w: int) -> list:
        out = tmp_path / f"out{w}"
        results = []
        for plan in plans[w::WORKERS]:
            plan = dict(plan)
            outcome = rs.run_kill(out, tmp_path, plan.pop("tag"), plan.pop("mode"), plan.pop("delay"),
                                  flush=FLUSH, **plan)
            if outcome.killed:
                rs.COUNTS[f"kill:{outcome.mode}"] += 1
            results.append(outcome)
        return results

    with ThreadPoolExecutor(WORKERS) as ex:
        outcomes = [o for chunk in ex.map(worker, range(WORKERS)) for o in chunk]
    # the whole output directories, every child's runs together, analyse too
    for w in range(WORKERS):
        out = tmp_path / f"out{w}"
        if any(out.glob("*_ascend_*")):
            results = analyse(out)
            assert results
            # complete (0) unless a window was cut by a kill that left it unstopped: partial (3), and said so;
            # a window killed before its first event holds nothing usable (1 only when no run does)
            cut = any(json.loads(p.read_text()).get("npuprof", {}).get("state") == "running"
                      for p in out.glob("*_ascend_*/profiler_info_*.json"))
            expected = (3 if any(r.quality.usable for r in results) else 1) if cut else 0
            assert cli_main(["analyse", str(out), "--quiet"]) == expected
    return outcomes


def _summary(name: str, outcomes: list[rs.KillOutcome]) -> str:
    killed = [o for o in outcomes if o.killed]
    return (f"{name}: {len(killed)} kills, {sum(o.checked_events for o in outcomes)} events checked, "
            f"{sum(len(o.run_dirs) for o in outcomes)} run dirs analysed, oldest lost event "
            f"{max([o.oldest_lost_age_ms for o in outcomes] + [0]):.0f} ms before the kill "
            f"(flush interval {FLUSH * 1000:.0f} ms)")


def test_sigkill_at_random_instants_loses_at_most_the_flush_interval(tmp_path, capsys):
    outcomes = _run_plans(tmp_path, _plan(1, "SIGKILL", 26, startup_share=0.15))
    killed = [o for o in outcomes if o.killed]
    assert len(killed) >= 24
    assert all(o.returncode == -9 for o in killed)
    assert sum(o.checked_events for o in outcomes) > 1000   # the check had teeth
    with capsys.disabled():
        print("\n" + _summary("SIGKILL", outcomes))


def test_os_exit_at_random_instants_loses_at_most_the_flush_interval(tmp_path, capsys):
    outcomes = _run_plans(tmp_path, _plan(2, "os_exit", 8))
    killed = [o for o in outcomes if o.killed]
    assert len(killed) == 8 and all(o.returncode == 3 for o in killed)
    with capsys.disabled():
        print("\n" + _summary("os._exit", outcomes))


def test_sigterm_flushes_and_finishes_every_window(tmp_path, capsys):
    outcomes = _run_plans(tmp_path, _plan(3, "SIGTERM", 10))
    for o in outcomes:
        assert o.killed and o.returncode == -15, o.stderr[-2000:]   # default action kept
        assert set(o.states) <= {"stopped"}, o.states
    assert sum(len(o.states) for o in outcomes) >= 8
    with capsys.disabled():
        print("\n" + _summary("SIGTERM", outcomes))


def test_sigint_keyboard_interrupt_finishes_every_window(tmp_path, capsys):
    outcomes = _run_plans(tmp_path, _plan(4, "SIGINT", 6))
    for o in outcomes:
        assert o.killed and o.returncode == -2, o.stderr[-2000:]
        assert set(o.states) <= {"stopped"}, o.states
    with capsys.disabled():
        print("\n" + _summary("SIGINT", outcomes))


def test_unhandled_exception_finishes_every_window(tmp_path, capsys):
    outcomes = _run_plans(tmp_path, _plan(5, "exception", 8))
    for o in outcomes:
        assert o.killed and o.returncode == 1
        assert "RuntimeError: injected failure in the training loop" in o.stderr
        assert set(o.states) <= {"stopped"}, o.states
    with capsys.disabled():
        print("\n" + _summary("exception", outcomes))


@pytest.mark.parametrize("mode", ["SIGTERM", "SIGINT"])
def test_signals_while_threads_flush_their_own_events(tmp_path, mode, capsys):
    """Threads recording as fast as they can (the main one too) fill their
    buffers and write them themselves; a signal landing in such a write is
    handled once that write is done, never on top of it (that deadlocked
    before)."""
    plans = [dict(p, hammer=2, threads=1) for p in _plan(6, mode, 6)]
    outcomes = _run_plans(tmp_path, plans)
    for o in outcomes:
        assert o.killed and o.returncode == (-15 if mode == "SIGTERM" else -2), o.stderr[-2000:]
        assert set(o.states) <= {"stopped"}, o.states
    assert sum(o.recorded_events for o in outcomes) > 0
    with capsys.disabled():
        print("\n" + _summary(f"{mode} while threads write their own events", outcomes))


@pytest.mark.parametrize("user_handler,style", [
    ("before-exit", "with"), ("before-exit", "explicit"),
    ("after-flag", "with"), ("after-flag", "explicit"),
    ("after-exit", "with"), ("after-exit", "explicit"),
])
def test_sigterm_chains_to_the_users_handler(tmp_path, user_handler, style):
    """A handler installed before the Profiler is called after the window is
    saved; one installed after replaces npuprof's, and the run still
    finishes through the with-block or interpreter exit."""
    outcome = rs.run_kill(tmp_path / "out", tmp_path, f"uh{user_handler[:3]}{style[0]}", "SIGTERM", 0.4,
                          flush=FLUSH, user_handler=user_handler, style=style, threads=2)
    rs.COUNTS["kill:SIGTERM"] += int(outcome.killed)
    truth = rs.read_truth(tmp_path / f"uh{user_handler[:3]}{style[0]}.truth")
    assert outcome.killed and outcome.returncode == 0, outcome.stderr[-2000:]
    assert truth.handler is not None, "the user's SIGTERM handler was not called"
    assert outcome.states == ["stopped"]
    assert outcome.checked_events > 0


@pytest.mark.parametrize("style", ["with", "explicit"])
def test_normal_interpreter_exit_finishes_the_run(tmp_path, style):
    """No stop() (explicit style): atexit stops the profiler and saves the window."""
    outcome = rs.run_kill(tmp_path / "out", tmp_path, f"exit{style[0]}", "none", 0.6, flush=FLUSH, style=style,
                          threads=2, schedule=None)
    truth = rs.read_truth(tmp_path / f"exit{style[0]}.truth")
    assert outcome.returncode == 0 and truth.done, outcome.stderr[-2000:]
    assert outcome.states == ["stopped"]
    assert outcome.checked_events == sum(1 for v in truth.events.values() if v[2] == 1) > 0
    if style == "explicit":
        assert "still running at interpreter exit" in outcome.stderr


@pytest.mark.slow
@pytest.mark.parametrize("mode,n", [("SIGKILL", 120), ("SIGTERM", 30), ("os_exit", 30), ("exception", 20),
                                    ("SIGINT", 20)])
def test_many_more_random_kills(tmp_path, mode, n, capsys):
    outcomes = _run_plans(tmp_path, _plan(100, mode, n, startup_share=0.1 if mode == "SIGKILL" else 0.0))
    assert sum(o.killed for o in outcomes) >= n * 0.85
    with capsys.disabled():
        print("\n" + _summary(f"{mode} (slow)", outcomes))


@pytest.mark.slow
@pytest.mark.parametrize("framework,module", [("tf", "tensorflow"), ("ms", "mindspore")])
def test_real_framework_training_killed_at_random_instants(tmp_path, framework, module, capsys):
    """The same kills around a real TensorFlow / MindSpore (CPU) training step
    under that integration's Profiler: raw data survives SIGKILL; SIGTERM
    also stops the framework's own profiler, whose data is analysed too."""
    pytest.importorskip(module)
    rng = random.Random(f"fw-{framework}")
    outcomes = []
    for k, mode in enumerate(["SIGKILL", "SIGTERM", "SIGKILL", "SIGTERM", "SIGKILL"]):
        o = rs.run_kill(tmp_path / "out", tmp_path, f"{framework}{k}", mode, rng.uniform(0.3, 1.5), flush=FLUSH,
                        framework=framework, threads=2 if k % 2 else 1)
        rs.COUNTS[f"kill:{mode}"] += int(o.killed)
        assert o.killed and o.run_dirs
        if mode == "SIGTERM":
            assert o.returncode == -15 and o.states == ["stopped"]
            assert o.sources[module] > 0, f"no {module} events after SIGTERM: {dict(o.sources)}"
        # a window cut by SIGKILL says so in its data quality (the framework's data was never flushed); one
        # saved by SIGTERM does not
        cut = [any("window cut at" in i.problem for i in analyse_run(d).quality.issues) for d in o.run_dirs]
        assert all(cut) if mode == "SIGKILL" else not any(cut), (mode, cut)
        outcomes.append(o)
    with capsys.disabled():
        print("\n" + _summary(f"{module} training", outcomes))
