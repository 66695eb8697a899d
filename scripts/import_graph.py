"""Print the package's structure as drawn from its imports, as text.

Every ``import`` / ``from ... import`` of an npuprof module in ``core/`` and ``integrations/`` is read
with :mod:`ast` (function-level imports included, those under ``if TYPE_CHECKING:`` left out, as
tests/core/test_core_layers.py reads them). Each module is grouped by its subpackage (``readers``,
``analysis``, ...; the modules directly in ``core/`` are ``<top>``), and each group lists the groups it
imports, with how many import statements point there::

    python scripts/import_graph.py                   # subpackage -> subpackages
    python scripts/import_graph.py --inside readers  # module -> modules, inside one subpackage
"""
from __future__ import annotations

import argparse
import ast
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules() -> dict[str, Path]:
    """Module name (``npuprof.readers.kineto``) -> source file, for core/ and integrations/."""
    found = {}
    for base, pkg in ((ROOT / "core", "npuprof"), (ROOT / "integrations", "npuprof.integrations")):
        for f in sorted(base.rglob("*.py")):
            if not f.resolve().is_relative_to(base.resolve()):     # a checkout's links to integrations/
                continue
            parts = list(f.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([pkg, *parts])] = f
    return found


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imports(name: str, path: Path, is_package: bool) -> list[str]:
    """The npuprof modules ``name`` imports (each statement's target, relative imports resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking(node):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    package = name if is_package else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.split(".")[0] == "npuprof"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "npuprof":
                continue
            if node.module is None or target in MODULES_CACHE:
                # ``from . import x`` / ``from pkg import mod``: the names may be modules
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES_CACHE]
                out += subs or [target]
            else:
                out.append(target)
    return out


MODULES_CACHE: dict[str, Path] = {}


def group(name: str, inside: str | None) -> str | None:
    parts = name.split(".")
    if inside is None:
        if len(parts) == 1:
            return "<top>"
        if parts[1] == "integrations" and len(parts) > 2:
            return "integrations"
        if len(parts) == 2 and (ROOT / "core" / f"{parts[1]}.py").exists():
            return "<top>"
        return parts[1]
    prefix = f"npuprof.{inside}"
    if name == prefix or name.startswith(prefix + "."):
        return name[len("npuprof."):]
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inside", metavar="SUBPACKAGE", help="draw the modules inside one subpackage")
    args = ap.parse_args()
    MODULES_CACHE.update(modules())
    edges: dict[str, Counter[str]] = defaultdict(Counter)
    sizes: Counter[str] = Counter()
    for name, path in MODULES_CACHE.items():
        src = group(name, args.inside)
        if src is None:
            continue
        sizes[src] += len(path.read_text().splitlines())
        edges.setdefault(src, Counter())
        for target in imports(name, path, path.name == "__init__.py"):
            # the longest known module the target names (``npuprof.readers.kineto.KinetoReader`` -> the module)
            while target not in MODULES_CACHE and "." in target:
                target = target.rpartition(".")[0]
            dst = group(target, args.inside)
            if dst is not None and dst != src:
                edges[src][dst] += 1
    width = max(len(g) for g in edges)
    for src in sorted(edges):
        targets = ", ".join(f"{d}({n})" for d, n in sorted(edges[src].items()))
        print(f"{src:<{width}} {sizes[src]:>6} lines -> {targets or '-'}")


if __name__ == "__main__":
    main()
