"""File safety: private modes whatever the umask, no writing through
symbolic links or into directories another user can swap, input size
limits, credentials files only when private, and no secret in any output or
log line.
"""
from __future__ import annotations

import importlib
import json
import logging
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rel_support as rs
from npuprof import Profiler, ProfilerConfigError, ProfilerDataError, analyse, mstx, tensorboard_trace_handler
from npuprof.cli import main as cli_main
from npuprof.fileio import check_input_file, check_private_file, forced_reading, open_private, secure_mkdir
from npuprof.rawstore import RAW_DIR
from rel_support import counts_summary  # noqa: F401

NOBODY = 65534

UMASK_CHILD = textwrap.dedent("""
    import os, sys
    os.umask(int(sys.argv[2], 8))
    from npuprof import Profiler, mstx, record_function, schedule, tensorboard_trace_handler, analyse
    out = sys.argv[1]
    with Profiler(schedule=schedule(wait=0, active=2, repeat=1), export_type=["text", "db"],
                  on_trace_ready=tensorboard_trace_handler(out + "/deep/er"), host_sys=["cpu"]) as prof:
        for step in range(3):
            with record_function("work"):
                mstx.mark("m")
            prof.step()
    prof.add_metadata("k", "v")
    analyse(out + "/deep/er", export_type=["text", "db"])
""")


@pytest.mark.parametrize("umask", ["000", "022", "077", "027"])
def test_dirs_0750_files_0640_whatever_the_umask(tmp_path, umask):
    out = tmp_path / "o"
    subprocess.run([sys.executable, "-c", UMASK_CHILD, str(out), umask], check=True)
    modes = rs.tree_modes(out)
    assert len(modes) > 15
    wrong = {p: oct(m) for p, (is_dir, m) in modes.items() if m != (0o750 if is_dir else 0o640)}
    assert not wrong, f"umask {umask}: {wrong}"


def test_refuses_an_output_directory_that_is_a_symlink(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for target in ("link", "link/new/deeper", "dangling", "dangling/x"):
        with pytest.raises(ProfilerConfigError, match="symbolic link") as e:
            Profiler(output_path=tmp_path / target)
        assert str(real) in str(e.value) or "nowhere" in str(e.value)   # says where it points
    assert not (tmp_path / "nowhere").exists() and list(real.iterdir()) == []


def test_refuses_a_symlink_anywhere_on_the_path_unless_root_put_it_in_a_root_only_directory(tmp_path):
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    if os.geteuid() == 0:
        # placed by root in a root-only directory: a system layout like /home -> /data/home
        if not (os.stat(tmp_path).st_mode & 0o022):
            Profiler(output_path=link / "sub", start_profile=False)
        os.lchown(link, NOBODY, NOBODY)      # now another user's link
    with pytest.raises(ProfilerConfigError, match="without symbolic links") as e:
        Profiler(output_path=link / "sub")
    assert str(real / "sub") in str(e.value)   # the message gives the real path to use


@pytest.mark.parametrize("mode,ok", [(0o777, False), (0o1777, True), (0o757, False), (0o775, True)])
def test_world_writable_directory_without_sticky_bit_is_refused(tmp_path, mode, ok):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, mode)
    for target in (shared, shared / "prof", shared / "a" / "b"):
        if ok:
            Profiler(output_path=target, start_profile=False)
        else:
            with pytest.raises(ProfilerConfigError, match="world-writable") as e:
                Profiler(output_path=target)
            assert oct(mode)[2:] in str(e.value)
    assert ok or list(shared.iterdir()) == []


