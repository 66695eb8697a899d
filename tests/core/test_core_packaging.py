"""Every package directory is declared in pyproject.toml (else a fresh install misses it)."""
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is 3.11+")
def test_every_package_dir_is_declared():
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(cfg["packages"])
    mapping = cfg["package-dir"]
    found = set()
    for init in ROOT.glob("core/**/__init__.py"):
        rel = init.parent.relative_to(ROOT / "core").parts
        found.add(".".join(("npuprof",) + rel))
    for name, path in mapping.items():
        if name != "npuprof":
            for init in (ROOT / path).glob("**/__init__.py"):
                found.add(".".join((name,) + init.parent.relative_to(ROOT / path).parts))
    assert found <= declared, f"undeclared packages: {sorted(found - declared)}"
