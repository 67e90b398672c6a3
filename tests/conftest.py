"""Shared fixtures: an isolated host environment and the real Codex CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from launcher_probe.host.cache.memory import MEMORY
from tests.fakes import fake_codex  # noqa: F401  (the fake codex fixture)

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class HostEnv:
    """A private HOME, XDG dirs, CODEX_HOME and cache root; ``env`` is the full environment."""

    home: Path
    config_dir: Path
    cache_dir: Path
    codex_home: Path
    env: dict[str, str]


@pytest.fixture
def host_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HostEnv]:
    """Point every location launcher-probe reads at fresh directories under tmp_path.

    Sets the variables in this process (for in-process calls) and returns the same
    environment for subprocesses. PATH holds only the system directories.
    """
    home = tmp_path / "home"
    config = tmp_path / "xdg-config"
    cache = tmp_path / "xdg-cache"
    codex_home = home / ".codex"
    for directory in (home, config, cache):
        directory.mkdir(mode=0o700)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(
            ("LAUNCHER_PROBE_", "CODEX_", "XDG_", "NVM_", "VOLTA_", "PNPM_", "ASDF_", "MISE_")
        )
        and key not in {"npm_config_prefix", "BUN_INSTALL", "FNM_DIR", "VP_HOME", "HOMEBREW_PREFIX"}
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(config),
        XDG_CACHE_HOME=str(cache),
        CODEX_HOME=str(codex_home),
        PATH="/usr/bin:/bin",
        # No helper of the user's own is asked by the CLI's --via auto (none runs here).
        XDG_RUNTIME_DIR=str(tmp_path / "xdg-runtime"),
    )
    for key in set(os.environ) - set(env):
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield HostEnv(home, config, cache, codex_home, env)
    # The in-process memory front is keyed by path, not by cache directory: leave no
    # verdict of this test's cache to the next test.
    MEMORY.forget()


def run_cli(
    *args: str, env: dict[str, str], timeout: float = 60, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m launcher_probe ARGS`` as a real process."""
    return run_python("-m", "launcher_probe", *args, env=env, timeout=timeout, cwd=cwd)


def run_python(
    *args: str, env: dict[str, str], timeout: float = 60, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run this interpreter with ARGS as a real process: its exit code, stdout, stderr."""
    return run_program(sys.executable, *args, env=env, timeout=timeout, cwd=cwd)


def run_program(
    program: str | Path,
    *args: str,
    env: dict[str, str],
    timeout: float = 60,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run PROGRAM with ARGS as a real process: its exit code, stdout, stderr."""
    return subprocess.run(
        [str(program), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _codex_versions() -> list[str]:
    """The supported versions, oldest first, from ``scripts/codex-versions``."""
    lines = (ROOT / "scripts" / "codex-versions").read_text().splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


#: The Codex CLI versions every real-CLI test runs against (each test id names one).
CODEX_VERSIONS = _codex_versions()


@pytest.fixture(scope="session", params=CODEX_VERSIONS, ids=[f"codex-{v}" for v in CODEX_VERSIONS])
def codex_version(request: pytest.FixtureRequest) -> str:
    """One version of the matrix in ``scripts/codex-versions``."""
    version: str = request.param
    return version


def _fetched(script: str, *args: str, skipped: str) -> Path:
    """The path ``scripts/<script> ARGS`` prints (it needs no npm once it has fetched);
    a warning it gives (an older Node than the package declares, say) is shown in pytest's
    summary. Skips, loudly (``skipped``), only when nothing is fetched and npm is absent;
    any other failure fails."""
    fetched = subprocess.run(
        [str(ROOT / "scripts" / script), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    if fetched.returncode == 0:
        for line in fetched.stderr.splitlines():
            if ": warning: " in line:
                warnings.warn(line, stacklevel=1)
        return Path(fetched.stdout.strip())
    if shutil.which("npm") is None:
        pytest.skip(f"{skipped}: npm is not installed, cannot fetch it")
    pytest.fail(f"{' '.join([f'scripts/{script}', *args])} failed: {fetched.stderr.strip()}")


@pytest.fixture(scope="session")
def real_codex(codex_version: str) -> Iterator[Path]:
    """The native binary of the real Codex CLI ``codex_version``, from scripts/fetch-codex,
    left as fetched: it is the file ``scripts/run`` has the user export, so a test that
    linked, touched or chmodded it would make their cached verdict stale (tests change a
    copy of it instead)."""
    path = _fetched("fetch-codex", codex_version, skipped="REAL CODEX CLI TESTS SKIPPED")
    before = path.stat().st_ctime_ns
    yield path
    assert path.stat().st_ctime_ns == before, f"a test changed {path} (its ctime): copy it"


@pytest.fixture(scope="session")
def mcp_inspector() -> Path:
    """The MCP Inspector's ``mcp-inspector``: ``$MCP_INSPECTOR`` when set, else what
    ``scripts/fetch-host inspector`` installs."""
    given = os.environ.get("MCP_INSPECTOR")
    if given:
        return Path(given)
    return _fetched("fetch-host", "inspector", skipped="MCP INSPECTOR TESTS SKIPPED")


@pytest.fixture(scope="session")
def claude_code() -> Path:
    """Claude Code's ``claude``: ``$CLAUDE_CODE`` when set, else what
    ``scripts/fetch-host claude-code`` installs."""
    given = os.environ.get("CLAUDE_CODE")
    if given:
        return Path(given)
    return _fetched("fetch-host", "claude-code", skipped="CLAUDE CODE TESTS SKIPPED")
