"""The official MCP SDK client, which sends no sandbox metadata, through ``proxy`` to the
example server, whose commands then run in the real ``codex sandbox`` on every version."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client, types

from tests.proxy.conftest import PROXY
from tests.server.mcp_client import EXAMPLE_SERVER, call_run, error_text, outcome

pytestmark = pytest.mark.real_codex
T = TypeVar("T")


def through_proxy(
    options: list[str],
    env: dict[str, str],
    errlog: Path,
    body: Callable[[ClientSession], Awaitable[T]],
    server: tuple[str, ...] = EXAMPLE_SERVER,
) -> T:
    """Run ``body`` on an SDK session with ``proxy OPTIONS -- python SERVER``."""

    async def main() -> T:
        command, *args = PROXY
        parameters = StdioServerParameters(
            command=command, args=[*args, *options, "--", sys.executable, *server], env=env
        )
        with errlog.open("w") as stderr, anyio.fail_after(120):
            async with (
                stdio_client(parameters, errlog=stderr) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await body(session)

    return anyio.run(main)


def test_read_only_blocks_a_write_outside_the_workspace(
    env: dict[str, str], workspace: Path, tmp_path: Path, real_codex: Path
) -> None:
    outside = tmp_path / "outside.txt"

    async def calls(session: ClientSession) -> types.CallToolResult:
        return await call_run(session, ["sh", "-c", f"echo reached; echo x > {outside}"], None)

    options = ["--codex", str(real_codex), "--cwd", str(workspace)]
    result = outcome(through_proxy(options, env, tmp_path / "proxy.err", calls))
    assert result["stdout"] == "reached\n"
    assert result["argv"][:3] == [str(real_codex), "sandbox", "--sandbox-state-json"]
    assert result["sandbox"] == "managed"
    assert result["exit_status"] != 0 and "Read-only file system" in result["stderr"]
    assert not outside.exists()


def test_workspace_write_lands_inside_and_blocks_outside(
    env: dict[str, str], workspace: Path, tmp_path: Path, real_codex: Path
) -> None:
    outside = Path("/var/tmp") / f"launcher-probe-proxy-{tmp_path.name}.txt"

    async def calls(session: ClientSession) -> tuple[dict[str, Any], dict[str, Any]]:
        inside = await call_run(session, ["sh", "-c", "echo made > inside.txt; echo ok"], None)
        beyond = await call_run(session, ["sh", "-c", f"echo x > {outside}"], None)
        return outcome(inside), outcome(beyond)

    options = ["--codex", str(real_codex), "--sandbox", "workspace-write", "--cwd", str(workspace)]
    inside, beyond = through_proxy(options, env, tmp_path / "proxy.err", calls)
    assert inside["exit_status"] == 0, inside["stderr"]
    assert inside["stdout"] == "ok\n"
    assert (workspace / "inside.txt").read_text() == "made\n"
    assert beyond["exit_status"] != 0 and "Read-only file system" in beyond["stderr"]
    assert not outside.exists()


def test_a_withheld_launcher_still_starts_the_server_which_refuses(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    marker = workspace / "ran"
    missing = tmp_path / "no-codex-here" / "codex"

    async def calls(session: ClientSession) -> types.CallToolResult:
        return await call_run(session, ["touch", str(marker)], None)

    errlog = tmp_path / "proxy.err"
    result = through_proxy(["--codex", str(missing), "--cwd", str(workspace)], env, errlog, calls)
    assert "launcher missing" in error_text(result)
    assert not marker.exists()
    said = errlog.read_text()
    assert said.count("launcher-probe: proxy: launcher withheld (not_found)") == 1, said
    assert "launcher-probe: proxy: fix: " in said


def test_text_beyond_ascii_reaches_the_sandboxed_command_as_sent(
    env: dict[str, str], workspace: Path, tmp_path: Path, real_codex: Path
) -> None:
    """The SDK writes UTF-8 as it is (2, 3 and 4 bytes a character): the proxy's splice
    keeps every byte of it, with the host's ``_meta`` (before the arguments, where the SDK
    puts it) and with none (the proxy's then put first)."""
    text = "é—日本😀"

    async def calls(session: ClientSession) -> list[dict[str, Any]]:
        command = ["printf", "%s", text]
        return [outcome(await call_run(session, command, meta)) for meta in ({"n": "ü"}, None)]

    options = ["--codex", str(real_codex), "--cwd", str(workspace)]
    for result in through_proxy(options, env, tmp_path / "proxy.err", calls):
        assert result["stdout"] == text
        assert result["argv"][:3] == [str(real_codex), "sandbox", "--sandbox-state-json"]
        assert result["argv"][-1] == text
