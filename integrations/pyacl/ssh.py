"""SSH to a board for ``npuprof collect``: the msprof.pyc ini, upload, run, fetch.

The ini file is msprof.pyc's::

    [ssh_config]
    ip = 192.168.1.10
    username = HwHiAiUser
    pwd = ...            ; optional when a key is used
    port = 22
    key_file = ~/.ssh/id_ed25519    ; npuprof extension, optional

It holds a password, so it is refused when group or others can read or
write it (``chmod 600``); so is a ``key_file`` that is not private (ssh's
own rule, :func:`npuprof.fileio.check_private_file`). The password is
handed to paramiko only; it never appears in a message, a log line or a
repr. Host keys are checked against
``~/.ssh/known_hosts`` (or ``known_hosts=``) and an unknown host is refused
unless the caller explicitly opts out (``check_host_key=False``).

paramiko (extra ``npuprof[ssh]``) is used rather than the ssh/scp programs:
it does password logins from the ini without sshpass (which would put the
password in argv or the environment), enforces the host-key policy in
process, and copies files over SFTP in the same connection. msprof.pyc uses
it too.

Example::

    cfg = read_ssh_ini("board.ini")
    with RemoteBoard(cfg) as board:
        board.upload_dir("./app", "/tmp/job/app")
        code = board.run("cd /tmp/job/app && ./main")
        board.download_dir("/tmp/job/profiling", "./prof")
"""
from __future__ import annotations

import configparser
import logging
import os
import posixpath
import shlex
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, TextIO

from npuprof.errors import BackendUnavailable, ProfilerConfigError, ProfilerDataError, ProfilerError
from npuprof.fileio import check_private_file

log = logging.getLogger("npuprof")
SECTION = "ssh_config"
SKIP_UPLOAD = {"__pycache__", ".git", ".venv", ".mypy_cache", ".pytest_cache"}


class RemoteError(ProfilerError):
    """An SSH/SFTP step of ``npuprof collect`` failed (message names the step)."""


@dataclass(frozen=True)
class SshConfig:
    """Connection settings from the ini; the password is kept out of repr()."""

    host: str
    username: str
    port: int = 22
    password: Optional[str] = field(default=None, repr=False, compare=False)
    key_file: Optional[str] = None
    source: str = ""

    def target(self) -> str:
        return f"{self.username}@{self.host}:{self.port}"


