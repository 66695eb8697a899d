"""Helpers for the pyACL tests: the acl double on sys.path, models, a loopback sshd.

The ``acl`` imported here is the TEST DOUBLE in tests/acl (not CANN's pyACL).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
DOUBLE_DIR = HERE / "acl"
FAKE_MSPROF_DIR = DOUBLE_DIR / "bin"


def import_double():
    """Import the acl double (tests/acl on sys.path) and return the module."""
    if str(DOUBLE_DIR) not in sys.path:
        sys.path.insert(0, str(DOUBLE_DIR))
    import acl

    assert getattr(acl, "IS_TEST_DOUBLE", False), f"imported a real acl from {acl.__file__}"
    return acl


def fresh_process_state():
    """Reset the double, npuprof's contract bookkeeping and the pyacl plugin: a 'new process'."""
    acl = import_double()
    acl._double_reset()
    from npuprof.integrations.pyacl import checked, plugin, subscribe
    from npuprof.integrations.pyacl.contract import CONTRACT
    from npuprof.integrations.pyacl.tracking import _before_finalize, track_acl

    CONTRACT.reset()
    checked._reset_shared()
    plugin._reset_for_tests()
    subscribe._active = None
    _before_finalize.clear()
    track_acl(acl)
    CONTRACT.acl_initialised = False  # tracking is installed before acl.init in these tests
    return acl


def release_double() -> None:
    """Undo import_double: later tests in this pytest process must not see an ``acl`` module
    (the pyACL backend engages in any process that imported acl)."""
    from npuprof.integrations.pyacl import checked, plugin, subscribe
    from npuprof.integrations.pyacl.contract import CONTRACT
    from npuprof.integrations.pyacl.tracking import _before_finalize

    plugin._backend.finalize_quietly()
    acl = sys.modules.get("acl")
    if acl is not None and getattr(acl, "IS_TEST_DOUBLE", False):
        acl._double_reset()
    for name in [m for m in sys.modules if m == "acl" or m.startswith("acl.")]:
        del sys.modules[name]
    while str(DOUBLE_DIR) in sys.path:
        sys.path.remove(str(DOUBLE_DIR))
    CONTRACT.reset()
    checked._reset_shared()
    plugin._reset_for_tests()
    subscribe._active = None
    _before_finalize.clear()


def write_model(path: Path, ops: list, fail_after: Optional[int] = None) -> Path:
    """A model file for the double: ops = [(name, type, duration_us), ...]."""
    path.write_text(json.dumps({"ops": [{"name": n, "type": t, "duration_us": d} for n, t, d in ops],
                                "fail_after": fail_after}))
    return path


# -- loopback OpenSSH server ---------------------------------------------------------------
SSHD = "/usr/sbin/sshd"


def ensure_sshd() -> str:
    """Path of sshd; installs Debian's openssh-server with apt-get when absent (needs root)."""
    if os.path.exists(SSHD):
        return SSHD
    if os.geteuid() != 0:
        raise RuntimeError("sshd is missing and installing openssh-server needs root")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "openssh-server"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    if not os.path.exists(SSHD):
        raise RuntimeError("apt-get installed openssh-server but /usr/sbin/sshd is still missing")
    return SSHD


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackSshd:
    """An sshd on 127.0.0.1:<high port> with its own config, keys and authorized_keys."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.user = os.environ.get("USER") or __import__("pwd").getpwuid(os.getuid()).pw_name
        self.proc: Optional[subprocess.Popen] = None
        self.host_key = root / "ssh_host_ed25519_key"
        self.client_key = root / "id_ed25519"
        self.known_hosts = root / "known_hosts"
        self.log = root / "sshd.log"

    def start(self) -> "LoopbackSshd":
        sshd = ensure_sshd()
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege-separation dir sshd insists on
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        for key in (self.host_key, self.client_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        (self.root / "authorized_keys").write_text(self.client_key.with_suffix(".pub").read_text())
        os.chmod(self.root / "authorized_keys", 0o600)
        cfg = self.root / "sshd_config"
        cfg.write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {self.host_key}",
            f"PidFile {self.root / 'sshd.pid'}", f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
            "StrictModes no", "UsePAM no", "PubkeyAuthentication yes", "PasswordAuthentication yes",
            "KbdInteractiveAuthentication no", "PermitRootLogin yes", f"AllowUsers {self.user}",
            "Subsystem sftp internal-sftp", "LogLevel VERBOSE", ""]))
        self.proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(cfg)], stdout=open(self.log, "wb"),
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("sshd did not start listening")
        pub = self.host_key.with_suffix(".pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n")
        return self

    def write_ini(self, path: Path, pwd: Optional[str] = None, key: bool = True, mode: int = 0o600) -> Path:
        lines = ["[ssh_config]", "ip = 127.0.0.1", f"username = {self.user}", f"port = {self.port}"]
        if pwd is not None:
            lines.append(f"pwd = {pwd}")
        if key:
            lines.append(f"key_file = {self.client_key}")
        path.write_text("\n".join(lines) + "\n")
        os.chmod(path, mode)
        return path

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None


def python_for_remote() -> str:
    """The interpreter the 'board' runs apps with (this venv's, so numpy is there)."""
    return sys.executable


def copy_double_into(project: Path) -> None:
    """Ship the acl double with an app (as CANN ships pyACL on a board)."""
    shutil.copytree(DOUBLE_DIR / "acl", project / "acl")
