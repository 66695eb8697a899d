"""`npuprof collect` picks the SS928/SS927 (SVP) acl.json dialect by itself, with msprof.pyc's defaults (seed 002)."""
from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

import pytest

from npuprof.cli import main as cli_main
from npuprof.errors import ProfilerConfigError
from npuprof.integrations.pyacl.collect import add_collect_command, build_section, choose_flavour

# the app shows the acl.json it was started with (collect restores the original afterwards)
APP = textwrap.dedent("""
    import json
    print("ACL_JSON", json.dumps(json.load(open("acl.json"))["profiler"], sort_keys=True))
    {extra}
""")


def _app(tmp_path: Path, extra: str = "") -> Path:
    app = tmp_path / "app" / "main.py"
    app.parent.mkdir(parents=True)
    app.write_text(APP.format(extra=extra))
    return app


def _section(argv: list, main: Path) -> dict:
    parser = argparse.ArgumentParser()
    add_collect_command(parser.add_subparsers())
    args = parser.parse_args(["collect", "-m", str(main), *argv])
    args.flavour = choose_flavour(args.flavour, args.product, main)
    return build_section(args, "/o")


def test_the_product_or_the_app_chooses_the_dialect(tmp_path):
    plain = _app(tmp_path / "a")
    svp_app = _app(tmp_path / "b", "# calls svp_acl_init() through its bindings")
    assert choose_flavour(None, None, plain) == "cann"
    assert choose_flavour(None, "SS928", plain) == "svp" and choose_flavour(None, "ss927", plain) == "svp"
    assert choose_flavour(None, None, svp_app) == "svp"
    assert choose_flavour("cann", None, svp_app) == "cann"          # an explicit --flavour wins
    binary = tmp_path / "main"
    binary.write_bytes(b"\x7fELF" + b"\0" * (3 << 20) + b"svp_acl_mdl_execute\0")   # a symbol past the first block
    assert choose_flavour(None, None, binary) == "svp"
    with pytest.raises(ProfilerConfigError) as e:
        choose_flavour("cann", "SS928", plain)
    assert e.value.param == "--flavour"


def test_svp_section_has_the_manuals_collect_defaults(tmp_path):
    main = _app(tmp_path)
    assert _section(["--product", "SS928"], main) == {
        "switch": "on", "output": "/o", "aacpu": "on", "acl_api": "on", "aac_metrics": "ArithmeticUtilization",
        "interval": "0"}
    section = _section(["--product", "SS928", "--aacpu", "off", "--acl_api", "off", "--interval", "3"], main)
    assert (section["aacpu"], section["acl_api"], section["interval"]) == ("off", "off", "3")
    assert "aacpu" not in _section([], main)                       # CANN keys for a CANN app


def test_collect_writes_svp_keys_for_an_svp_app(tmp_path, capfd):
    main = _app(tmp_path, "# svp_acl app")
    (main.parent / "acl.json").write_text(json.dumps({"dump": {}}))
    code = cli_main(["collect", "-m", str(main), "--output", str(tmp_path / "out")])
    assert code == 1                                                # no JOB data without a board
    line = next(x for x in capfd.readouterr().out.splitlines() if x.startswith("ACL_JSON "))
    section = json.loads(line.split(" ", 1)[1])
    assert section["aacpu"] == "on" and section["aac_metrics"] == "ArithmeticUtilization"
    assert json.loads((main.parent / "acl.json").read_text()) == {"dump": {}}   # restored