def check_ini_permissions(path: Path) -> None:
    """Refuse an ini that group or others may read or write (it may hold a password)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ProfilerConfigError("--config", str(path), "an existing ini file", hint=e.strerror) from None
    if not stat.S_ISREG(st.st_mode):
        raise ProfilerConfigError("--config", str(path), "a regular file")
    if st.st_mode & 0o077:
        raise ProfilerConfigError("--config", str(path), "a file only its owner can read (mode 600)",
                                  hint=f"its mode is {stat.S_IMODE(st.st_mode):o} and it may hold the board "
                                       f"password; run: chmod 600 {path}")


def read_ssh_ini(path: Any) -> SshConfig:
    """Parse and check the ``[ssh_config]`` ini (see module doc)."""
    p = Path(os.path.expanduser(str(path)))
    check_ini_permissions(p)
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with open(p, encoding="utf-8") as fh:
            parser.read_file(fh)
    except (OSError, configparser.Error) as e:
        raise ProfilerConfigError("--config", str(p), f"an ini file with a [{SECTION}] section",
                                  hint=type(e).__name__) from None
    if not parser.has_section(SECTION):
        raise ProfilerConfigError("--config", str(p), f"an ini file with a [{SECTION}] section")
    sec = parser[SECTION]
    unknown = set(sec) - {"ip", "username", "pwd", "port", "key_file"}
    if unknown:
        raise ProfilerConfigError(f"[{SECTION}] key", sorted(unknown)[0], "ip, username, pwd, port, key_file")
    host = sec.get("ip", "").strip()
    user = sec.get("username", "").strip()
    if not host:
        raise ProfilerConfigError(f"[{SECTION}] ip", host, "the board's address")
    if not user:
        raise ProfilerConfigError(f"[{SECTION}] username", user, "the login user on the board")
    port_text = sec.get("port", "22").strip() or "22"
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ProfilerConfigError(f"[{SECTION}] port", port_text, "an integer in [1, 65535]")
    password = sec.get("pwd")
    key_file = sec.get("key_file")
    if key_file:
        key_file = os.path.expanduser(key_file.strip())
        if not os.path.isfile(key_file):
            raise ProfilerConfigError(f"[{SECTION}] key_file", key_file, "an existing private key file")
        try:
            check_private_file(key_file, "SSH private key")
        except ProfilerDataError as e:
            raise ProfilerConfigError(f"[{SECTION}] key_file", key_file, "a private key only its owner can "
                                      "read (mode 600)", hint=e.problem) from None
    return SshConfig(host=host, username=user, port=int(port_text), password=password or None,
                     key_file=key_file or None, source=str(p))


def _paramiko() -> Any:
    try:
        import paramiko  # noqa: PLC0415  (optional extra)
    except ImportError:
        raise BackendUnavailable("remote collection needs paramiko: pip install 'npuprof[ssh]'") from None
    return paramiko


class RemoteBoard:
    """One SSH connection to the board (see module doc)."""

    def __init__(self, config: SshConfig, check_host_key: bool = True, known_hosts: Optional[str] = None,
                 timeout: float = 30.0, out: TextIO = sys.stdout) -> None:
        self.config = config
        self.check_host_key = check_host_key
        self.known_hosts = known_hosts
        self.timeout = timeout
        self.out = out
        self.client: Any = None
        self.sftp: Any = None

    def connect(self) -> "RemoteBoard":
        paramiko = _paramiko()
        cfg = self.config
        client = paramiko.SSHClient()
        if self.check_host_key:
            try:
                client.load_system_host_keys()
            except OSError:
                pass
            if self.known_hosts:
                try:
                    client.load_host_keys(os.path.expanduser(self.known_hosts))
                except OSError as e:
                    raise RemoteError(f"cannot read known_hosts file {self.known_hosts}: {e.strerror}") from None
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        else:
            log.warning("npuprof: host key checking is OFF for %s (--insecure-no-host-key-check)", cfg.target())
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        try:
            client.connect(cfg.host, port=cfg.port, username=cfg.username, password=cfg.password,
                           key_filename=cfg.key_file, timeout=self.timeout, banner_timeout=self.timeout,
                           auth_timeout=self.timeout, look_for_keys=cfg.key_file is None,
                           allow_agent=cfg.key_file is None)
        except paramiko.SSHException as e:
            # paramiko's messages never contain the password; keep only the type and text
            text = str(e)
            if cfg.password:
                text = text.replace(cfg.password, "***")
            hint = ""
            if "not found in known_hosts" in text or "Server" in text and "not found" in text:
                hint = " (unknown host key: add it to known_hosts, e.g. with ssh-keyscan, or pass " \
                       "--insecure-no-host-key-check to skip the check)"
            raise RemoteError(f"ssh connection to {cfg.target()} failed: {type(e).__name__}: {text}{hint}") from None
        except OSError as e:
            raise RemoteError(f"ssh connection to {cfg.target()} failed: {e.strerror or e}") from None
        self.client = client
        self.sftp = client.open_sftp()
        return self

    def close(self) -> None:
        if self.sftp is not None:
            self.sftp.close()
            self.sftp = None
        if self.client is not None:
            self.client.close()
            self.client = None

    def __enter__(self) -> "RemoteBoard":
        return self.connect()

    def __exit__(self, *exc: Any) -> bool:
        self.close()
        return False

    # -- files ----------------------------------------------------------------------------
    def makedirs(self, path: str, mode: int = 0o700) -> None:
        parts = []
        p = path
        while p not in ("", "/"):
            parts.append(p)
            p = posixpath.dirname(p)
        for d in reversed(parts):
            try:
                self.sftp.stat(d)
            except FileNotFoundError:
                self.sftp.mkdir(d, mode)

    def upload_dir(self, local: Path, remote: str) -> int:
        """Copy a local directory tree (files keep their exec bits); returns files copied."""
        local = Path(local)
        self.makedirs(remote)
        count = 0
        for root, dirs, files in os.walk(local):
            dirs[:] = [d for d in dirs if d not in SKIP_UPLOAD]
            rel = os.path.relpath(root, local)
            rdir = remote if rel == "." else posixpath.join(remote, *Path(rel).parts)
            self.makedirs(rdir)
            for name in files:
                src = os.path.join(root, name)
                if os.path.islink(src) or not os.path.isfile(src):
                    continue
                dst = posixpath.join(rdir, name)
                self.sftp.put(src, dst)
                self.sftp.chmod(dst, stat.S_IMODE(os.stat(src).st_mode) & 0o750)
                count += 1
        return count

    def write_text(self, remote: str, text: str, mode: int = 0o640) -> None:
        with self.sftp.open(remote, "w") as fh:
            fh.write(text)
        self.sftp.chmod(remote, mode)

    def read_text(self, remote: str) -> Optional[str]:
        try:
            with self.sftp.open(remote, "r") as fh:
                return fh.read().decode("utf-8")
        except FileNotFoundError:
            return None

    def download_dir(self, remote: str, local: Path) -> int:
        """Copy a remote tree into ``local`` (created 0750); returns files copied."""
        local = Path(local)
        count = 0
        try:
            entries = self.sftp.listdir_attr(remote)
        except FileNotFoundError:
            return 0
        os.makedirs(local, mode=0o750, exist_ok=True)
        for entry in entries:
            src = posixpath.join(remote, entry.filename)
            dst = local / entry.filename
            if stat.S_ISDIR(entry.st_mode):
                count += self.download_dir(src, dst)
            elif stat.S_ISREG(entry.st_mode):
                self.sftp.get(src, str(dst))
                os.chmod(dst, 0o640)
                count += 1
        return count

    def remove_tree(self, remote: str) -> None:
        self.run(f"rm -rf -- {shlex.quote(remote)}", echo=False)

    # -- commands -------------------------------------------------------------------------
    def run(self, command: str, echo: bool = True, on_line: Optional[Callable[[str], None]] = None) -> int:
        """Run a shell command on the board; stream its output; return its exit status."""
        chan = self.client.get_transport().open_session()
        chan.set_combine_stderr(True)
        chan.exec_command(command)
        buf = b""
        while True:
            data = chan.recv(32768)
            if not data:
                break
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                text = line.decode("utf-8", "replace")
                if echo:
                    print(text, file=self.out)
                if on_line is not None:
                    on_line(text)
        if buf:
            text = buf.decode("utf-8", "replace")
            if echo:
                print(text, file=self.out)
            if on_line is not None:
                on_line(text)
        return chan.recv_exit_status()
