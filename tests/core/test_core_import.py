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


def test_cli_plugins_lists_builtins():
    out = subprocess.run([sys.executable, "-m", "npuprof", "plugins"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "host" in out.stdout and "exporters" in out.stdout and "built-in" in out.stdout


def test_cli_bad_path_exits_nonzero_with_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "npuprof", "analyse", str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0 and "does not exist" in out.stderr
