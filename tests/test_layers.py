"""The package's import graph: no cycle, and no module imports a layer above its own.

Every import counts, wherever it is written: at module level, in a function body (a lazy
import is still a dependency) and under ``TYPE_CHECKING``. Importing ``a.b.c`` from
outside the package ``a.b`` also runs ``a.b``'s ``__init__``, so that is an edge too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "launcher_probe"

#: The layers, lowest first: a module may import its own layer and those below it.
#: A name stands for that module and everything below it; the longest name that matches
#: a module gives its layer. Every module must be covered by a name here.
LAYERS: tuple[tuple[str, ...], ...] = (
    # The wire contract and the values both halves share.
    (
        "launcher_probe.value",
        "launcher_probe.errors",
        "launcher_probe.extras",
        "launcher_probe.interpreter_name",
        "launcher_probe.fd_io",
        "launcher_probe.xdg_dirs",
        "launcher_probe.exec_signals",
        "launcher_probe.json_core",
        "launcher_probe.json_output",
        "launcher_probe.messages",
        "launcher_probe.sandbox_policy",
        "launcher_probe.json_input",
        "launcher_probe.state",
        "launcher_probe.contract",
        "launcher_probe.host.__init__",
    ),
    # The host side's stages, in the order of the data flow's dependencies.
    ("launcher_probe.host.paths",),
    ("launcher_probe.host.native", "launcher_probe.host.binary"),
    ("launcher_probe.host.discovery",),
    (
        "launcher_probe.host.versions",
        "launcher_probe.host.bubblewrap",
        "launcher_probe.host.probe_result",
    ),
    ("launcher_probe.host.decision",),
    ("launcher_probe.host.probe",),
    ("launcher_probe.host.cache",),
    # The joints: discovery -> cache/probe -> Decision -> ``_meta``.
    ("launcher_probe.host.attempt",),
    ("launcher_probe.host.resolver",),
    ("launcher_probe.host.meta_input", "launcher_probe.host.inject"),
    ("launcher_probe.host.mcp_session",),
    # The arguments more than one command takes (the CLI's and the proxy's options).
    ("launcher_probe.arguments",),
    # The server side, the helper, its client; then the consumers.
    ("launcher_probe.server",),
    ("launcher_probe.service",),
    ("launcher_probe.client",),
    # The fix of every reason, which the proxy prints too; then the proxy, whose
    # configured servers the rest of doctor explains.
    ("launcher_probe.doctor.__init__", "launcher_probe.doctor.fixes"),
    ("launcher_probe.proxy",),
    ("launcher_probe.doctor",),
    ("launcher_probe.commands",),
    ("launcher_probe.cli", "launcher_probe.__main__", "launcher_probe.examples"),
)
#: The root package (``__version__``) sits below everything.
ROOT_PACKAGE = "launcher_probe"


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    modules = {}
    for file in sorted(package.rglob("*.py")):
        parts = list(file.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = file
    return modules


def imports(name: str, file: Path, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """``(imported module, line)`` for every import of a package module in ``file``."""
    is_package = file.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(file.read_text(), str(file))):
        targets: list[str] = []
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.append(submodule if submodule in modules else base)
        for target in targets:
            if target != ROOT_PACKAGE and not target.startswith(ROOT_PACKAGE + "."):
                continue
            yield target, node.lineno
            # Importing a.b.c runs a.b's __init__, unless the importer is inside a.b.
            parts = target.split(".")
            for end in range(len(parts) - 1, 1, -1):
                parent = ".".join(parts[:end])
                if not (name == parent or name.startswith(parent + ".")):
                    yield parent, node.lineno


def import_graph(package: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """For each module, the package modules it imports (with the first line of each)."""
    modules = module_files(package)
    graph: dict[str, dict[str, int]] = {}
    for name, file in modules.items():
        edges: dict[str, int] = {}
        for target, line in imports(name, file, modules):
            if target != name:
                edges.setdefault(target, line)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def layer_of(module: str) -> int | None:
    """The index of ``module``'s layer; None when no name in LAYERS covers it."""
    if module == ROOT_PACKAGE:
        return -1
    best: tuple[int, int] | None = None
    for number, names in enumerate(LAYERS):
        for declared in names:
            exact = declared.removesuffix(".__init__")
            if declared.endswith(".__init__"):
                matches = module == exact
            else:
                matches = module == declared or module.startswith(declared + ".")
            if matches and (best is None or len(exact) > best[1]):
                best = (number, len(exact))
    return None if best is None else best[0]


def upward_imports(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import of a module from a higher layer, as ``module:line -> target``."""
    found = []
    for module, edges in sorted(graph.items()):
        own = layer_of(module)
        for target, line in sorted(edges.items()):
            theirs = layer_of(target)
            if own is not None and theirs is not None and theirs > own:
                found.append(f"{module}:{line} -> {target} (layer {own} imports layer {theirs})")
    return found


def test_every_module_has_a_layer() -> None:
    undeclared = [module for module in module_files() if layer_of(module) is None]
    assert not undeclared, f"declare these in tests/test_layers.py LAYERS: {undeclared}"


def test_no_import_cycle() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles (counting lazy and TYPE_CHECKING imports):\n" + "\n".join(
        " <-> ".join(component) for component in found
    )


def test_no_upward_import() -> None:
    found = upward_imports(import_graph())
    assert not found, "imports of a higher layer:\n" + "\n".join(found)


def test_the_checks_see_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    """The checks themselves: a function-level cycle and a TYPE_CHECKING upward import in
    a package made for the test are both found."""
    package = tmp_path / "launcher_probe"
    (package / "host" / "paths").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "host" / "__init__.py").write_text("")
    (package / "host" / "paths" / "__init__.py").write_text("")
    (package / "value.py").write_text(
        "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from launcher_probe.host.paths import walk\n"
    )
    (package / "host" / "paths" / "walk.py").write_text(
        "def f():\n    from launcher_probe.host.paths.rules import g\n"
    )
    (package / "host" / "paths" / "rules.py").write_text("from . import walk\n")
    graph = import_graph(package)
    assert cycles(graph) == [["launcher_probe.host.paths.rules", "launcher_probe.host.paths.walk"]]
    assert upward_imports(graph) == [
        "launcher_probe.value:3 -> launcher_probe.host.paths (layer 0 imports layer 1)",
        "launcher_probe.value:3 -> launcher_probe.host.paths.walk (layer 0 imports layer 1)",
    ]
