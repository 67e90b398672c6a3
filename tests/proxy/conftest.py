"""Proxy tests: an isolated host, and MCP clients that talk to ``launcher-probe proxy`` as a
real process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, HostEnv

#: ``launcher-probe`` as a host configures it: this interpreter running the package.
PROXY = (sys.executable, "-m", "launcher_probe", "proxy")


@pytest.fixture
def env(host_env: HostEnv) -> dict[str, str]:
    """The environment the proxy starts with; CODEX_HOME exists (the real CLI insists)."""
    host_env.codex_home.mkdir()
    return {**host_env.env, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    directory = tmp_path / "workspace"
    directory.mkdir()
    return directory
