"""The host-side SDK glue with real processes: ``sandboxed_stdio_session`` resolves the real
Codex CLI, starts a stdio server, and every ``call_tool``/``read_resource`` carries the
injector's ``_meta``: the example server's command runs in the real sandbox, and a binary
replaced after launch is left out (``binary_changed``) on the next call."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import StdioServerParameters, types

from launcher_probe.contract import (
    SANDBOX_CAPABILITIES,
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    Reason,
)
from launcher_probe.host.decision import Published, Withheld
from launcher_probe.host.inject import MetaRejected
from launcher_probe.host.mcp_session import SandboxedSession, sandboxed_stdio_session
from tests.conftest import ROOT, HostEnv
from tests.server.mcp_client import EXAMPLE_SERVER, error_text, outcome
from tests.test_end_to_end import PROJECT_WRITE, state

ECHO_SERVER = Path(__file__).parent / "meta_echo_server.py"
T = TypeVar("T")


@pytest.fixture
def env(host_env: HostEnv) -> dict[str, str]:
    host_env.codex_home.mkdir()  # the real CLI insists that CODEX_HOME exists
    return {**host_env.env, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    directory = tmp_path / "workspace"
    directory.mkdir()
    return directory


def session_with(
    server: Sequence[str],
    env: dict[str, str],
    errlog: Path,
    body: Callable[[SandboxedSession], Awaitable[T]],
    **options: Any,
) -> T:
    """Run ``body`` on a sandboxed session with ``python SERVER...`` (a real process)."""

    async def main() -> T:
        parameters = StdioServerParameters(command=sys.executable, args=[*server], env=env)
        with errlog.open("w") as stderr, anyio.fail_after(120):
            async with sandboxed_stdio_session(parameters, errlog=stderr, **options) as session:
                return await body(session)

    return anyio.run(main)


def copy_of_codex(real_codex: Path, directory: Path) -> Path:
    """The real CLI copied with what ``codex sandbox`` needs beside it (bundled bwrap)."""
    package = real_codex.parent.parent
    (directory / "bin").mkdir(parents=True)
    shutil.copytree(package / "codex-resources", directory / "codex-resources")
    shutil.copy2(package / "codex-package.json", directory)
    return Path(shutil.copy2(real_codex, directory / "bin" / "codex"))


@pytest.mark.real_codex
def test_the_command_runs_sandboxed(
    env: dict[str, str], real_codex: Path, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    read_only = state(workspace)

    async def body(session: SandboxedSession) -> Any:
        echoed = await session.call_tool(
            "run", {"command": ["echo", "hi"]}, sandbox_state=read_only
        )
        writing = ["sh", "-c", f"echo x > {outside}"]
        written = await session.call_tool("run", {"command": writing}, sandbox_state=read_only)
        return session, outcome(echoed), outcome(written)

    session, echoed, written = session_with(
        EXAMPLE_SERVER, env, tmp_path / "server.err", body, name="shell", codex=str(real_codex)
    )
    assert isinstance(session.decision, Published)
    assert session.decision.descriptor.codex_executable == str(real_codex)
    assert set(SANDBOX_CAPABILITIES) <= set(session.server.capabilities or {})
    assert echoed["argv"][0] == str(real_codex)
    assert (echoed["exit_status"], echoed["stdout"], echoed["sandbox"]) == (0, "hi\n", "managed")
    assert written["exit_status"] != 0
    assert "Read-only file system" in written["stderr"]
    assert not outside.exists()


@pytest.mark.real_codex
def test_a_binary_replaced_after_launch_is_left_out(
    env: dict[str, str],
    real_codex: Path,
    workspace: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    codex = copy_of_codex(real_codex, tmp_path / "codex-copy")
    writable = state(workspace, PROJECT_WRITE)
    marker = workspace / "marker"

    async def body(session: SandboxedSession) -> Any:
        before = await session.call_tool("run", {"command": ["echo", "ok"]}, sandbox_state=writable)
        replacement = codex.with_name("codex.new")
        shutil.copy2("/bin/true", replacement)  # an upgrade, say: a new file renamed over it
        os.replace(replacement, codex)
        built = session.tool_call_meta(sandbox_state=writable)
        after = await session.call_tool(
            "run", {"command": ["touch", str(marker)]}, sandbox_state=writable
        )
        return outcome(before), built, after

    try:
        with caplog.at_level(logging.WARNING, logger="launcher_probe.host"):
            before, built, after = session_with(
                EXAMPLE_SERVER, env, tmp_path / "server.err", body, codex=str(codex)
            )
    finally:
        shutil.rmtree(tmp_path / "codex-copy")  # 300 MB
    assert (before["argv"][0], before["stdout"]) == (str(codex), "ok\n")
    assert (built.launcher_included, built.omitted_reason) == (False, Reason.BINARY_CHANGED)
    assert SANDBOX_LAUNCHER_KEY not in built.meta
    assert "launcher missing" in error_text(after)
    assert not marker.exists()  # nothing ran, the replaced binary least of all
    assert "launcher left out of tools/call _meta: binary_changed" in caplog.text


def test_every_call_and_read_carries_the_injectors_meta(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    withheld = Withheld(Reason.NOT_FOUND, "no codex here")
    sandbox_state = state(workspace)
    caller = {"callId": "call_1", "z": [1, {"deep": True}]}
    host = {"threadId": "t-1", "x-codex-turn-metadata": {"turn_id": "u-1"}}

    async def body(session: SandboxedSession) -> Any:
        called = await session.call_tool(
            "meta", {}, sandbox_state=sandbox_state, meta=caller, host_meta=host
        )
        read = await session.read_resource(
            "meta://x", sandbox_state=sandbox_state, meta=caller, thread_id="t-1"
        )
        built = session.tool_call_meta(sandbox_state=sandbox_state, meta=caller, host_meta=host)
        built_read = session.resource_read_meta(sandbox_state=sandbox_state, meta=caller)
        with pytest.raises(MetaRejected, match="reserved tool call metadata key: threadId"):
            await session.call_tool("meta", {}, sandbox_state=None, meta={"threadId": "forged"})
        with pytest.raises(MetaRejected, match="originCallId requires threadId"):
            await session.read_resource("meta://x", sandbox_state=None, origin_call_id="c")
        return called, read, built, built_read

    called, read, built, built_read = session_with(
        [str(ECHO_SERVER)], env, tmp_path / "server.err", body, decision=withheld
    )
    assert isinstance(called.content[0], types.TextContent)
    assert isinstance(read.contents[0], types.TextResourceContents)
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    assert called.content[0].text == json.dumps(built.meta, **compact)  # type: ignore[arg-type]
    assert read.contents[0].text == json.dumps(built_read.meta, **compact)  # type: ignore[arg-type]
    assert list(built.meta) == [*caller, *host, SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY]
    assert built.omitted_reason is Reason.NOT_FOUND


@pytest.mark.parametrize("module", ["launcher_probe.host.mcp_session", "launcher_probe.server.mcp"])
def test_without_the_extra_the_import_names_it(module: str) -> None:
    blocked = f"import sys; sys.modules['mcp'] = None; import {module}"
    done = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"ModuleNotFoundError: {module} needs the official MCP Python SDK (the mcp extra): "
        "pip install 'mcp<2.4,>=2.3'"  # the SDK itself: launcher-probe is on no index
    )
