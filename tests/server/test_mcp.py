"""The SDK glue and the example server, over stdio with real processes (fake codex)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession, types
from mcp.server import Server, ServerRequestContext

from launcher_probe.contract import (
    SANDBOX_CAPABILITIES,
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    SANDBOX_STATE_UPDATE_METHOD,
)
from launcher_probe.server.mcp import (
    EXPERIMENTAL_CAPABILITIES,
    codex_sandbox_middleware,
    sandbox_request,
)
from tests.conftest import HostEnv
from tests.fakes import FakeCodex
from tests.processes import dies_soon
from tests.server.mcp_client import call_run, error_text, outcome, with_example_server


def state_for(workspace: Path) -> dict[str, Any]:
    return {"permissionProfile": {"type": "disabled"}, "sandboxCwd": workspace.as_uri()}


def test_initialize_advertises_both_capabilities_and_the_legacy_update_is_answered(
    host_env: HostEnv, tmp_path: Path
) -> None:
    async def body(client: ClientSession, initialized: types.InitializeResult) -> Any:
        update = types.Request[dict[str, Any], str](
            method=SANDBOX_STATE_UPDATE_METHOD, params={"sandboxState": {"x": 1}}
        )
        answered = await client.send_request(update, types.EmptyResult)
        tools = await client.list_tools()
        return initialized.capabilities.experimental, answered, [tool.name for tool in tools.tools]

    experimental, answered, tools = with_example_server(
        body, env=host_env.env, errlog=tmp_path / "server.err"
    )
    assert experimental == {name: {} for name in SANDBOX_CAPABILITIES}
    assert answered == types.EmptyResult()
    assert tools == ["run"]


def test_run_uses_the_launcher_from_meta(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    state = state_for(tmp_path)
    meta = {SANDBOX_STATE_KEY: state, SANDBOX_STATE_META_KEY: state,
            SANDBOX_LAUNCHER_KEY: {"codexExecutable": str(fake_codex.path)}}  # fmt: skip

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return await call_run(
            client, ["sh", "-c", 'echo "$IS_SANDBOX"; echo err >&2; exit 3'], meta
        )

    result = outcome(with_example_server(body, env=host_env.env, errlog=tmp_path / "server.err"))
    text = json.dumps(state, separators=(",", ":"))
    assert result == {
        "exit_status": 3,
        "stdout": "yes\n",  # the fake codex sets IS_SANDBOX=yes, like the real one
        "stderr": "err\n",
        "sandboxed": True,
        "argv": [str(fake_codex.path), "sandbox", "--sandbox-state-json", text, "--",
                 "sh", "-c", 'echo "$IS_SANDBOX"; echo err >&2; exit 3'],
    }  # fmt: skip
    assert len(fake_codex.calls()) == 1


def test_fail_closed_by_default_and_the_operator_opt_out(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    meta = {SANDBOX_STATE_KEY: state_for(tmp_path)}  # the launcher was withheld

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return await call_run(client, ["touch", str(marker)], meta)

    refused = with_example_server(body, env=host_env.env, errlog=tmp_path / "closed.err")
    assert "launcher missing" in error_text(refused)
    assert not marker.exists()

    allowed = outcome(
        with_example_server(
            body,
            env=host_env.env,
            errlog=tmp_path / "open.err",
            server_args=("--allow-unsandboxed",),
        )
    )
    assert allowed == {"exit_status": 0, "stdout": "", "stderr": "", "sandboxed": False,
                       "argv": ["touch", str(marker)]}  # fmt: skip
    assert marker.exists()
    assert "UNSANDBOXED" in (tmp_path / "open.err").read_text()
    assert fake_codex.calls() == []


def test_a_command_past_the_timeout_is_killed_with_its_whole_group(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    pidfile = tmp_path / "sleeper.pid"
    meta = {SANDBOX_STATE_KEY: state_for(tmp_path),
            SANDBOX_LAUNCHER_KEY: {"codexExecutable": str(fake_codex.path)}}  # fmt: skip

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return await call_run(client, ["sh", "-c", f"sleep 600 & echo $! > {pidfile}; wait"], meta)

    result = with_example_server(
        body, env=host_env.env, errlog=tmp_path / "server.err", server_args=("--timeout", "3")
    )
    assert "did not finish within 3 s" in error_text(result)
    assert dies_soon(int(pidfile.read_text()))  # the grandchild, not only the direct child


def test_output_is_capped(host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path) -> None:
    fake_codex.set_fault("flood", megabytes=3)
    meta = {SANDBOX_STATE_KEY: state_for(tmp_path),
            SANDBOX_LAUNCHER_KEY: {"codexExecutable": str(fake_codex.path)}}  # fmt: skip

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return await call_run(client, ["true"], meta)

    result = outcome(with_example_server(body, env=host_env.env, errlog=tmp_path / "server.err"))
    assert result["exit_status"] == 0
    assert result["stdout"] == "x" * (1 << 20)  # 1 MiB, as the README says


def test_model_arguments_cannot_opt_out(host_env: HostEnv, tmp_path: Path) -> None:
    marker = tmp_path / "marker"

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return await client.call_tool(
            "run", {"command": ["touch", str(marker)], "allow_unsandboxed": True}
        )

    result = with_example_server(body, env=host_env.env, errlog=tmp_path / "server.err")
    assert "launcher missing" in error_text(result)
    assert not marker.exists()


def _lowlevel_server() -> Server[Any]:
    """A low-level ``Server`` using the glue: its tool reports the argv it would run."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {}}
        return types.ListToolsResult(tools=[types.Tool(name="argv", input_schema=schema)])

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        argv = sandbox_request(ctx).command(["true"])
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(argv))])

    server: Server[Any] = Server("low", on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.append(codex_sandbox_middleware)
    return server


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # handshake, server/discover
def test_lowlevel_server_in_both_protocol_eras(fake_codex: FakeCodex, mode: str) -> None:
    state = state_for(fake_codex.path.parent)
    meta = {SANDBOX_STATE_KEY: state,
            SANDBOX_LAUNCHER_KEY: {"codexExecutable": str(fake_codex.path)}}  # fmt: skip

    async def scenario() -> tuple[Any, types.CallToolResult]:
        async with Client(_lowlevel_server(), mode=mode) as client:
            called = await client.call_tool("argv", {}, meta=meta)  # type: ignore[arg-type]
            return client.server_capabilities.experimental, called

    experimental, called = anyio.run(scenario)
    assert experimental == EXPERIMENTAL_CAPABILITIES
    text = json.dumps(state, separators=(",", ":"))
    argv = [str(fake_codex.path), "sandbox", "--sandbox-state-json", text, "--", "true"]
    assert not called.is_error
    assert isinstance(called.content[0], types.TextContent)
    assert json.loads(called.content[0].text) == argv
