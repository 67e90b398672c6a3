"""What ``launcher_probe.server.mcp`` relies on in the MCP Python SDK, checked one by one, so
that an SDK that drops or changes any of it fails here, loudly and by name, instead of a
server silently advertising nothing (then Codex sends no sandbox state).

The glue uses the SDK's middleware chain, which the SDK labels provisional (it may change
in a 2.x minor release): the ``mcp`` extra pins the tested minor, and the first test
fails when the installed SDK is outside that pin.
"""

from __future__ import annotations

import inspect
import tomllib
from importlib.metadata import version
from typing import Any

import anyio
import pytest
from mcp import Client, types
from mcp.server import MCPServer, Server, ServerRequestContext
from mcp.server.mcpserver import Context
from packaging.requirements import Requirement

from launcher_probe.contract import SANDBOX_STATE_UPDATE_METHOD
from launcher_probe.server.mcp import EXPERIMENTAL_CAPABILITIES, codex_sandbox_middleware
from tests.conftest import ROOT


def mcp_extra() -> Requirement:
    """The ``mcp`` requirement of the ``mcp`` extra in pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (requirement,) = [Requirement(line) for line in project["optional-dependencies"]["mcp"]]
    assert requirement.name == "mcp"
    return requirement


def test_the_installed_sdk_is_in_the_tested_range() -> None:
    pinned, installed = mcp_extra().specifier, version("mcp")
    assert pinned.contains(installed), (
        f"mcp {installed} is outside the range launcher-probe[mcp] was tested with ({pinned}); "
        "run the SDK glue tests against it and move the pin"
    )


def test_the_hooks_the_glue_uses_exist() -> None:
    assert "middleware" in inspect.signature(MCPServer).parameters, "MCPServer(middleware=...)"
    assert isinstance(MCPServer("probe").middleware, list), "MCPServer.middleware"
    options = inspect.signature(Server.create_initialization_options).parameters
    assert "experimental_capabilities" in options, "Server.create_initialization_options"
    assert isinstance(Server("probe").middleware, list), "Server.middleware"
    fields = {"method", "meta"} <= set(inspect.signature(ServerRequestContext).parameters)
    assert fields, "ServerRequestContext(method=..., meta=...)"
    assert "request_context" in dir(Context), "Context.request_context"


def test_middleware_answers_the_update_and_sees_the_wire_capabilities() -> None:
    """Documented middleware behaviour the glue needs, in both protocol eras: it wraps
    ``initialize`` and ``server/discover``; ``call_next`` returns the wire object; a
    result returned without ``call_next`` is the answer."""
    seen: list[tuple[str, Any]] = []

    async def spy(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        result = await call_next(ctx)
        seen.append((ctx.method, result))
        return result

    async def scenario(mode: str) -> tuple[Any, types.EmptyResult]:
        server = MCPServer("contract", middleware=[spy, codex_sandbox_middleware])
        async with Client(server, mode=mode) as client:
            update = types.Request[dict[str, Any], str](
                method=SANDBOX_STATE_UPDATE_METHOD, params={"sandboxState": {}}
            )
            answered = await client.session.send_request(update, types.EmptyResult)
            return client.server_capabilities.experimental, answered

    for mode, method in (("legacy", "initialize"), ("auto", "server/discover")):
        seen.clear()
        experimental, answered = anyio.run(scenario, mode)
        assert experimental == EXPERIMENTAL_CAPABILITIES, f"{mode}: {experimental}"
        assert answered == types.EmptyResult()
        wire = dict(seen)[method]
        assert isinstance(wire, dict) and isinstance(wire.get("capabilities"), dict), wire
        assert wire["capabilities"]["experimental"] == EXPERIMENTAL_CAPABILITIES, wire


def test_a_result_it_cannot_extend_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    async def changed_sdk(ctx: Any) -> Any:
        return types.EmptyResult()  # not the wire object the glue extends

    class Ctx:
        method = "initialize"

    result = anyio.run(codex_sandbox_middleware, Ctx(), changed_sdk)  # type: ignore[arg-type]
    assert result == types.EmptyResult()
    assert "cannot advertise codex/sandbox-state and codex/sandbox-state-meta" in caplog.text


def test_a_low_level_server_advertises_in_both_eras_only_with_the_middleware() -> None:
    """The stable ``create_initialization_options(experimental_capabilities=...)`` reaches
    the ``initialize`` result only: the SDK's own ``server/discover`` answer (a client of
    the 2026-07-28 era, the SDK's ``Client`` in its default mode) leaves experimental
    capabilities out. A low-level ``Server`` adds the middleware to its ``middleware`` list
    too, as python-api.md says, and then advertises in both eras."""

    async def scenario(server: Server[Any], mode: str) -> Any:
        async with Client(server, mode=mode) as client:
            return client.server_capabilities.experimental

    server = Server("contract")
    server.middleware.append(codex_sandbox_middleware)
    for mode in ("legacy", "auto"):
        assert anyio.run(scenario, server, mode) == EXPERIMENTAL_CAPABILITIES, mode
