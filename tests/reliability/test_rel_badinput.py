"""Bad input everywhere: a table of wrong types and values for every public
parameter, environment variable, CLI flag and integration configuration
(profiling_options, acl.json, MindSpore keywords). Each must raise one clear
ProfilerConfigError (CLI: exit code 2 and one ``npuprof: error:`` line)
naming the parameter, before anything is collected: no output directory,
no running profiler, no recorder.

The number of cases is printed in the terminal summary.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

import npuprof
import rel_support as rs
from npuprof import Profiler, ProfilerConfigError, chrome_trace_handler, schedule, tensorboard_trace_handler
from npuprof import profiler as _profiler_mod
from npuprof.cli import main as cli_main
from npuprof.recorder import active_recorder
from rel_support import counts_summary  # noqa: F401

ENV_VARS = ("RANK_ID", "RANK", "LOCAL_RANK", "RANK_SIZE", "WORLD_SIZE", "DEVICE_ID", "NPUPROF_MAX_INPUT_BYTES")


@dataclass
class Case:
    id: str
    call: Callable[[Path], Any]          # gets a fresh output path that must stay absent
    param: str                            # the parameter the error must name
    env: dict = field(default_factory=dict)
    xfail: Optional[str] = None


def P(case_id: str, param: Optional[str] = None, **kwargs: Any) -> Case:
    """A Profiler(...) call with ``kwargs`` (output_path defaults to the fresh path)."""
    def call(out: Path) -> Any:
        kw = dict(kwargs)
        kw.setdefault("output_path", out)
        return Profiler(**kw)
    return Case(f"Profiler-{case_id}", call, param or next(iter(kwargs)))


def _sub(out: Path, bad: str) -> str:
    return str(out) + bad


CASES: list[Case] = [
    # -- output_path --------------------------------------------------------------------
    P("output_path-int", output_path=123),
    P("output_path-empty", output_path=""),
    P("output_path-blank", output_path="   "),
    P("output_path-bytes", output_path=b"/tmp/prof"),
    P("output_path-list", output_path=["/tmp/prof"]),
    P("output_path-too-long", output_path="/tmp/" + "a/" * 2100),
    P("output_path-component-too-long", output_path="/tmp/" + "a" * 256),
    P("output_path-newline", output_path="/tmp/prof\nx"),
    P("output_path-nul", output_path="/tmp/prof\x00x"),
    P("output_path-semicolon", output_path="/tmp/prof;rm -rf ~"),
    P("output_path-pipe", output_path="/tmp/prof|tee"),
    P("output_path-dollar", output_path="/tmp/$HOME"),
    P("output_path-backtick", output_path="/tmp/`id`"),
    P("output_path-glob", output_path="/tmp/prof*"),
    P("output_path-quote", output_path="/tmp/it's"),
    P("output_path-file-in-the-way", output_path=str(Path(__file__))),
    P("output_path-under-a-file", output_path=str(Path(__file__) / "sub")),
    # -- activities / level / metrics ------------------------------------------------
    P("activities-unknown", activities=["CPU", "TPU"]),
    P("activities-int", activities=3),
    P("activities-empty", activities=[]),
    P("activities-dict", activities={"CPU": True}),
    P("activities-item-int", activities=["CPU", 1]),
    P("profiler_level-unknown", profiler_level="Level3"),
    P("profiler_level-int", profiler_level=1),
    P("profiler_level-lowercase", profiler_level="level1"),
    P("profiler_level-none-without-mstx", "profiler_level", profiler_level="LevelNone"),
    P("aic_metrics-unknown", aic_metrics="Bogus", profiler_level="Level1"),
    P("aic_metrics-at-level0", aic_metrics="PipeUtilization", profiler_level="Level0"),
    P("aic_metrics-int", aic_metrics=5, profiler_level="Level1"),
    # -- callables ---------------------------------------------------------------------
    P("schedule-int", schedule=5),
    P("schedule-str", schedule="wait=1,active=2"),
    P("on_trace_ready-str", on_trace_ready="handler"),
    P("on_trace_ready-int", on_trace_ready=1),
    # -- switches ----------------------------------------------------------------------
    P("profile_memory-str", profile_memory="yes"),
    P("profile_memory-int", profile_memory=1),
    P("profile_memory-none", profile_memory=None),
    P("record_shapes-str", record_shapes="true"),
    P("with_stack-int", with_stack=0),
    P("mstx-str", mstx="on"),
    P("data_simplification-str", data_simplification="False"),
    P("start_profile-int", start_profile=1),
    P("l2_cache-str", l2_cache="no"),
    # -- host sampling -----------------------------------------------------------------
    P("host_sys-unknown", host_sys=["gpu"]),
    P("host_sys-comma-string", host_sys="cpu,mem"),
    P("host_sys-int", host_sys=7),
    P("host_sys_usage_freq-zero", host_sys_usage_freq=0),
    P("host_sys_usage_freq-too-high", host_sys_usage_freq=1001),
    P("host_sys_usage_freq-str", host_sys_usage_freq="50"),
    P("host_sys_usage_freq-bool", host_sys_usage_freq=True),
    P("host_sys_usage_freq-nan", host_sys_usage_freq=math.nan),
    P("host_sys_usage_freq-inf", host_sys_usage_freq=math.inf),
    # -- mstx domains ------------------------------------------------------------------
    P("mstx_domain_include-str", mstx_domain_include="comm"),
    P("mstx_domain_include-int-item", mstx_domain_include=[1]),
    P("mstx_domain_exclude-both", "mstx_domain_exclude", mstx_domain_include=["a"], mstx_domain_exclude=["b"]),
    # -- export ------------------------------------------------------------------------
    P("export_type-unknown", export_type=["pdf"]),
    P("export_type-empty", export_type=[]),
    P("export_type-json", export_type="json"),
    # -- identity ----------------------------------------------------------------------
    P("worker_name-space", worker_name="a b"),
    P("worker_name-slash", worker_name="a/b"),
    P("worker_name-too-long", worker_name="w" * 300),
    P("worker_name-int", worker_name=12),
    P("rank-negative", rank=-1),
    P("rank-str", rank="0"),
    P("rank-float", rank=1.5),
    P("rank-bool", rank=True),
    P("world_size-zero", world_size=0),
    P("rank-not-below-world_size", "rank", rank=4, world_size=2),
    P("device_id-negative", device_id=-1),
    P("device_id-too-big", device_id=1024),
    P("device_id-str", device_id="0"),
    # -- durability --------------------------------------------------------------------
    P("flush_interval-zero", flush_interval=0),
    P("flush_interval-negative", flush_interval=-1),
    P("flush_interval-str", flush_interval="1"),
    P("flush_interval-too-small", flush_interval=0.001),
    P("flush_interval-too-big", flush_interval=4000),
    P("flush_interval-nan", flush_interval=math.nan),
    P("storage_limit-unit", storage_limit="200XB"),
    P("storage_limit-zero", storage_limit="0MB"),
    P("storage_limit-below-minimum", storage_limit="1KB"),
    P("storage_limit-negative", storage_limit=-5),
    P("storage_limit-no-number", storage_limit="MB"),
    P("storage_limit-float", storage_limit=1.5),
    P("framework-upper", framework="MS"),
    P("framework-dash", framework="tensorflow-2"),
    P("framework-int", framework=3),
    # -- unknown / grouped -------------------------------------------------------------
    P("typo-keyword", "profile_mem", profile_mem=True),
    P("unknown-keyword", "foo", foo=1),
    P("experimental_config-int", experimental_config=5),
    P("experimental_config-unknown-key", "experimental_config", experimental_config={"bogus": 1}),
    P("experimental_config-bad-level", "profiler_level", experimental_config={"profiler_level": "Level7"}),
    # -- schedule() --------------------------------------------------------------------
    Case("schedule-wait-negative", lambda out: schedule(wait=-1, active=1), "wait"),
    Case("schedule-active-zero", lambda out: schedule(wait=0, active=0), "active"),
    Case("schedule-warmup-str", lambda out: schedule(wait=0, active=1, warmup="1"), "warmup"),
    Case("schedule-repeat-negative", lambda out: schedule(wait=0, active=1, repeat=-1), "repeat"),
    Case("schedule-skip_first-float", lambda out: schedule(wait=0, active=1, skip_first=1.5), "skip_first"),
    Case("schedule-wait-bool", lambda out: schedule(wait=True, active=1), "wait"),
    Case("schedule-step-negative", lambda out: schedule(wait=0, active=1)(-1), "step"),
    # -- trace handlers ----------------------------------------------------------------
    Case("tensorboard_trace_handler-dir-int", lambda out: tensorboard_trace_handler(5), "dir_name"),
    Case("tensorboard_trace_handler-dir-pipe", lambda out: tensorboard_trace_handler(_sub(out, "|x")), "dir_name"),
    Case("tensorboard_trace_handler-worker", lambda out: tensorboard_trace_handler(out, worker_name="a b"),
         "worker_name"),
    Case("tensorboard_trace_handler-analyse_flag", lambda out: tensorboard_trace_handler(out, analyse_flag="y"),
         "analyse_flag"),
    Case("tensorboard_trace_handler-async_mode", lambda out: tensorboard_trace_handler(out, async_mode=1),
         "async_mode"),
    Case("chrome_trace_handler-dir-none", lambda out: chrome_trace_handler(None), "dir_name"),
    Case("chrome_trace_handler-use_gzip", lambda out: chrome_trace_handler(out, use_gzip="yes"), "use_gzip"),
    # -- offline analysis --------------------------------------------------------------
    Case("analyse-export_type", lambda out: npuprof.analyse(_a_run(out), export_type=["pdf"]), "export_type"),
    Case("offline_analyse-export_type", lambda out: Profiler.offline_analyse(_a_run(out), export_type=7),
         "export_type"),
    # -- environment -------------------------------------------------------------------
    Case("env-RANK_ID-text", lambda out: Profiler(output_path=out), "RANK_ID", env={"RANK_ID": "abc"}),
    Case("env-RANK_ID-negative", lambda out: Profiler(output_path=out), "RANK_ID", env={"RANK_ID": "-1"}),
    Case("env-RANK_ID-float", lambda out: Profiler(output_path=out), "RANK_ID", env={"RANK_ID": "1e3"}),
    Case("env-RANK-text", lambda out: Profiler(output_path=out), "RANK", env={"RANK": "x"}),
    Case("env-LOCAL_RANK-float", lambda out: Profiler(output_path=out), "LOCAL_RANK", env={"LOCAL_RANK": "1.0"}),
    Case("env-RANK_SIZE-text", lambda out: Profiler(output_path=out), "RANK_SIZE", env={"RANK_SIZE": "two"}),
    Case("env-WORLD_SIZE-negative", lambda out: Profiler(output_path=out), "WORLD_SIZE", env={"WORLD_SIZE": "-3"}),
    Case("env-DEVICE_ID-text", lambda out: Profiler(output_path=out), "DEVICE_ID", env={"DEVICE_ID": "dev0"}),
    Case("env-NPUPROF_MAX_INPUT_BYTES-check", lambda out: npuprof.fileio.check_input_file(__file__),
         "NPUPROF_MAX_INPUT_BYTES", env={"NPUPROF_MAX_INPUT_BYTES": "lots"}),
    Case("env-NPUPROF_MAX_INPUT_BYTES-analyse", lambda out: npuprof.analyse(_a_run(out)),
         "NPUPROF_MAX_INPUT_BYTES", env={"NPUPROF_MAX_INPUT_BYTES": "-1GB"}),
    # -- metadata (on a running profiler: refused, and collection goes on) -------------
    Case("add_metadata-key-int", lambda out: _running(out).add_metadata(1, "x"), "add_metadata"),
    Case("add_metadata-value-int", lambda out: _running(out).add_metadata("k", 2), "add_metadata"),
    Case("add_metadata_json-bad-json", lambda out: _running(out).add_metadata_json("k", "{bad"), "add_metadata_json"),
]


_RUNS: dict = {}
_LIVE: list = []


def _a_run(out: Path) -> Path:
    """A small analysable run outside ``out`` (shared by the analysis cases, made once per module
    in the directory the ``_shared_dir`` fixture provides: a test's own tmp_path is removed after it)."""
    if "run" not in _RUNS:
        with Profiler(output_path=_RUNS["root"]) as prof:
            npuprof.mstx.mark("x")
        _RUNS["run"] = prof.saved_runs[0]
    return _RUNS["run"]


def _running(out: Path) -> Profiler:
    prof = Profiler(output_path=out.parent / "live")
    _LIVE.append(prof)
    return prof


# -- integrations' configuration inputs -------------------------------------------------------

def _tf_cases() -> list[Case]:
    try:
        from npuprof.integrations.cann.profiling_options import parse_profiling_options
        from npuprof.integrations.tensorflow.profiler import Profiler as TfProfiler
    except ImportError:  # pragma: no cover - the integration ships with the package
        return []

    def opts(case_id: str, text: Any, param: str) -> Case:
        return Case(f"tf-profiling_options-{case_id}", lambda out: parse_profiling_options(text), param)

    return [
        opts("not-json", "{task_time:on}", "profiling_options"),
        opts("array", '["task_time"]', "profiling_options"),
        opts("int", 5, "profiling_options"),
        opts("unknown-key", '{"task_tim":"on"}', "task_tim"),
        opts("acl-json-key", '{"switch":"on"}', "switch"),
        opts("duplicate-key", '{"task_time":"on","task_time":"off"}', "task_time"),
        opts("task_time-value", '{"task_time":"yes"}', "task_time"),
        opts("freq-quoted", '{"sys_cpu_freq":"10"}', "sys_cpu_freq"),
        opts("freq-range", '{"host_sys_usage_freq":51}', "host_sys_usage_freq"),
        opts("host_sys-value", '{"host_sys":"cpu,gpu"}', "host_sys"),
        opts("storage_limit", '{"storage_limit":"lots"}', "storage_limit"),
        opts("too-long", '{"fp_point":"' + "x" * 3000 + '"}', "profiling_options"),
        Case("tf-Profiler-profiling_options", lambda out: TfProfiler(output_path=out, profiling_options='{"l2":1}'),
             "l2"),
        Case("tf-Profiler-start_profile", lambda out: TfProfiler(output_path=out, start_profile="yes"),
             "start_profile"),
    ]


def _acl_cases() -> list[Case]:
    try:
        from npuprof.integrations.pyacl.acl_json import read_profiler_section, validate_profiler_section
        from npuprof.integrations.pyacl.profiler import AclProfiler
    except ImportError:  # pragma: no cover
        return []

    def section(case_id: str, sec: Any, param: str) -> Case:
        return Case(f"acl.json-{case_id}", lambda out: validate_profiler_section(sec), param)

    def from_file(out: Path) -> Any:
        path = out.parent / "acl.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"profiler": {"switch": "on", "aicpu": "maybe"}}')
        return read_profiler_section(path)

    return [
        section("not-object", ["switch"], "acl.json profiler"),
        section("unknown-key", {"switch": "on", "swich": "on"}, "acl.json profiler.swich"),
        section("switch-value", {"switch": "yes"}, "acl.json profiler.switch"),
        section("task_time-value", {"switch": "on", "task_time": "l9"}, "acl.json profiler.task_time"),
        section("aic_metrics-value", {"switch": "on", "aic_metrics": "Bogus"}, "acl.json profiler.aic_metrics"),
        section("aic_metrics-task_time-off", {"switch": "on", "task_time": "off", "aic_metrics": "PipeUtilization"},
                "acl.json profiler.aic_metrics"),
        section("freq-range", {"switch": "on", "sys_io_sampling_freq": 0}, "acl.json profiler.sys_io_sampling_freq"),
        section("host_sys-value", {"switch": "on", "host_sys": "cpu,gpu"}, "acl.json profiler.host_sys"),
        section("mixed-flavours", {"switch": "on", "aacpu": "on", "task_time": "on"}, "acl.json profiler"),
        section("svp-interval", {"switch": "on", "interval": -1}, "acl.json profiler.interval"),
        Case("acl.json-file-aicpu", from_file, "acl.json profiler.aicpu"),
        Case("AclProfiler-output_path", lambda out: AclProfiler(_sub(out, ";x")), "output_path"),
        Case("AclProfiler-mstx", lambda out: AclProfiler(out, mstx="on"), "mstx"),
        Case("AclProfiler-profiler_level", lambda out: AclProfiler(out, profiler_level="Level5"), "profiler_level"),
    ]


def _ms_cases() -> list[Case]:
    try:
        from npuprof.integrations.mindspore.options import make_profiler
    except ImportError:  # pragma: no cover
        return []

    def ms(case_id: str, param: str, **kw: Any) -> Case:
        return Case(f"mindspore-{case_id}", lambda out: make_profiler(output_path=out, **kw), param)

    return [
        ms("retired-profile_communication", "profile_communication", profile_communication=True),
        ms("retired-timeline_limit", "timeline_limit", timeline_limit=500),
        ms("sync_enable-str", "sync_enable", sync_enable="yes"),
        ms("data_process-with-schedule", "data_process", data_process=True, schedule=schedule(wait=0, active=1)),
        ms("record_shapes-without-cpu", "record_shapes", record_shapes=True, activities=["NPU"]),
        ms("profiler_level", "profiler_level", profiler_level="Level9"),
        ms("unknown-keyword", "profile_memmory", profile_memmory=True),
        ms("hbm_ddr-off-ascend", "hbm_ddr", hbm_ddr=True),
    ]


# -- the CLI ---------------------------------------------------------------------------------

CLI_CASES = [
    ("no-command-args", ["analyse"], "DIR"),
    ("analyse-export-type", ["analyse", "{out}", "--export-type", "pdf"], "--export-type"),
    ("analyse-unknown-flag", ["analyse", "{out}", "--frobnicate"], "--frobnicate"),
    ("show-limit-text", ["show", "-dir", "{out}", "--limit", "abc"], "--limit"),
    ("export-what", ["export", "bogus", "-dir", "{out}"], "what"),
    ("export-format", ["export", "summary", "-dir", "{out}", "--format", "xml"], "--format"),
    ("import-missing-dir", ["import"], "-dir"),
    ("global-unknown-flag", ["--nope"], "--nope"),
    ("unknown-command", ["profile", "{out}"], "profile"),
    ("collect-missing-main", ["collect", "--output", "{out}"], "-m/--main"),
    ("collect-via", ["collect", "-m", __file__, "--via", "bogus", "--output", "{out}"], "--via"),
    ("collect-interval", ["collect", "-m", __file__, "--interval", "abc", "--output", "{out}"], "--interval"),
    ("collect-profiler-level", ["collect", "-m", __file__, "--profiler-level", "Level9", "--output", "{out}"],
     "profiler_level"),
    ("collect-output-chars", ["collect", "-m", __file__, "--output", "{out};x"], "--output"),
    ("collect-aic-metrics", ["collect", "-m", __file__, "--aic-metrics", "Bogus", "--output", "{out}"],
     "aic_metrics"),
    ("collect-main-missing-file", ["collect", "-m", "/nonexistent/app.py", "--output", "{out}"], "--main"),
    ("collect-env", ["collect", "-m", __file__, "--env", "NOEQUALS", "--output", "{out}"], "--env"),
    ("collect-config-missing", ["collect", "-m", __file__, "--config", "/nonexistent.ini", "--output", "{out}"],
     "--config"),
    ("collect-timeout-negative", ["collect", "-m", __file__, "--timeout", "-1", "--output", "{out}"], "--timeout"),
    ("collect-timeout-zero", ["collect", "-m", __file__, "--timeout", "0", "--output", "{out}"], "--timeout"),
    ("collect-timeout-nan", ["collect", "-m", __file__, "--timeout", "nan", "--output", "{out}"], "--timeout"),
    ("collect-timeout-inf", ["collect", "-m", __file__, "--timeout", "inf", "--output", "{out}"], "--timeout"),
    ("collect-interval-negative", ["collect", "-m", __file__, "--flavour", "svp", "--interval", "-1",
                                   "--output", "{out}"], "--interval"),
]
# id -> reason for a strict xfail (a known bug in a flag's owner; empty: all fixed)
CLI_XFAIL: dict = {}

ALL_CASES = CASES + _tf_cases() + _acl_cases() + _ms_cases()


@pytest.fixture(scope="module", autouse=True)
def _shared_dir(tmp_path_factory):
    _RUNS.clear()
    _RUNS["root"] = tmp_path_factory.mktemp("shared-run")
    yield
    _RUNS.clear()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    yield
    while _LIVE:
        _LIVE.pop().stop()


def _marks(case_id: str, reason: Optional[str]) -> Any:
    return pytest.param(case_id, marks=pytest.mark.xfail(strict=True, reason=reason)) if reason else case_id


@pytest.mark.parametrize("case_id", [_marks(c.id, c.xfail) for c in ALL_CASES])
def test_bad_input_raises_a_clear_error_before_anything_starts(case_id, tmp_path, monkeypatch):
    case = next(c for c in ALL_CASES if c.id == case_id)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "run" / "out"
    with pytest.raises(ProfilerConfigError) as info:
        case.call(out)
    err = info.value
    assert case.param in str(err.param), f"error names {err.param!r}, expected {case.param!r}: {err}"
    text = str(err)
    assert text.startswith(f"invalid {err.param}=") and ": expected " in text, text
    assert "Traceback" not in text and len(text) < 2000
    # before collection starts: nothing created, nothing running
    assert not out.exists(), f"{out} was created"
    assert active_recorder() is None or _LIVE
    running = _profiler_mod._running
    assert running is None or running in _LIVE
    rs.COUNTS["bad inputs rejected"] += 1


@pytest.mark.parametrize("case_id,argv,flag", [
    pytest.param(*c, marks=pytest.mark.xfail(strict=True, reason=CLI_XFAIL[c[0]])) if c[0] in CLI_XFAIL else c
    for c in CLI_CASES])
def test_bad_cli_flag_exits_2_with_one_line(case_id, argv, flag, tmp_path, capsys):
    out = tmp_path / "out"
    argv = [a.replace("{out}", str(out)) for a in argv]
    code = cli_main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, (code, err)
    assert len(err) == 1 and err[0].startswith("npuprof: error:") and flag in err[0], err
    assert not out.exists()
    rs.COUNTS["bad inputs rejected"] += 1


def test_there_are_at_least_100_bad_input_cases():
    assert len(ALL_CASES) + len(CLI_CASES) >= 100
