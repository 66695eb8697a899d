"""Built-in plugin: the built-in advice rules and the ``npuprof advise RUN|JOB`` command.

Exit codes: 0 advice given on complete data; 1 nothing readable; 2 usage (an unknown rule id, a
negative --min-ms, a bad -o); 3 a run's data is partial (its issues printed; findings on affected
inputs say so).

Example::

    npuprof advise ./run --min-ms 1
    npuprof advise ./job --json --rules breakdown,byte_alignment -o advice.html
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..hookspecs import hookimpl

EXIT_OK, EXIT_PARTIAL = 0, 3
OUTPUT_SUFFIXES = (".html", ".json")


@hookimpl
def npuprof_advice_rules() -> list:
    from ..analysis.advice.rules import BUILTIN_RULES

    return list(BUILTIN_RULES)


@hookimpl
def npuprof_export(result: Any, target: Any) -> Any:
    """``op_flops.csv`` beside kernel_details: each kernel's FLOPs from its shapes (runs with shapes only)."""
    if not target.text:
        return None
    from ..analysis.advice.rules.mfu import op_flops_table
    from ..export.csvfiles import write_csv

    table = op_flops_table(result)
    if table is None:
        return None
    return [write_csv(table, target.output_dir / "op_flops.csv")]


def _check_output(value: Any, source: str) -> Path:
    from ..errors import ProfilerConfigError
    from ..validate import check_output_path

    target = check_output_path("-o", value, file=True)
    if target.suffix.lower() not in OUTPUT_SUFFIXES:
        raise ProfilerConfigError("-o", value, "a file name ending in .html or .json")
    root = Path(source).resolve()
    if root == target.resolve() or root in target.resolve().parents:
        raise ProfilerConfigError("-o", value, f"a file outside {source} (the runs read are never written)")
    return target


def cmd_advise(args: argparse.Namespace) -> int:
    from rich.console import Console

    from . import advise_path, parse_rule_ids
    from ..analysis.advice.messages import check_lang
    from .page import print_advice, write_advice_page
    from ..fileio import atomic_write
    from ..validate import check_number

    target = _check_output(args.output, args.path) if args.output else None
    rules = parse_rule_ids(args.rules)
    check_lang(args.lang)
    min_ms = check_number("--min-ms", args.min_ms, 0.0)
    advices = advise_path(args.path, rules=rules, min_ms=min_ms, force=args.force, peak_tflops=args.peak_tflops,
                          peak_device=args.peak, ai_cores=args.ai_cores, device_memory_gb=args.device_memory_gb,
                          link_gbps=args.link_gbps, lang=args.lang)
    payload = {"runs": [a.to_json() for a in advices]}
    if target is not None:
        if target.suffix.lower() == ".html":
            write_advice_page(advices, target)
        else:
            atomic_write(target, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
        print(f"advise: {target}", file=sys.stderr)
    if args.json:
        print(json.dumps(payload, indent=1, ensure_ascii=False))
    else:
        print_advice(advices, Console())
    partial = False
    for a in advices:
        for issue in a.data_quality.get("issues", []):
            partial = True
            print(f"data quality: {a.run}: {issue['subject']}: {issue['problem']}", file=sys.stderr)
    return EXIT_PARTIAL if partial else EXIT_OK


@hookimpl
def npuprof_add_commands(subparsers: Any) -> None:
    a = subparsers.add_parser("advise", help="findings with their evidence and the time at stake per step, from "
                                             "rules (plugins add their own)")
    a.add_argument("path", help="a run, a trace file or a folder of runs (a job: each rank advised)")
    a.add_argument("--rules", default=None, metavar="ID,...", help="only these rules (default: all)")
    a.add_argument("--min-ms", type=float, default=0.0, metavar="X",
                   help="list findings with at least X ms at stake per step (default 0)")
    a.add_argument("--peak-tflops", type=float, default=None, metavar="X",
                   help="the device's peak TFLOP/s for the mfu rule")
    a.add_argument("--peak", default=None, metavar="DEVICE",
                   help="take the peak from the documented table (docs/advise.md#peak-table): ascend910a, a100, "
                        "h100-sxm, v100")
    a.add_argument("--ai-cores", default=None, metavar="CUBE[,VECTOR]",
                   help="the device's AI Core counts for the block_dim rule, e.g. 24,48")
    a.add_argument("--device-memory-gb", type=float, default=None, metavar="GB",
                   help="the device's memory for the memory rule (the peak's share of it)")
    a.add_argument("--link-gbps", default=None, metavar="TYPE=GBPS,...",
                   help="the links' bandwidth for the bandwidth rule, e.g. HCCS=18,RDMA=12.5 (HCCS defaults to 18)")
    a.add_argument("--lang", default="en", metavar="en|zh", help="the findings' language: en (default) or zh")
    a.add_argument("--json", action="store_true", help="print JSON instead of the text")
    a.add_argument("-o", "--output", default=None, metavar="FILE.html|FILE.json",
                   help="also write the page (.html) or the JSON (.json); outside PATH")
    a.add_argument("--force", action="store_true", help="read input files over the size limit")
    a.set_defaults(func=cmd_advise)
