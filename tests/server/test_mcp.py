"""The SDK glue and the example server, over stdio with real processes (the real Codex CLI)."""

from __future__ import annotations

import json
import shutil
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
from tests.fakes import install_fake_codex
from tests.processes import dies_soon
from tests.server.launchers import elf_named
from tests.server.mcp_client import call_run, error_text, outcome, with_example_server


def state_for(workspace: Path) -> dict[str, Any]:
    return {"permissionProfile": {"type": "disabled"}, "sandboxCwd": workspace.as_uri()}


def test_initialize_advertises_both_capabilities_and_the_legacy_update_is_answered(
    isolated: HostEnv, tmp_path: Path
) -> None:
    async def body(client: ClientSession, initialized: types.InitializeResult) -> Any:
        update = types.Request[dict[str, Any], str](
            method=SANDBOX_STATE_UPDATE_METHOD, params={"sandboxState": {"x": 1}}
        )
        answered = await client.send_request(update, types.EmptyResult)
        tools = await client.list_tools()
        return initialized.capabilities.experimental, answered, [tool.name for tool in tools.tools]

    experimental, answered, tools = with_example_server(
        body, env=isolated.env, errlog=tmp_path / "server.err"
    )
    assert experimental == {name: {} for name in SANDBOX_CAPABILITIES}
    assert answered == types.EmptyResult()
    assert tools == ["run"]


def test_run_uses_the_launcher_from_meta_and_reports_a_disabled_profile(
    isolated: HostEnv, codex: str, tmp_path: Path
) -> None:
    state = state_for(tmp_path)
    meta = {SANDBOX_STATE_KEY: state, SANDBOX_STATE_META_KEY: state,
            SANDBOX_LAUNCHER_KEY: {"codexExecutable": codex}}  # fmt: skip
    command = ["sh", "-c", 'echo "$IS_SANDBOX"; echo err >&2; exit 3']

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return await call_run(client, command, meta)

    result = outcome(with_example_server(body, env=isolated.env, errlog=tmp_path / "server.err"))
    text = json.dumps(state, separators=(",", ":"))
    assert result["argv"] == [codex, "sandbox", "--sandbox-state-json", text, "--", *command]
    assert (result["exit_status"], result["stdout"]) == (3, "yes\n")  # codex sets IS_SANDBOX
    assert result["stderr"].endswith("err\n")  # after Codex's own warnings, if any
    assert result["sandbox"] == "disabled"  # ran through codex sandbox, restricted nothing


def test_fail_closed_by_default_and_the_operator_opt_out(isolated: HostEnv, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    meta = {SANDBOX_STATE_KEY: state_for(tmp_path)}  # the launcher was withheld

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return await call_run(client, ["touch", str(marker)], meta)

    refused = with_example_server(body, env=isolated.env, errlog=tmp_path / "closed.err")
    assert "launcher missing" in error_text(refused)
    assert not marker.exists()

    allowed = outcome(
        with_example_server(
            body,
            env=isolated.env,
            errlog=tmp_path / "open.err",
            server_args=("--allow-unsandboxed",),
        )
    )
    assert allowed == {"exit_status": 0, "stdout": "", "stderr": "", "sandbox": "none",
                       "argv": ["touch", str(marker)]}  # fmt: skip
    assert marker.exists()
    assert "UNSANDBOXED" in (tmp_path / "open.err").read_text()


def test_a_forged_launcher_is_refused_and_runs_nothing(isolated: HostEnv, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    sh = shutil.which("sh")
    (tmp_path / "fake").mkdir()
    fake_script = install_fake_codex(tmp_path / "fake", script=True)
    forged = [sh, str(fake_script.path), str(elf_named(tmp_path / "bin", "codex"))]

    def meta(launcher: str | None) -> dict[str, Any]:
        launcher_value = {"codexExecutable": launcher}
        return {SANDBOX_STATE_KEY: state_for(tmp_path), SANDBOX_LAUNCHER_KEY: launcher_value}

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return [await call_run(client, ["touch", str(marker)], meta(each)) for each in forged]

    results = with_example_server(body, env=isolated.env, errlog=tmp_path / "server.err")
    errors = [error_text(result) for result in results]
    assert [error.split("launcher unusable (")[1].split(")")[0] for error in errors] == [
        "not_codex",
        "wrong_platform",
        "not_codex",  # a native file named codex: its probe failed
    ]
    assert not marker.exists()
    assert fake_script.calls() == []


def test_a_command_past_the_timeout_is_killed_with_its_whole_group(
    isolated: HostEnv, codex: str, tmp_path: Path
) -> None:
    pidfile = tmp_path / "sleeper.pid"
    meta = {SANDBOX_STATE_KEY: state_for(tmp_path),
            SANDBOX_LAUNCHER_KEY: {"codexExecutable": codex}}  # fmt: skip

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return await call_run(client, ["sh", "-c", f"sleep 600 & echo $! > {pidfile}; wait"], meta)

    result = with_example_server(
        body, env=isolated.env, errlog=tmp_path / "server.err", server_args=("--timeout", "3")
    )
    assert "did not finish within 3 s" in error_text(result)
    assert dies_soon(int(pidfile.read_text()))  # the grandchild, not only the direct child


def test_output_is_capped(isolated: HostEnv, codex: str, tmp_path: Path) -> None:
    meta = {SANDBOX_STATE_KEY: state_for(tmp_path),
            SANDBOX_LAUNCHER_KEY: {"codexExecutable": codex}}  # fmt: skip
    flood = ["sh", "-c", "head -c 3145728 /dev/zero | tr '\\0' x"]  # 3 MiB

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return await call_run(client, flood, meta)

    result = outcome(with_example_server(body, env=isolated.env, errlog=tmp_path / "server.err"))
    assert result["exit_status"] == 0
    # 1 MiB, as the docs say, and a last line that says it was cut
    assert result["stdout"] == "x" * (1 << 20) + "\n[output cut: 1048576 of 3145728 bytes shown]"
    assert "[output cut" not in result["stderr"]  # what was not cut is not marked


def test_model_arguments_cannot_opt_out(isolated: HostEnv, tmp_path: Path) -> None:
    marker = tmp_path / "marker"

    async def body(client: ClientSession, _: types.InitializeResult) -> Any:
        return await client.call_tool(
            "run", {"command": ["touch", str(marker)], "allow_unsandboxed": True}
        )

    result = with_example_server(body, env=isolated.env, errlog=tmp_path / "server.err")
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
def test_lowlevel_server_in_both_protocol_eras(codex: str, tmp_path: Path, mode: str) -> None:
    state = state_for(tmp_path)
    meta = {SANDBOX_STATE_KEY: state,
            SANDBOX_LAUNCHER_KEY: {"codexExecutable": codex}}  # fmt: skip

    async def scenario() -> tuple[Any, types.CallToolResult]:
        async with Client(_lowlevel_server(), mode=mode) as client:
            called = await client.call_tool("argv", {}, meta=meta)  # type: ignore[arg-type]
            return client.server_capabilities.experimental, called

    experimental, called = anyio.run(scenario)
    assert experimental == EXPERIMENTAL_CAPABILITIES
    text = json.dumps(state, separators=(",", ":"))
    argv = [codex, "sandbox", "--sandbox-state-json", text, "--", "true"]
    assert not called.is_error
    assert isinstance(called.content[0], types.TextContent)
    assert json.loads(called.content[0].text) == argv