def test_secure_mkdir_and_open_private_never_follow_a_symlink(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (tmp_path / "planted").symlink_to(victim)
    with pytest.raises(ProfilerDataError, match="symbolic link"):
        secure_mkdir(tmp_path / "planted")
    (tmp_path / "file-link").symlink_to(victim / "secret.txt")
    with pytest.raises(OSError):
        open_private(tmp_path / "file-link", os.O_WRONLY | os.O_CREAT)
    assert list(victim.iterdir()) == []


def _run_with_events(root: Path, n: int = 3000) -> Path:
    with Profiler(output_path=root, flush_interval=3600) as prof:
        for i in range(n):
            mstx.mark(f"m{i}")
    return prof.saved_runs[0]


def test_analysis_refuses_inputs_over_the_size_limit_unless_forced(tmp_path, monkeypatch):
    run = _run_with_events(tmp_path / "out")
    (segment,) = (run / RAW_DIR).glob("*.npr")
    monkeypatch.setenv("NPUPROF_MAX_INPUT_BYTES", "4KB")
    with pytest.raises(ProfilerDataError, match="over the 4096-byte input limit") as e:
        check_input_file(segment)
    assert e.value.path == str(segment) and "--force" in str(e.value)
    (res,) = analyse(run)
    assert len(rs.marks_of(res)) == 0
    assert any(segment.name in w and "input limit" in w for w in res.warnings), res.warnings
    with forced_reading():
        (res,) = analyse(run)
    assert len(rs.marks_of(res)) == 3000


def test_cli_force_reads_inputs_over_the_size_limit(tmp_path, monkeypatch):
    run = _run_with_events(tmp_path / "out")
    monkeypatch.setenv("NPUPROF_MAX_INPUT_BYTES", "4KB")
    assert cli_main(["analyse", str(run), "--force", "--quiet"]) == 0
    (res,) = analyse(run, force=True)
    assert len(rs.marks_of(res)) == 3000


def test_input_that_is_not_a_regular_file_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, problem in ((fifo, "not a regular file"), (tmp_path, "not a regular file"),
                          (Path("/dev/zero"), "not a regular file"), (tmp_path / "missing", "cannot be read")):
        with pytest.raises(ProfilerDataError, match=problem) as e:
            check_input_file(path)
        assert e.value.path == str(path)


def test_credentials_file_must_be_private(tmp_path):
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETKEYMATERIAL\n")
    os.chmod(key, 0o600)
    assert check_private_file(key) == key
    for mode in (0o640, 0o604, 0o644, 0o660, 0o606):
        os.chmod(key, mode)
        with pytest.raises(ProfilerDataError, match="chmod 600") as e:
            check_private_file(key, "SSH private key")
        assert "SECRETKEYMATERIAL" not in str(e.value) and oct(mode)[2:] in str(e.value)
    os.chmod(key, 0o600)
    (tmp_path / "key-link").symlink_to(key)
    with pytest.raises(ProfilerDataError, match="symbolic link"):
        check_private_file(tmp_path / "key-link")
    if os.geteuid() == 0:
        os.chown(key, NOBODY, NOBODY)
        with pytest.raises(ProfilerDataError, match="belongs to uid"):
            check_private_file(key)


SECRET = "hunter2-S3CR3T-value"


def _ssh_ini(tmp_path: Path, mode: int, key_mode: int = 0o600) -> Path:
    key = tmp_path / "board_key"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    os.chmod(key, key_mode)
    ini = tmp_path / "board.ini"
    ini.write_text(f"[ssh_config]\nip = 127.0.0.1\nusername = me\npwd = {SECRET}\nport = 22\nkey_file = {key}\n")
    os.chmod(ini, mode)
    return ini


def test_ssh_ini_with_a_password_refused_unless_private_and_never_shown(tmp_path, caplog):
    ssh = importlib.import_module("npuprof.integrations.pyacl.ssh")
    caplog.set_level(logging.DEBUG)
    for mode in (0o644, 0o640, 0o604):
        with pytest.raises(ProfilerConfigError, match="chmod 600") as e:
            ssh.read_ssh_ini(_ssh_ini(tmp_path, mode))
        assert SECRET not in str(e.value)
    cfg = ssh.read_ssh_ini(_ssh_ini(tmp_path, 0o600))
    assert cfg.password == SECRET
    assert SECRET not in repr(cfg) and SECRET not in str(cfg) and SECRET not in caplog.text


def test_ssh_private_key_readable_by_others_is_refused(tmp_path):
    ssh = importlib.import_module("npuprof.integrations.pyacl.ssh")
    for key_mode in (0o644, 0o640, 0o604, 0o660):
        with pytest.raises((ProfilerConfigError, ProfilerDataError), match="600") as e:
            ssh.read_ssh_ini(_ssh_ini(tmp_path, 0o600, key_mode=key_mode))
        assert "key_file" in str(e.value) and SECRET not in str(e.value)
    assert ssh.read_ssh_ini(_ssh_ini(tmp_path, 0o600, key_mode=0o600)).key_file == str(tmp_path / "board_key")


def test_no_secret_in_any_output_or_log(tmp_path, monkeypatch, caplog):
    """Secrets in the environment and the command line of the training
    process never reach profiler_info, the outputs or the log."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("HF_TOKEN", SECRET + "-token")
    monkeypatch.setattr(sys, "argv", ["train.py", f"--api-key={SECRET}"])
    out = tmp_path / "out"
    with Profiler(on_trace_ready=tensorboard_trace_handler(str(out)), export_type=["text", "db"],
                  with_stack=True, host_sys=["cpu", "mem"]) as prof:
        mstx.mark("step")
        prof.step()
    assert cli_main(["analyse", str(out), "--export-type", "text", "db"]) == 0
    assert cli_main(["export", "summary", "--format", "json", "-dir", str(out)]) == 0
    leaked = [str(p) for p in out.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert not leaked
    assert SECRET not in caplog.text
    info = json.loads(next(out.rglob("profiler_info_*.json")).read_text())
    assert "environ" not in json.dumps(info).lower()


def test_output_files_are_never_world_readable_even_if_they_existed(tmp_path):
    """Re-analysing replaces an existing output file (say one a user made
    0666) with a fresh 0640 file instead of writing into it."""
    run = _run_with_events(tmp_path / "out", 10)
    analyse(run)
    trace = run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    os.chmod(trace, 0o666)
    analyse(run)
    assert stat.S_IMODE(trace.stat().st_mode) == 0o640
