"""One command-line grammar (#34.5): every verb takes its folder as DIR or as msprof's -dir DIR with one
help text; `show` uses each table's full width when not on a terminal; `memory` shows times from the
run's start (absolute in --json); each warning is printed once."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from realdata import realdata

from npuprof import Profiler, record_function
from npuprof.cli import build_parser, main
from npuprof.cli_args import RUN_FOLDER_HELP, resolve_folder_argument

TORCH_NPU_RUN = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
# verb argv before the folder -> the attribute the command reads it from
RUN_VERBS = {("analyse",): "path", ("import",): "dir", ("export", "summary"): "dir", ("show",): "dir",
             ("memory",): "dir", ("cluster",): "path", ("report",): "path", ("timeline",): "path",
             ("xplane", "--logdir", "tb"): "path"}


def _npuprof(*argv: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "npuprof", *argv], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("grammar")
    with Profiler(output_path=out / "prof") as prof:
        for _ in range(3):
            with record_function("forward"):
                sum(range(20000))
            prof.step()
    prof.analyse()
    return prof.saved_runs[0]


@pytest.mark.parametrize("verb", list(RUN_VERBS), ids=lambda v: v[0])
def test_every_verb_takes_dir_and_minus_dir(verb):
    parser = build_parser()
    for argv in ([*verb, "RUN"], [*verb, "-dir", "RUN"], [*verb, "--dir", "RUN"], [*verb, "RUN", "-dir", "RUN"]):
        args = parser.parse_args(argv)
        resolve_folder_argument(args)
        assert getattr(args, RUN_VERBS[verb]) == "RUN", argv
    sub = parser._subparsers._group_actions[0].choices[verb[0]]
    assert " ".join(RUN_FOLDER_HELP.split()) in " ".join(sub.format_help().split())


@pytest.mark.parametrize("argv, message", [
    (["show"], "invalid DIR=None: expected the folder to read, as DIR or as -dir DIR"),
    (["show", "a", "-dir", "b"], "invalid -dir='b': expected one folder: DIR 'a' was given as well"),
    (["analyse", "-dir", "b", "a"], "invalid -dir='b': expected one folder: DIR 'a' was given as well"),
])
def test_a_missing_or_doubled_folder_is_a_usage_error(argv, message, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err == f"npuprof: error: {message}\n"


def test_show_dir_and_minus_dir_print_the_same(run, capsys):
    assert main(["show", str(run)]) == 0           # #34.5: `npuprof show RUN` failed before
    positional = capsys.readouterr().out
    assert main(["show", "-dir", str(run)]) == 0
    assert capsys.readouterr().out == positional and "forward" in positional


def test_dynamic_commands_take_dir_and_minus_dir(tmp_path):
    parser = build_parser()
    for argv in (["dynamic", "status", str(tmp_path)], ["dynamic", "status", "-dir", str(tmp_path)]):
        args = parser.parse_args(argv)
        resolve_folder_argument(args)
        assert args.dir == str(tmp_path)


def test_show_into_a_pipe_keeps_each_table_whole():
    done = _npuprof("show", realdata(TORCH_NPU_RUN))   # stdout is a pipe, not a terminal
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if "Communication(Not Overlapped and Exclude Receive)" in line)
    assert "Step" in header and "Preparing" in header        # one header line, no column folded
    assert max(len(line) for line in lines) > 80
    narrow = _npuprof("show", realdata(TORCH_NPU_RUN), "--width", "60")
    assert narrow.returncode == 0 and max(len(line) for line in narrow.stdout.splitlines()) <= 60
    bad = _npuprof("show", realdata(TORCH_NPU_RUN), "--width", "5")
    assert bad.returncode == 2 and "--width" in bad.stderr and "at least 40" in bad.stderr


def test_memory_times_are_from_the_run_start_and_absolute_in_json():
    run = realdata(TORCH_NPU_RUN)
    data = json.loads(_npuprof("memory", run, "--json").stdout)[0]
    start, peak = data["run_start_ns"], data["peak_ns"]
    assert start > 10**18 and peak > start                   # --json: absolute epoch ns
    text = _npuprof("memory", run).stdout
    assert f"at {(peak - start) / 1e9:.6f} s after the run's start" in " ".join(text.split())
    assert f"{peak / 1000.0:.3f}" not in text                 # no epoch µs in what is shown


def test_a_warning_is_printed_once(tmp_path):
    """A note the run carries (here: storage_limit aged the oldest raw segments out) is printed once,
    as ``warning:``, not also as the log line the reader wrote it with."""
    with Profiler(output_path=tmp_path / "prof", storage_limit="1MB", flush_interval=0.01) as prof:
        for _ in range(400_000):
            with record_function("x"):
                pass
    (run,) = prof.saved_runs
    done = _npuprof("show", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "were aged out during collection" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: "), done.stderr


@pytest.mark.parametrize("argv", [["export", "summary", "--format", "json", "RUN"],
                                  ["export", "--format", "json", "summary", "RUN"],
                                  ["show", "--limit", "3", "RUN"], ["memory", "--top", "2", "RUN", "--json"]])
def test_the_folder_may_come_after_the_options(argv):
    args = build_parser().parse_args(argv)
    resolve_folder_argument(args)
    assert args.dir == "RUN"


def test_a_second_folder_is_still_refused(capsys):
    assert main(["show", "a", "b"]) == 2
    assert capsys.readouterr().err == "npuprof: error: unrecognized arguments: b\n"
