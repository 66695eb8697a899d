"""``npuprof collect``: run an app with CANN profiling on, here or on a board.

Like msprof.pyc's ``collect -m <main> --config <ssh.ini> [--all]``: the
profiler section of the app's acl.json is written (``--acl-json``, default
``acl.json`` in the app's directory; the original file is restored
afterwards), or, with ``--via env``, CANN's ``PROFILING_MODE`` /
``PROFILING_OPTIONS`` environment is set instead (for apps that do not read
an acl.json). The app runs in its directory; the PROF_/JOB data it writes is
collected under ``--output`` (the run folder's ``npuprof_collect.json`` lists
what was fetched); ``--all`` then imports and analyses it, and an SS928/SS927
JOB also gets msprof.pyc's ``timeline/`` and ``summary/`` inside it, as
``msprof.pyc collect --all`` does (:mod:`.svp_layout`).

With ``--config board.ini`` (see :mod:`.ssh`) the app's directory is
uploaded to the board over SSH, run there, and the data fetched back.

Every flag (and the ini, and an existing acl.json) is checked before
``--output`` is created or anything runs. Exit codes: 0 done; 1 no
profiling data was produced; 2 bad arguments or ini; 4 the app failed (its
data is still fetched and analysed).

Example::

    npuprof collect -m ./app/main.py --all
    npuprof collect -m ./app/main --config board.ini --all -- --batch 8
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Optional

from npuprof.errors import ProfilerConfigError, ProfilerDataError

# acl.json, the PROF_ reader and the SVP layout are imported by the functions that collect: every npuprof
# command registers ``npuprof collect`` (add_collect_command), only ``npuprof collect`` runs

EXIT_OK, EXIT_NO_DATA, EXIT_USAGE, EXIT_APP_FAILED = 0, 1, 2, 4


def add_collect_command(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "collect", help="run an app with CANN profiling on (locally or on a board over SSH) and fetch the data",
        description=__doc__.split("\n\n")[1] if __doc__ else None)
    p.add_argument("-m", "--main", required=True, help="the app: an executable or a .py file")
    p.add_argument("--config", help="ssh ini ([ssh_config] ip, username, pwd, port[, key_file]); remote when given")
    p.add_argument("--all", action="store_true", help="import and analyse the collected data")
    p.add_argument("--output", default="./npuprof_collect", help="local directory for the collected data")
    p.add_argument("--project", help="directory to run in / upload (default: the app's directory)")
    p.add_argument("--acl-json", default="acl.json", help="the acl.json the app passes to acl.init, relative "
                                                          "to the project directory")
    p.add_argument("--via", choices=("acl.json", "env"), default="acl.json",
                   help="switch profiling on through acl.json (default) or PROFILING_MODE/PROFILING_OPTIONS")
    p.add_argument("--flavour", choices=("cann", "svp"), default=None,
                   help="acl.json keys: CANN or SVP SS928/SS927 (aacpu, aac_metrics, acl_api, interval); default: "
                        "SVP when --product is SS928/SS927 or the app uses svp_acl, else CANN")
    p.add_argument("--product", default=None, help="the board's SoC, e.g. SS928 or SS927 (SVP keys), or an "
                                                   "Atlas product (CANN keys)")
    p.add_argument("--profiler-level", default="Level1", help="LevelNone, Level0, Level1 (default), Level2")
    p.add_argument("--aic-metrics", default=None, help="AI Core metric group (e.g. PipeUtilization)")
    p.add_argument("--mstx", action="store_true", help="collect msproftx markers")
    p.add_argument("--switch", choices=("on", "off"), default="on", help="msprof.pyc: profiler switch")
    p.add_argument("--acl_api", choices=("on", "off"), default=None, help="msprof.pyc: AscendCL API data")
    p.add_argument("--aacpu", choices=("on", "off"), default=None, help="msprof.pyc: AI CPU data")
    p.add_argument("--aac_metrics", default=None, help="msprof.pyc: AI Core metrics (SVP: ArithmeticUtilization)")
    p.add_argument("--interval", type=int, default=0, help="msprof.pyc (SVP): sample every N inference rounds")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="extra environment for the app")
    p.add_argument("--python", default=None, help="Python interpreter for a .py app (local default: this one; "
                                                  "remote default: python3)")
    p.add_argument("--remote-dir", default=None, help="work directory on the board (default: a fresh /tmp dir)")
    p.add_argument("--keep-remote", action="store_true", help="leave the work directory on the board")
    p.add_argument("--known-hosts", default=None, help="known_hosts file to check the board's host key against")
    p.add_argument("--insecure-no-host-key-check", action="store_true",
                   help="accept an unknown host key (DANGEROUS: allows a man-in-the-middle)")
    p.add_argument("--timeout", type=float, default=None, help="seconds before the app is stopped (local runs)")
    p.add_argument("--msprof", metavar="PATH", default=None,
                   help="--all on an SS928/SS927 JOB: the vendor's msprof.pyc that parses it (default: "
                        "$NPUPROF_MSPROF_PYC, msprof.pyc on PATH, the toolkit)")
    p.add_argument("app_args", nargs=argparse.REMAINDER, help="arguments for the app (after --)")
    p.set_defaults(func=cmd_collect)
    return p


# -- the acl.json dialect ---------------------------------------------------------------------
SVP_PRODUCTS = ("SS928", "SS927")
# msprof.pyc collect's defaults (seed 002): --acl_api on, --aacpu on, --aac_metrics ArithmeticUtilization
SVP_DEFAULTS = {"acl_api": "on", "aacpu": "on", "aac_metrics": "ArithmeticUtilization"}
SVP_LIBRARY_MARK = b"svp_acl"
_SCAN_LIMIT = 256 << 20


def choose_flavour(flavour: Optional[str], product: Optional[str], main: Path) -> str:
    """The acl.json dialect: ``--flavour`` when given, else SVP for an SS928/SS927 ``--product`` or an app
    that uses ``svp_acl`` (its name in the executable or script), else CANN.

    Example::

        choose_flavour(None, "SS928", Path("main"))      # 'svp'
    """
    svp_product = product is not None and product.strip().upper() in SVP_PRODUCTS
    if flavour is not None:
        if svp_product and flavour != "svp":
            raise ProfilerConfigError("--flavour", flavour, f"svp (or nothing) with --product {product}",
                                      hint="SS928/SS927 boards read the SVP acl.json keys")
        return flavour
    if svp_product:
        return "svp"
    return "svp" if _mentions(main, SVP_LIBRARY_MARK) else "cann"


def _mentions(path: Path, mark: bytes) -> bool:
    """Whether ``mark`` occurs in the file (read in blocks, at most the first 256 MiB)."""
    tail = b""
    read = 0
    with open(path, "rb") as fh:
        while read < _SCAN_LIMIT:
            block = fh.read(1 << 20)
            if not block:
                return False
            if mark in tail + block:
                return True
            tail, read = block[-len(mark):], read + len(block)
    return False


# -- the profiler section -------------------------------------------------------------------
def build_section(args: Any, output: str) -> dict:
    """acl.json profiler section for the collect flags (validated)."""
    from npuprof.config import build_config

    from .acl_json import section_from_config, validate_profiler_section

    metrics = args.aic_metrics
    cfg = build_config(output_path=os.path.join(output, ".cfg"), profiler_level=args.profiler_level,
                       aic_metrics=metrics, mstx=bool(args.mstx) or args.profiler_level == "LevelNone")
    if args.flavour == "svp":
        section = section_from_config(cfg, output, flavour="svp", interval=args.interval)
        for key, default in SVP_DEFAULTS.items():    # the manual's collect defaults, unless a flag says
            value = getattr(args, key)
            section[key] = default if value is None else value
    else:
        if args.interval:
            raise ProfilerConfigError("--interval", args.interval, "0 with --flavour cann",
                                      hint="interval is an SVP acl.json key; use --flavour svp")
        section = section_from_config(cfg, output)
        if args.acl_api is not None:
            section["ascendcl"] = args.acl_api
        if args.aacpu is not None:
            section["aicpu"] = args.aacpu
        if args.aac_metrics is not None:
            section["aic_metrics"] = args.aac_metrics
    section["switch"] = args.switch
    return validate_profiler_section(section, args.flavour)


def merged_acl_json(existing: Optional[str], section: dict, where: str) -> str:
    """The acl.json text with ``section`` as its profiler object, other sections kept."""
    data: dict = {}
    if existing and existing.strip():
        try:
            data = json.loads(existing)
        except ValueError as e:
            raise ProfilerDataError(where, f"is not valid JSON ({e}); fix it or remove it") from None
        if not isinstance(data, dict):
            raise ProfilerDataError(where, "does not hold a JSON object")
    data["profiler"] = section
    return json.dumps(data, indent=4) + "\n"


def profiling_env(section: dict) -> dict:
    """CANN's environment switch: PROFILING_MODE=true and PROFILING_OPTIONS.

    PROFILING_OPTIONS follows GE's profiling_options schema, not acl.json's:
    acl.json-only keys (switch, ascendcl, SVP's acl_api/aacpu/interval) and
    keys GE deprecated (hccl: communication data follows task_time) are
    dropped, and the result is checked by the profiling_options validator.
    """
    from npuprof.integrations.cann.profiling_options import KEYS, parse_profiling_options

    options = {k: v for k, v in section.items() if k in KEYS and k != "hccl"}
    text = json.dumps(options, separators=(",", ":"))
    parse_profiling_options(text)
    return {"PROFILING_MODE": "true", "PROFILING_OPTIONS": text}


def _extra_env(pairs: list) -> dict:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or not key.replace("_", "").isalnum():
            raise ProfilerConfigError("--env", pair, "KEY=VALUE with a variable name as KEY")
        out[key] = value
    return out


def _app_args(args: Any) -> list:
    rest = list(args.app_args or [])
    return rest[1:] if rest[:1] == ["--"] else rest


# -- local ----------------------------------------------------------------------------------
def run_local(args: Any, main: Path, project: Path, data_dir: Path, out: Any) -> int:
    import subprocess

    section = build_section(args, str(data_dir))
    env = dict(os.environ)
    env.update(_extra_env(args.env))
    acl_json = project / args.acl_json
    original: Optional[str] = None
    existed = acl_json.exists()
    if args.via == "env":
        env.update(profiling_env(section))
    else:
        original = acl_json.read_text(encoding="utf-8") if existed else None
        acl_json.write_text(merged_acl_json(original, section, str(acl_json)), encoding="utf-8")
    env["NPUPROF_ACL_JSON"] = str(acl_json)
    if main.suffix == ".py":
        cmd = [args.python or sys.executable, str(main)]
    else:
        cmd = [str(main)]
    cmd += _app_args(args)
    print(f"npuprof collect: running {' '.join(shlex.quote(c) for c in cmd)} in {project}", file=out)
    try:
        proc = subprocess.run(cmd, cwd=project, env=env, timeout=args.timeout, check=False)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        print(f"npuprof collect: the app ran longer than {args.timeout} s and was stopped", file=out)
        code = -1
    except OSError as e:
        raise ProfilerConfigError("--main", str(main), "an executable file or a .py script",
                                  hint=e.strerror or str(e)) from None
    finally:
        if args.via != "env":
            if existed:
                acl_json.write_text(original or "", encoding="utf-8")
            else:
                acl_json.unlink(missing_ok=True)
    return code


# -- remote ---------------------------------------------------------------------------------
def run_remote(args: Any, main: Path, project: Path, data_dir: Path, out: Any,
               cfg: Optional[Any] = None) -> int:
    import secrets     # hashlib, hmac: for a remote collection only

    from .ssh import RemoteBoard, read_ssh_ini

    cfg = cfg if cfg is not None else read_ssh_ini(args.config)
    base = args.remote_dir or f"/tmp/npuprof_collect_{secrets.token_hex(6)}"
    r_app = f"{base}/app"
    r_out = f"{base}/profiling"
    section = build_section(args, r_out)
    env = _extra_env(args.env)
    print(f"npuprof collect: connecting to {cfg.target()}", file=out)
    with RemoteBoard(cfg, check_host_key=not args.insecure_no_host_key_check, known_hosts=args.known_hosts,
                     out=out) as board:
        try:
            n = board.upload_dir(project, r_app)
            print(f"npuprof collect: uploaded {n} files to {r_app}", file=out)
            board.makedirs(r_out)
            r_json = f"{r_app}/{Path(args.acl_json).as_posix()}"
            if args.via == "env":
                env.update(profiling_env(section))
            else:
                board.write_text(r_json, merged_acl_json(board.read_text(r_json), section, r_json))
            env["NPUPROF_ACL_JSON"] = r_json
            rel_main = main.relative_to(project).as_posix()
            if main.suffix == ".py":
                run = [args.python or "python3", rel_main]
            else:
                run = [f"./{rel_main}"]
            run += _app_args(args)
            prefix = ["env"] + [f"{k}={v}" for k, v in env.items()]
            command = f"cd {shlex.quote(r_app)} && " + " ".join(shlex.quote(c) for c in prefix + run)
            print(f"npuprof collect: running {' '.join(shlex.quote(c) for c in run)} on {cfg.host}", file=out)
            code = board.run(command)
            n = board.download_dir(r_out, data_dir)
            print(f"npuprof collect: fetched {n} files into {data_dir}", file=out)
        finally:
            if not args.keep_remote:
                board.remove_tree(base)
    return code


# -- the command ----------------------------------------------------------------------------
def check_collect_args(args: Any, project: Path, data_dir: Path) -> Optional[Any]:
    """Check every flag that can be wrong before ``--output`` is created or
    anything runs; returns the parsed ssh ini (None for a local run).

    Raises ProfilerConfigError (or ProfilerDataError for an unreadable
    acl.json) naming the flag.
    """
    timeout = args.timeout
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise ProfilerConfigError("--timeout", timeout, "a positive number of seconds")
    if isinstance(args.interval, bool) or not isinstance(args.interval, int) or args.interval < 0:
        raise ProfilerConfigError("--interval", args.interval, "a non-negative integer")
    _extra_env(args.env)
    section = build_section(args, str(data_dir))   # --profiler-level, --aic-metrics, msprof.pyc switches
    if args.via == "env":
        profiling_env(section)
    cfg = None
    if args.config:
        from .ssh import read_ssh_ini

        cfg = read_ssh_ini(args.config)
    else:
        acl_json = project / args.acl_json
        if args.via != "env" and acl_json.exists():
            try:
                existing = acl_json.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ProfilerDataError(acl_json, f"cannot be read ({e})") from None
            merged_acl_json(existing, section, str(acl_json))
    return cfg


def collected_dirs(data_dir: Path) -> list:
    """PROF_/JOB directories in the collected data (one or two levels down)."""
    from .cann_import import is_prof_dir

    found = []
    if not data_dir.is_dir():
        return found
    for child in sorted(data_dir.iterdir()):
        if is_prof_dir(child):
            found.append(child)
        elif child.is_dir():
            found.extend(g for g in sorted(child.iterdir()) if is_prof_dir(g))
    return found


def cmd_collect(args: Any, out: Any = None) -> int:
    from .svp_layout import SvpLayout, write_manifest
    from .svp_parser import is_svp_job

    out = out or sys.stdout
    main = Path(args.main).expanduser().absolute()
    if not main.is_file():
        raise ProfilerConfigError("--main", args.main, "an existing executable or .py file")
    project = Path(args.project).expanduser().absolute() if args.project else main.parent
    if not project.is_dir() or project not in main.parents:
        raise ProfilerConfigError("--project", str(project), "a directory that contains the app (--main)")
    if os.path.isabs(args.acl_json) or ".." in Path(args.acl_json).parts:
        raise ProfilerConfigError("--acl-json", args.acl_json, "a path inside the project directory")
    args.flavour = choose_flavour(args.flavour, args.product, main)
    from npuprof.validate import check_output_path

    output = check_output_path("--output", args.output)
    run_dir = output / f"collect_{time.strftime('%Y%m%d%H%M%S')}_{os.getpid()}"
    data_dir = run_dir / "data"
    ssh_cfg = check_collect_args(args, project, data_dir)
    os.makedirs(data_dir, mode=0o750, exist_ok=True)
    if args.config:
        code = run_remote(args, main, project, data_dir, out, ssh_cfg)
    else:
        code = run_local(args, main, project, data_dir, out)
    dirs = collected_dirs(data_dir)
    if code != 0:
        print(f"npuprof collect: the app exited with {code}", file=out)
    if not dirs:
        print(f"npuprof collect: no PROF_/JOB data was produced in {data_dir}", file=out)
        return EXIT_APP_FAILED if code != 0 else EXIT_NO_DATA
    print(f"npuprof collect: {len(dirs)} profiling director{'y' if len(dirs) == 1 else 'ies'} in {data_dir}",
          file=out)
    for d in dirs:
        print(f"  {d}", file=out)
    write_manifest(run_dir, dirs)   # these are npuprof's collections (a JOB then takes its exports in place)
    if args.all:
        from npuprof.export.writer import analyse_and_export

        for d in dirs:   # CANN's PROF_ directories are read-only: outputs beside them, under the data dir
            run = analyse_and_export(d, output=data_dir / "npuprof_output")[0]
            print(f"npuprof collect: analysed {d.name}: {len(run.result.events)} events -> {run.output_dir}",
                  file=out)
            if is_svp_job(d):   # msprof.pyc collect --all: the JOB gets its timeline/ and summary/
                layout = SvpLayout(collected_by_npuprof=True)
                written = layout.write(run.result, "timeline", "csv", d) + layout.write(run.result, "summary", "csv", d)
                print(f"npuprof collect: {len(written)} timeline and summary files in {d}", file=out)
            for w in run.result.warnings:
                print(f"  warning: {w}", file=out)
    return EXIT_APP_FAILED if code != 0 else EXIT_OK
