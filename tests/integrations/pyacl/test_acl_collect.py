"""`npuprof collect`: locally, and over SSH to a real OpenSSH server on loopback.

The "board" runs the app with the acl TEST DOUBLE shipped in the app's
directory (as CANN ships pyACL on a board); no NPU is involved.
"""
from __future__ import annotations

import io
import json
import logging
import os
import stat
import textwrap
from pathlib import Path

import pytest

from acl_support import FAKE_MSPROF_DIR, LoopbackSshd, copy_double_into, python_for_remote, write_model
from npuprof.cli import main as cli_main
from npuprof.errors import ProfilerConfigError
from npuprof.integrations.pyacl.ssh import RemoteBoard, RemoteError, read_ssh_ini

APP = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    import acl
    assert acl.init("acl.json") == 0
    assert acl.rt.set_device(0) == 0
    model_id, ret = acl.mdl.load_from_file("model.json")
    assert ret == 0
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        assert acl.mdl.execute(model_id, 0, 0) == 0
    acl.mdl.unload(model_id)
    assert acl.finalize() == 0
    print("app done")
""")
OPS = [("conv1", "Conv2D", 100), ("relu1", "Relu", 25), ("fc", "MatMul", 60)]
SECRET = "s3cr3t-Pa55word-xyz"


def make_app(root: Path) -> Path:
    project = root / "app"
    project.mkdir(parents=True)
    (project / "main.py").write_text(APP)
    write_model(project / "model.json", OPS)
    (project / "acl.json").write_text(json.dumps({"dump": {"dump_path": "/nowhere"}}))
    copy_double_into(project)
    return project


def op_stats(prof_dir: Path) -> dict:
    import csv

    out = prof_dir.parent / "npuprof_output" / prof_dir.name   # CANN's PROF_ dir stays read-only
    with open(out / "ASCEND_PROFILER_OUTPUT" / "op_statistic.csv") as fh:
        return {r["OP Type"]: r for r in csv.DictReader(fh)}


@pytest.fixture
def msprof_on_path(monkeypatch):
    monkeypatch.setenv("PATH", f"{FAKE_MSPROF_DIR}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("NPUPROF_NO_MSPROF", raising=False)
    monkeypatch.delenv("PROFILING_MODE", raising=False)


def run_cli(argv: list) -> tuple[int, str]:
    out = io.StringIO()
    from contextlib import redirect_stderr, redirect_stdout

    with redirect_stdout(out), redirect_stderr(out):
        code = cli_main(argv)
    return code, out.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("via", ["acl.json", "env"])
def test_local_collect_all(tmp_path, msprof_on_path, via):
    project = make_app(tmp_path)
    before = (project / "acl.json").read_text()
    code, out = run_cli(["collect", "-m", str(project / "main.py"), "--output", str(tmp_path / "out"), "--all",
                         "--via", via, "--", "5"])
    assert code == 0, out
    assert (project / "acl.json").read_text() == before  # the app's acl.json is restored
    profs = list((tmp_path / "out").glob("collect_*/data/PROF_*"))
    assert len(profs) == 1
    stats = op_stats(profs[0])
    assert {k: int(v["Count"]) for k, v in stats.items()} == {"Conv2D": 5, "Relu": 5, "MatMul": 5}
    assert float(stats["Conv2D"]["Total Time(us)"]) == pytest.approx(500.0)


@pytest.mark.slow
def test_local_collect_reports_an_app_failure(tmp_path, msprof_on_path):
    project = make_app(tmp_path)
    (project / "main.py").write_text("raise SystemExit(3)\n")
    code, out = run_cli(["collect", "-m", str(project / "main.py"), "--output", str(tmp_path / "out")])
    assert code == 4
    assert "exited with 3" in out and "no PROF_/JOB data" in out


# -- SSH -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = LoopbackSshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


def test_world_readable_ini_is_refused(tmp_path, sshd):
    ini = sshd.write_ini(tmp_path / "board.ini", pwd=SECRET, mode=0o644)
    with pytest.raises(ProfilerConfigError) as exc:
        read_ssh_ini(ini)
    assert "chmod 600" in str(exc.value) and "644" in str(exc.value)
    assert SECRET not in str(exc.value)
    project = make_app(tmp_path)
    code, out = run_cli(["collect", "-m", str(project / "main.py"), "--config", str(ini),
                         "--output", str(tmp_path / "out")])
    assert code == 2 and "chmod 600" in out and SECRET not in out
    os.chmod(ini, 0o640)  # group-readable is refused too
    with pytest.raises(ProfilerConfigError):
        read_ssh_ini(ini)
    os.chmod(ini, 0o600)
    cfg = read_ssh_ini(ini)
    assert cfg.port == sshd.port and SECRET not in repr(cfg)


@pytest.mark.slow
def test_collect_over_ssh_end_to_end(tmp_path, sshd, msprof_on_path, caplog):
    caplog.set_level(logging.DEBUG)
    project = make_app(tmp_path)
    ini = sshd.write_ini(tmp_path / "board.ini", pwd=SECRET)
    remote_dir = str(tmp_path / "board_work")
    code, out = run_cli(["collect", "-m", str(project / "main.py"), "--config", str(ini), "--all",
                         "--output", str(tmp_path / "out"), "--known-hosts", str(sshd.known_hosts),
                         "--python", python_for_remote(), "--remote-dir", remote_dir, "--", "4"])
    assert code == 0, out + sshd.log.read_text()[-3000:]
    assert "app done" in out  # the board's output is streamed back
    assert f"{sshd.user}@127.0.0.1:{sshd.port}" in out
    profs = list((tmp_path / "out").glob("collect_*/data/PROF_*"))
    assert len(profs) == 1
    stats = op_stats(profs[0])
    assert {k: int(v["Count"]) for k, v in stats.items()} == {"Conv2D": 4, "Relu": 4, "MatMul": 4}
    assert not os.path.exists(remote_dir)  # the board's work directory was removed
    assert stat.S_IMODE(os.stat(profs[0]).st_mode) & 0o007 == 0
    assert SECRET not in out and SECRET not in caplog.text
    assert SECRET not in sshd.log.read_text()


def test_unknown_host_key_is_refused_unless_opted_out(tmp_path, sshd):
    ini = sshd.write_ini(tmp_path / "board.ini")
    empty = tmp_path / "known_hosts_empty"
    empty.write_text("")
    cfg = read_ssh_ini(ini)
    board = RemoteBoard(cfg, known_hosts=str(empty))
    with pytest.raises(RemoteError, match="known_hosts"):
        board.connect()
    with RemoteBoard(cfg, check_host_key=False) as insecure:
        assert insecure.run("echo hello", echo=False) == 0
    with RemoteBoard(cfg, known_hosts=str(sshd.known_hosts)) as board:
        lines = []
        assert board.run("echo hi; exit 3", echo=False, on_line=lines.append) == 3
        assert lines == ["hi"]


def test_wrong_password_is_not_echoed(tmp_path, sshd):
    ini = sshd.write_ini(tmp_path / "board.ini", pwd=SECRET, key=False)
    cfg = read_ssh_ini(ini)
    board = RemoteBoard(cfg, known_hosts=str(sshd.known_hosts))
    board_cfg_no_agent = cfg
    with pytest.raises(RemoteError) as exc:
        os.environ.pop("SSH_AUTH_SOCK", None)
        board.connect()
    assert "ssh connection" in str(exc.value) and SECRET not in str(exc.value)
    assert SECRET not in repr(board_cfg_no_agent)
