"""`import npuprof` imports no framework; the CLI answers."""
import subprocess
import sys


def _python(code: str) -> str:
    """What a fresh interpreter running ``code`` prints (it must exit 0)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _print_imported(names: tuple) -> str:
    """Code printing which of the modules ``names`` are imported, comma-separated (an empty line: none)."""
    return f"print(','.join(x for x in {names!r} if x in sys.modules))"


def test_import_npuprof_pulls_in_no_framework():
    code = ("import sys, npuprof, npuprof.cli, npuprof.plugins.manager as m; m.get_plugin_host(); "
            "import npuprof.integrations; "
            + _print_imported(("tensorflow", "mindspore", "acl", "torch")))
    assert _python(code).strip() == ""


def test_the_plugin_host_starts_without_the_commands_it_does_not_run():
    """Every command loads every built-in plugin: the cluster, diff and report plugins import their
    command's code when it runs, not at load (a small analysis paid ~40 ms of CPU for them), and their
    packages' names still import."""
    heavy = ("npuprof.cluster.analyse", "npuprof.cluster.collect", "npuprof.analysis.diff", "npuprof.report.page",
             "multiprocessing", "concurrent.futures.process")
    code = ("import sys, npuprof.plugins.manager as m; host = m.get_plugin_host(); "
            "assert all(host.records[p].loaded for p in ('cluster', 'diff', 'report')), host.records; "
            + _print_imported(heavy) + "; "
            "from npuprof.cluster import ClusterResult, cluster_analyse, rank_profiler, discover_ranks; "
            "from npuprof.report import write_report; from npuprof.rundiff import diff_options; "
            "print(diff_options(top=3).top, cluster_analyse.__module__, rank_profiler.__module__, "
            "write_report.__module__)")
    assert _python(code).splitlines() == ["", "3 npuprof.cluster.analyse npuprof.cluster.collect npuprof.report.page"]


# what `npuprof analyse` of one of npuprof's own runs has no use for: the readers of other tools' files (the
# trace decoder and msgspec, Kineto, the Ascend and CANN databases with sqlite3, CANN timelines), the database
# writers, the watcher of dynamic profiling, `npuprof collect`'s code, the terminal tables, the other commands' code
NOT_FOR_AN_OWN_RUN = ("msgspec", "sqlite3", "rich", "secrets", "multiprocessing",
                      "npuprof.readers.trace_decode", "npuprof.readers.kineto", "npuprof.readers.ascend_db",
                      "npuprof.readers.cann_timeline", "npuprof.export.analysis_db", "npuprof.export.ascend_db_writer",
                      "npuprof.dynamic_profile.controller", "npuprof.dynamic_profile.request",
                      "npuprof.integrations.pyacl.acl_json",
                      "npuprof.integrations.pyacl.svp_read", "npuprof.integrations.pyacl.svp_layout",
                      "npuprof.cluster.analyse", "npuprof.analysis.diff", "npuprof.report.page")


def test_analyse_of_an_own_run_imports_only_what_it_uses(tmp_path):
    """Every command pays for what its process imports: `npuprof analyse` of an own run loads every plugin,
    which asks each whether the folder is its kind of run, and imports none of the modules above; the
    outputs are written all the same."""
    from npuprof import Profiler, record_function

    with Profiler(output_path=tmp_path / "prof") as prof:
        for _ in range(3):
            with record_function("forward"):
                sum(range(20000))
            prof.step()
    run = prof.saved_runs[0]
    code = ("import sys; from npuprof.cli import main; "
            f"rc = main(['analyse', '-o', {str(tmp_path / 'out')!r}, {str(run)!r}]); "
            "print(rc, end=' '); " + _print_imported(NOT_FOR_AN_OWN_RUN))
    stdout = _python(code)
    assert stdout.splitlines()[-1] == "0 ", stdout
    assert list((tmp_path / "out").rglob("step_trace_time.csv")), list((tmp_path / "out").rglob("*"))


def test_every_command_starts_without_the_writers_and_readers():
    """Before any command runs, the CLI builds every command's parser and loads every plugin: none of the
    output writers (the CSV cells' tables are built at import), the readers of other tools' files, the
    advice rules or the framework APIs are imported then."""
    heavy = NOT_FOR_AN_OWN_RUN + ("npuprof.export.textrows", "npuprof.export.csvfiles", "npuprof.export.trace_json",
                                  "npuprof.analysis.advice", "npuprof.integrations.tensorflow.estimator",
                                  "npuprof.integrations.pyacl.cann_import", "subprocess")
    assert _python("import sys; from npuprof.cli import build_parser; build_parser(); "
                   + _print_imported(heavy)).strip() == ""


def test_the_names_handed_out_on_first_use_still_import():
    """`npuprof.dynamic_profile` and `npuprof.advise` import their working modules on first use; their
    public names are the same objects as the modules' own."""
    code = ("import sys, npuprof.dynamic_profile as dp, npuprof.advise as ad; "
            "print('npuprof.dynamic_profile.controller' in sys.modules, 'npuprof.analysis.advice' in sys.modules); "
            "from npuprof.dynamic_profile import CONFIG_NAME, TEMPLATE, CaptureRequest, DynamicController, "
            "parse_config_text; from npuprof.dynamic_profile import controller, request; "
            "print(DynamicController is controller.DynamicController, parse_config_text is request.parse_config_text, "
            "CONFIG_NAME, sorted(r.id for r in ad.registered_rules())[:1])")
    first, second = _python(code).splitlines()
    assert first == "False False"
    assert second.startswith("True True profiler_config.json ['"), second


def test_cli_plugins_lists_builtins():
    out = subprocess.run([sys.executable, "-m", "npuprof", "plugins"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "host" in out.stdout and "exporters" in out.stdout and "built-in" in out.stdout


def test_cli_bad_path_exits_nonzero_with_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "npuprof", "analyse", str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0 and "does not exist" in out.stderr
