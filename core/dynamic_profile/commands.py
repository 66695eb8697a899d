"""``npuprof dynamic start|status|hook``: drive the watchers of a running job.

``start`` writes the config atomically (validated first: a bad value exits 2
and writes nothing); ``status`` prints what each watching process reported in
its status file; ``hook install|remove`` puts in or takes out the start-up
line that makes ``NPUPROF_CONFIG_PATH`` work without code changes.

Example::

    npuprof dynamic start ./dyn_cfg --start-step 200 --warmup 1 --active 3 --ranks 0,1 --prof-dir ./prof
    npuprof dynamic status ./dyn_cfg
    npuprof dynamic hook install
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from ..cli_args import add_folder_argument
from ..errors import ProfilerConfigError
from ..fileio import atomic_write
from ..validate import parse_rank_list

# the request (the config's checks) and the status files are imported by the commands that use them: every
# npuprof command registers ``npuprof dynamic``


WATCHED_FOLDER_HELP = "the folder the job watches for profiler_config.json (give it as DIR or as -dir DIR)"


def add_commands(sub: Any) -> None:
    """Register ``dynamic`` on the ``npuprof`` sub-command parser."""
    d = sub.add_parser("dynamic", help="dynamic profiling of a running job (watched JSON config)")
    dsub = d.add_subparsers(dest="dynamic_command", required=True, parser_class=type(d))

    s = dsub.add_parser("start", help="write DIR/profiler_config.json atomically: running watchers capture")
    add_folder_argument(s, "dir", help=WATCHED_FOLDER_HELP)
    s.add_argument("--start-step", type=int, default=None,
                   help="first step of the capture (npuprof/torch_npu: absolute, 0-based; MindSpore: 1-based)")
    s.add_argument("--active", type=int, default=None, help="steps recorded")
    s.add_argument("--warmup", type=int, default=None, help="warm-up steps before them (npuprof dialect)")
    s.add_argument("--stop-step", type=int, default=None, help="MindSpore dialect: last step, inclusive")
    s.add_argument("--ranks", default=None, help="ranks that capture, e.g. 0,2,4-7 (default all)")
    s.add_argument("--prof-dir", default=None, help="where captures go")
    s.add_argument("--analyse", action="store_true", help="analyse each capture when it ends")
    s.add_argument("--async-mode", action="store_true", help="analyse in a child process")
    s.add_argument("--set", action="append", default=[], metavar="FIELD=JSON",
                   help="any other field, e.g. --set profiler_level='\"Level1\"' --set host_sys='[\"cpu\"]'")
    s.add_argument("--dialect", choices=["npuprof", "mindspore"], default=None,
                   help="the config's dialect (default: the existing file's, else npuprof)")
    s.set_defaults(func=cmd_start)

    st = dsub.add_parser("status", help="what each watching process has in effect and its captures")
    add_folder_argument(st, "dir", help=WATCHED_FOLDER_HELP)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)

    h = dsub.add_parser("hook", help="install or remove the start-up hook behind NPUPROF_CONFIG_PATH")
    h.add_argument("action", choices=["install", "remove"])
    h.set_defaults(func=cmd_hook)


def _existing(path: Path) -> Any:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def cmd_start(args: argparse.Namespace) -> int:
    from .request import CONFIG_NAME, MINDSPORE_TEMPLATE, TEMPLATE, parse_config_text

    directory = Path(args.dir)
    path = directory / CONFIG_NAME
    current = _existing(path)
    dialect = args.dialect or ("mindspore" if current is not None and "stop_step" in current else "npuprof")
    base = TEMPLATE if dialect == "npuprof" else MINDSPORE_TEMPLATE
    config: dict[str, Any] = json.loads(json.dumps(current if current is not None else base))
    for item in args.set:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ProfilerConfigError("--set", item, "FIELD=JSON, e.g. active=2 or prof_dir='\"./p\"'")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw              # a bare string: --set prof_dir=./prof
        exp = config.get("experimental_config")
        if dialect == "npuprof" and isinstance(exp, dict) and key in TEMPLATE["experimental_config"]:
            exp[key] = value         # torch_npu keeps these under experimental_config
        else:
            config[key] = value
    if dialect == "mindspore":
        _set_mindspore_steps(config, args)
    else:
        _set_npuprof_fields(config, args)
    if args.prof_dir is not None:
        config["prof_path" if dialect == "mindspore" else "prof_dir"] = args.prof_dir
    if args.analyse or args.async_mode:
        config["analyse"] = True
        if dialect == "mindspore":
            config["analyse_mode"] = 1 if args.async_mode else 0
        else:
            config["async_mode"] = bool(args.async_mode)
    text = json.dumps(config, indent=4) + "\n"
    request = parse_config_text(text, dialect)     # refuse before writing
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)
    steps = "the next step" if request.start_step is None else f"step {request.start_step}"
    print(f"wrote {path}: capture of {request.active} step(s) from {steps} "
          f"(+{request.warmup} warm-up), ranks {sorted(request.ranks) if request.ranks else 'all'}, "
          f"into {where_the_job_writes(config, dialect, request)}")
    return 0


def where_the_job_writes(config: dict, dialect: str, request: Any) -> str:
    """Where the watching job will write the capture: the folder the config names (a relative one is
    the job's, from its working directory, not this command's), or the job's own choice.

    Example::

        >>> from npuprof.dynamic_profile.request import MINDSPORE_TEMPLATE, parse_config_text
        >>> cfg = dict(MINDSPORE_TEMPLATE, start_step=300, stop_step=304)
        >>> where_the_job_writes(cfg, "mindspore", parse_config_text(json.dumps(cfg), "mindspore"))
        "the job's output_path (DynamicProfilerMonitor(output_path=...)), in rank<r>_start300_stop304/"
    """
    key = "prof_path" if dialect == "mindspore" else "prof_dir"
    given = config.get(key)
    if dialect == "mindspore" and (not given or given == "./"):
        place = "the job's output_path (DynamicProfilerMonitor(output_path=...))"
    elif Path(os.path.expanduser(str(given))).is_absolute():
        place = str(request.prof_dir)
    else:
        place = f"{given} under the job's working directory"
    if request.run_subdir is not None and request.start_step is not None:
        last = request.start_step + request.warmup + request.active - 1
        place += f", in {request.run_subdir.format(rank='<r>', start=request.start_step, stop=last)}/"
    return place


def _set_npuprof_fields(config: dict, args: argparse.Namespace) -> None:
    if args.stop_step is not None:
        raise ProfilerConfigError("--stop-step", args.stop_step, "no value with the npuprof dialect (use --active)")
    for key in ("start_step", "active", "warmup"):
        value = getattr(args, key)
        if value is not None:
            config[key] = value
    if args.ranks is not None:
        ranks = parse_rank_list("--ranks", args.ranks)
        config["is_rank"] = ranks is not None
        config["rank_list"] = ranks or []
    # the write time makes every `start` a change the watchers see, even with the same fields
    metadata = dict(config.get("metadata") or {})
    metadata["npuprof_dynamic_start"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    config["metadata"] = metadata


def _set_mindspore_steps(config: dict, args: argparse.Namespace) -> None:
    if args.ranks is not None or args.warmup is not None:
        raise ProfilerConfigError("--ranks/--warmup", args.ranks or args.warmup,
                                  "no value with MindSpore's dialect (it has no such fields)")
    if args.start_step is not None:
        config["start_step"] = args.start_step
    if args.stop_step is not None:
        config["stop_step"] = args.stop_step
    elif args.active is not None:
        config["stop_step"] = config["start_step"] + args.active - 1


def cmd_status(args: argparse.Namespace) -> int:
    from .request import CONFIG_NAME
    from .status import read_statuses

    directory = Path(args.dir)
    statuses = read_statuses(directory)
    if args.json:
        print(json.dumps(statuses, indent=2))
        return 0
    path = directory / CONFIG_NAME
    print(f"config: {path}" + ("" if path.exists() else " (absent)"))
    if not statuses:
        print("no process has reported (status files are written by watching processes)")
        return 0
    for st in statuses:
        age = (time.time_ns() - int(st.get("updated_ns", 0))) / 1e9
        print(f"rank {st.get('rank')} pid {st.get('pid')} on {st.get('host')}: {st.get('state')}, "
              f"step {st.get('step')}, config {st.get('config_digest') or '-'} (updated {age:.0f} s ago)")
        if st.get("error"):
            print(f"  problem: {st['error']}")
        for cap in st.get("captures", []):
            where = ", ".join(cap.get("run_dirs") or []) or cap.get("output_dir")
            print(f"  capture {cap.get('digest')}: steps {cap.get('recorded_steps')} {cap.get('state')} -> {where}"
                  + (f" ({cap['error']})" if cap.get("error") else ""))
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    from .autostart import ENV_VAR, install_hook, remove_hook, site_packages

    if args.action == "install":
        print(f"installed {install_hook()}: {ENV_VAR}=<dir> now turns dynamic profiling on in this interpreter")
    else:
        removed = remove_hook()
        print(f"removed {removed}" if removed else f"no hook in {site_packages()}")
    return 0
