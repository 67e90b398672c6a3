"""Server tests: an isolated host (its own verdict cache) and the real Codex CLI as the
launcher (the native fake codex, ``fake_codex``, passes the same checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import HostEnv


@pytest.fixture(autouse=True)
def isolated(host_env: HostEnv) -> HostEnv:
    """Every server test gets its own HOME and verdict cache; CODEX_HOME exists (the real
    CLI insists on it)."""
    host_env.codex_home.mkdir()
    return host_env


@pytest.fixture
def codex(real_codex: Path) -> str:
    """The real Codex CLI's native binary: a launcher that passes every check."""
    return str(real_codex)


@pytest.fixture
def linked_codex(real_codex: Path, tmp_path: Path) -> Path:
    """``<tmp>/link/codex``, a symlink to the real Codex CLI that a test may replace."""
    directory = tmp_path / "link"
    directory.mkdir(mode=0o755)
    link = directory / "codex"
    link.symlink_to(real_codex)
    return link
