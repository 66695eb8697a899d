"""The package's layers point one way, and no module imports itself in a circle.

Every ``import`` / ``from ... import`` of an npuprof module is read from the source (function-level
imports included; those under ``if TYPE_CHECKING:`` are annotations, not dependencies). Each module
has a layer (:data:`LAYERS`, the table docs/architecture.md draws); a module may import its own layer
and the layers below, never one above. ``core/`` never imports an integration, and no module of
``core/`` imports a framework at its top level.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# module (or package prefix) -> layer; the longest matching prefix decides
LAYERS = {
    "npuprof.errors": 0, "npuprof.enums": 0, "npuprof.validate": 0, "npuprof.clock": 0, "npuprof.fileio": 0,
    "npuprof.progress": 0, "npuprof.types": 0, "npuprof.sigsafe": 0, "npuprof.compiled": 0,
    "npuprof.pages": 0, "npuprof.libc": 0, "npuprof.private_api": 0,
    # data model
    "npuprof.events": 1, "npuprof.rawstore": 1, "npuprof.runinfo": 1, "npuprof.config": 1,
    "npuprof.schedule": 1, "npuprof.lifecycle": 1, "npuprof.quality": 1, "npuprof.traceflows": 1, "npuprof.hookspecs": 1, "npuprof.handlers": 1,
    # collection
    "npuprof.recorder": 2, "npuprof._hotpath": 2, "npuprof.session": 2, "npuprof.hostsys": 2,
    "npuprof.plugins.manager": 2, "npuprof.dirlock": 2, "npuprof.exitguard": 2, "npuprof.forkguard": 2,
    # other tools' files
    "npuprof.readers": 3,
    # analysis (reads, computes)
    "npuprof.analysis": 4,
    # the column table (what an analyzer makes, and what readers of another tool's summary CSVs return)
    "npuprof.analysis.table": 1,
    # export (writes; its row renderer compiled: npuprof.export._rowrender)
    "npuprof.export": 5,
    # the Profiler ties collection to analysis and export
    "npuprof.profiler": 6,
    # on top: the command line, cluster, report, built-in plugins, integrations, the package's front
    "npuprof.cli": 7, "npuprof.doctor": 7, "npuprof.__main__": 7, "npuprof.demo": 7, "npuprof.cluster": 7, "npuprof.report": 7,
    "npuprof.plugins": 7, "npuprof.integrations": 7, "npuprof": 7,
    # dynamic profiling starts Profilers when a watched file asks: on top as well
    "npuprof.dynamic_profile": 7,
}
FRAMEWORKS = ("mindspore", "tensorflow", "torch", "acl")


def _modules() -> dict[str, Path]:
    mods = {}
    for base, pkg in ((ROOT / "core", "npuprof"), (ROOT / "integrations", "npuprof.integrations")):
        for f in base.rglob("*.py"):
            parts = list(f.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([pkg, *parts])] = f
    return mods


MODULES = _modules()
# compiled modules (their C sources sit beside the Python ones): imported, never parsed here
COMPILED = {".".join(("npuprof", *c.relative_to(ROOT / "core").with_suffix("").parts)) for c in (ROOT / "core").rglob("*.c")}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    return skip


def imports_of(module: str) -> list[tuple[str, int, bool]]:
    """(imported npuprof module, line, at top level) of ``module``'s source."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    top = {id(n) for n in tree.body}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:      # "from . import validate" imports the module npuprof.validate
                name = f"{target}.{alias.name}"
                out.append((name if name in MODULES or name in COMPILED else target, node.lineno, id(node) in top))
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno, id(node) in top) for a in node.names]
    return [(t, line, at_top) for t, line, at_top in out if t == "npuprof" or t.startswith("npuprof.")
            or t.split(".")[0] in FRAMEWORKS]


def layer_of(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def test_every_module_has_a_layer():
    assert all(layer_of(m) is not None for m in MODULES)


def test_no_module_imports_a_higher_layer():
    wrong = []
    for m in MODULES:
        for target, line, _ in imports_of(m):
            if target.split(".")[0] in FRAMEWORKS or target not in MODULES or target == m:
                continue
            if layer_of(target) > layer_of(m):
                wrong.append(f"{MODULES[m].relative_to(ROOT)}:{line}: {m} (layer {layer_of(m)}) imports "
                             f"{target} (layer {layer_of(target)})")
    assert not wrong, "\n".join(wrong)


def test_core_never_imports_an_integration():
    wrong = [f"{m}: {t}" for m in MODULES if not m.startswith("npuprof.integrations")
             for t, _, _ in imports_of(m) if t.startswith("npuprof.integrations")
             and m not in ("npuprof.cli", "npuprof.demo", "npuprof.plugins.manager")]
    assert not wrong, wrong


def test_integrations_never_import_each_other():
    """What two integrations share is a level below them (the CANN profiling options: integrations.cann)."""
    def integration(m: str) -> str:
        return ".".join(m.split(".")[:3]) if m.startswith("npuprof.integrations.") else ""

    wrong = [f"{m}: {t}" for m in MODULES if integration(m) for t, _, _ in imports_of(m)
             if integration(t) and integration(t) not in (integration(m), "npuprof.integrations.cann")]
    assert not wrong, wrong


def test_no_framework_at_the_top_of_core():
    wrong = [f"{m}:{line}: {t}" for m in MODULES if not m.startswith("npuprof.integrations")
             for t, line, at_top in imports_of(m) if at_top and t.split(".")[0] in FRAMEWORKS]
    assert not wrong, wrong


def test_no_import_cycle_between_modules():
    graph = {m: {t for t, _, _ in imports_of(m) if t in MODULES and t != m and not _is_parent(t, m)}
             for m in MODULES}
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t, stack + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "\n".join(cycles)


def _is_parent(target: str, module: str) -> bool:
    """A package's ``__init__`` re-exporting its own modules is not a cycle of the modules."""
    return module.startswith(target + ".")


@pytest.mark.parametrize("source, expected", [("from ..events import EventTable", "npuprof.events"),
                                              ("from . import validate as v", "npuprof.validate")])
def test_the_import_reader_resolves_relative_imports(tmp_path, monkeypatch, source, expected):
    probe = ROOT / "core" / "analysis" / "pipeline.py"
    monkeypatch.setitem(MODULES, "npuprof.analysis.probe", tmp_path / "probe.py")
    (tmp_path / "probe.py").write_text(source.replace("from . import", "from .. import") + "\n")
    assert probe.exists()
    assert imports_of("npuprof.analysis.probe")[0][0] == expected
