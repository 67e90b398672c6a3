"""End to end with real processes: resolver -> injector -> MCP client -> example server ->
``codex sandbox`` of the real Codex CLI, every version of the matrix."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, types

from launcher_probe.contract import (
    SANDBOX_CAPABILITIES,
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    Reason,
)
from launcher_probe.host.decision import Decision, Published, Withheld
from launcher_probe.host.inject import MetaResult, ServerDescription, Transport, tool_call_meta
from launcher_probe.host.resolver import resolve_launcher
from tests.conftest import HostEnv
from tests.server.mcp_client import call_run, error_text, outcome, with_example_server

pytestmark = pytest.mark.real_codex

ROOT_READ = {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}
PROJECT_WRITE = {"path": {"type": "special", "value": {"kind": "project_roots"}}, "access": "write"}


def state(workspace: Path, *entries: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A managed, network-restricted state for ``workspace`` (verified shapes, see §3)."""
    return {
        "permissionProfile": {
            "type": "managed",
            "file_system": {"type": "restricted", "entries": [ROOT_READ, *entries]},
            "network": "restricted",
        },
        "sandboxCwd": workspace.as_uri(),
        **extra,
    }


@pytest.fixture
def env(host_env: HostEnv) -> dict[str, str]:
    host_env.codex_home.mkdir()  # the real CLI insists that CODEX_HOME exists
    return host_env.env


@pytest.fixture
def published(env: dict[str, str], real_codex: Path) -> Published:
    decision = resolve_launcher(str(real_codex))
    assert isinstance(decision, Published), decision
    assert decision.descriptor.codex_executable == str(real_codex)
    return decision


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    directory = tmp_path / "workspace"
    directory.mkdir()
    return directory


Calls = Callable[[ClientSession, Callable[..., MetaResult]], Any]


def session(env: dict[str, str], errlog: Path, calls: Calls) -> Any:
    """Run ``calls(client, meta_for)``; ``meta_for(state, launcher)`` is the injector bound
    to the server description read from this server's ``initialize`` result."""

    async def body(client: ClientSession, initialized: types.InitializeResult) -> Any:
        experimental = initialized.capabilities.experimental or {}
        assert set(SANDBOX_CAPABILITIES) <= set(experimental)
        server = ServerDescription("sandboxed-shell", Transport.STDIO, experimental)

        def meta_for(sandbox_state: dict[str, Any], launcher: Decision) -> MetaResult:
            return tool_call_meta(server, sandbox_state=sandbox_state, launcher=launcher)

        return await calls(client, meta_for)

    return with_example_server(body, env=env, errlog=errlog)


def test_read_only_state(
    env: dict[str, str], published: Published, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"

    async def calls(client: ClientSession, meta_for: Callable[..., MetaResult]) -> Any:
        built = meta_for(state(workspace), published)
        assert built.launcher_included, built.explanation()
        echoed = await call_run(client, ["echo", "hi"], built.meta)
        written = await call_run(client, ["sh", "-c", f"echo x > {outside}"], built.meta)
        return outcome(echoed), outcome(written)

    echoed, written = session(env, tmp_path / "server.err", calls)
    assert (echoed["exit_status"], echoed["stdout"], echoed["sandbox"]) == (0, "hi\n", "managed")
    assert written["exit_status"] != 0
    assert "Read-only file system" in written["stderr"]
    assert not outside.exists()


def test_workspace_write_state(
    env: dict[str, str], published: Published, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"

    async def calls(client: ClientSession, meta_for: Callable[..., MetaResult]) -> Any:
        meta = meta_for(state(workspace, PROJECT_WRITE), published).meta
        inside = await call_run(client, ["sh", "-c", "echo made > inside.txt"], meta)
        beyond = await call_run(client, ["sh", "-c", f"echo x > {outside}"], meta)
        return outcome(inside), outcome(beyond)

    inside, beyond = session(env, tmp_path / "server.err", calls)
    assert inside["exit_status"] == 0, inside["stderr"]
    assert (workspace / "inside.txt").read_text() == "made\n"
    assert "Read-only file system" in beyond["stderr"]
    assert not outside.exists()


def test_unknown_state_field_reaches_codex_sandbox_verbatim(
    env: dict[str, str], published: Published, workspace: Path, tmp_path: Path
) -> None:
    sent = state(workspace, futureField={"zeta": [1, 2.5, None], "alpha": "ü"}, useMxc=False)

    async def calls(client: ClientSession, meta_for: Callable[..., MetaResult]) -> Any:
        built = meta_for(sent, published)
        return built, outcome(await call_run(client, ["echo", "still works"], built.meta))

    built, result = session(env, tmp_path / "server.err", calls)
    text = json.dumps(sent, separators=(",", ":"), ensure_ascii=False)
    assert built.state is not None and built.state.text == text
    assert result["argv"] == [
        published.descriptor.codex_executable, "sandbox", "--sandbox-state-json", text,
        "--", "echo", "still works",
    ]  # fmt: skip
    assert (result["exit_status"], result["stdout"]) == (0, "still works\n")


def test_withheld_launcher_fails_closed_and_runs_nothing(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    withheld = resolve_launcher(str(tmp_path / "no-codex-here"))
    assert isinstance(withheld, Withheld)
    marker = workspace / "marker"

    async def calls(client: ClientSession, meta_for: Callable[..., MetaResult]) -> Any:
        built = meta_for(state(workspace, PROJECT_WRITE), withheld)
        assert not built.launcher_included
        assert built.omitted_reason is Reason.NOT_FOUND
        assert SANDBOX_LAUNCHER_KEY not in built.meta and SANDBOX_STATE_KEY in built.meta
        return await call_run(client, ["touch", str(marker)], built.meta)

    result = session(env, tmp_path / "server.err", calls)
    assert "launcher missing" in error_text(result)
    assert not marker.exists()


def test_deprecated_key_alone_works_and_differing_keys_are_refused(
    env: dict[str, str], published: Published, workspace: Path, tmp_path: Path
) -> None:
    marker = workspace / "marker"

    async def calls(client: ClientSession, meta_for: Callable[..., MetaResult]) -> Any:
        meta = meta_for(state(workspace, PROJECT_WRITE), published).meta
        deprecated_only = {key: value for key, value in meta.items() if key != SANDBOX_STATE_KEY}
        assert SANDBOX_STATE_META_KEY in deprecated_only
        works = await call_run(client, ["echo", "hi"], deprecated_only)
        differing = {**meta, SANDBOX_STATE_META_KEY: state(tmp_path, PROJECT_WRITE)}
        refused = await call_run(client, ["touch", str(marker)], differing)
        return works, refused

    works, refused = session(env, tmp_path / "server.err", calls)
    assert (outcome(works)["stdout"], outcome(works)["sandbox"]) == ("hi\n", "managed")
    assert "carry different states" in error_text(refused)
    assert not marker.exists()
