"""The declared API: what each stage package re-exports, the ``__all__`` of every module
the docs name, and every import path the docs teach (today's, and those taught before the
host side became stage packages)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT

#: Each stage package's re-exports: exactly the names the docs teach through it.
STAGE_EXPORTS = {
    "launcher_probe.host.discovery": ["discover"],
    "launcher_probe.host.native": [],
    "launcher_probe.host.paths": ["check_launcher_path"],
    "launcher_probe.host.cache": ["Lifetimes"],
    "launcher_probe.host.probe": ["probe_launcher"],
}
#: Dotted paths the README and docs/ taught before the stage packages; all keep working.
TAUGHT = [
    "launcher_probe.client.request",
    "launcher_probe.client.resolve_via",
    "launcher_probe.contract.Reason",
    "launcher_probe.errors.InputRejected",
    "launcher_probe.examples.shell_server",
    "launcher_probe.host.binary",
    "launcher_probe.host.cache.Lifetimes",
    "launcher_probe.host.decision.Published",
    "launcher_probe.host.discovery.discover",
    "launcher_probe.host.inject.ServerDescription",
    "launcher_probe.host.inject.Transport",
    "launcher_probe.host.inject.tool_call_meta",
    "launcher_probe.host.mcp_session.sandboxed_stdio_session",
    "launcher_probe.host.paths.check_launcher_path",
    "launcher_probe.host.probe.probe_launcher",
    "launcher_probe.host.probe_result",
    "launcher_probe.host.resolver.ResolverConfig",
    "launcher_probe.host.resolver.resolve_launcher",
    "launcher_probe.json_input.loads_strict",
    "launcher_probe.server.launcher.verify_launcher",
    "launcher_probe.server.mcp.codex_sandbox_middleware",
    "launcher_probe.server.mcp.sandbox_request",
    "launcher_probe.server.request.AuthorityBinding",
    "launcher_probe.server.request.SandboxRequest",
]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def resolve(path: str) -> tuple[ModuleType, object]:
    """The longest importable module of ``path`` and the object ``path`` names in it."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:end]))
        except ModuleNotFoundError:
            continue
        found: object = module
        for name in parts[end:]:
            found = getattr(found, name)
        return module, found
    raise ModuleNotFoundError(path)


def taught_in_docs() -> set[str]:
    """Every ``launcher_probe.…`` path the docs name, and each ``from M import a, b``."""
    paths = set()
    for doc in DOCS:
        text = doc.read_text()
        paths.update(re.findall(r"\blauncher_probe(?:\.[A-Za-z_]\w*)+", text))
        imports = re.findall(r"from (launcher_probe[\w.]*) import (?:\(([^)]*)\)|([\w, ]+))", text)
        for module, grouped, inline in imports:
            names = (grouped or inline).split(",")
            paths.update(f"{module}.{name.strip()}" for name in names if name.strip())
    return paths


@pytest.mark.parametrize("path", sorted(set(TAUGHT) | taught_in_docs()))
def test_every_taught_import_path_works(path: str) -> None:
    module, found = resolve(path)
    assert found is not None
    # A documented module declares its API, and the name taught is part of it.
    if found is module and module.__name__ not in ("launcher_probe.host", "launcher_probe.server"):
        assert isinstance(getattr(module, "__all__", None), list), f"{path}: no __all__"
    elif found is not module:
        assert path.rsplit(".", 1)[1] in getattr(module, "__all__", ()), f"{path} not in __all__"


@pytest.mark.parametrize("package", sorted(STAGE_EXPORTS))
def test_each_stage_re_exports_only_what_the_docs_name(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(STAGE_EXPORTS[package])
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):  # explicit re-exports only: ``from .x import Y as Y``
            assert all(alias.asname == alias.name for alias in node.names), ast.unparse(node)
            assert node.module is not None and node.module.startswith(package + ".")
        else:
            assert isinstance(node, ast.Expr | ast.Assign | ast.AnnAssign), ast.unparse(node)


def test_every_name_in_an_all_exists() -> None:
    for file in sorted((ROOT / "launcher_probe").rglob("*.py")):
        if "__all__" not in file.read_text() or file.stem == "shell_server":
            continue
        name = ".".join(file.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        module = importlib.import_module(name)
        missing = [item for item in module.__all__ if not hasattr(module, item)]
        assert not missing, f"{name}.__all__ names what it lacks: {missing}"
