"""`import npuprof` imports no framework; the CLI answers."""
import subprocess
import sys


def test_import_npuprof_pulls_in_no_framework():
    code = ("import sys, npuprof, npuprof.cli, npuprof.plugins.manager as m; m.get_plugin_host(); "
            "import npuprof.integrations; "
            "print(','.join(x for x in ('tensorflow', 'mindspore', 'acl', 'torch') if x in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_the_plugin_host_starts_without_the_commands_it_does_not_run():
    """Every command loads every built-in plugin: the cluster, diff and report plugins import their
    command's code when it runs, not at load (a small analysis paid ~40 ms of CPU for them), and their
    packages' names still import."""
    heavy = ("npuprof.cluster.analyse", "npuprof.cluster.collect", "npuprof.analysis.diff", "npuprof.report.page",
             "multiprocessing", "concurrent.futures.process")
    code = ("import sys, npuprof.plugins.manager as m; host = m.get_plugin_host(); "
            "assert all(host.records[p].loaded for p in ('cluster', 'diff', 'report')), host.records; "
            f"print(','.join(x for x in {heavy!r} if x in sys.modules)); "
            "from npuprof.cluster import ClusterResult, cluster_analyse, rank_profiler, discover_ranks; "
            "from npuprof.report import write_report; from npuprof.rundiff import diff_options; "
            "print(diff_options(top=3).top, cluster_analyse.__module__, rank_profiler.__module__, "
            "write_report.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["", "3 npuprof.cluster.analyse npuprof.cluster.collect npuprof.report.page"]


def test_cli_plugins_lists_builtins():
    out = subprocess.run([sys.executable, "-m", "npuprof", "plugins"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "host" in out.stdout and "exporters" in out.stdout and "built-in" in out.stdout


def test_cli_bad_path_exits_nonzero_with_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "npuprof", "analyse", str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0 and "does not exist" in out.stderr
