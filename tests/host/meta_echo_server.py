"""A stdio MCP server that advertises the sandbox capabilities and answers with the
``_meta`` it received: tool ``meta`` and resources ``meta://{name}`` (the JSON text of the
request's ``_meta``, keys in the order they arrived)."""

from __future__ import annotations

import json

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from launcher_probe.server.mcp import codex_sandbox_middleware


def received(ctx: Context) -> str:
    return json.dumps(ctx.request_context.meta or {}, separators=(",", ":"), ensure_ascii=False)


def build_server() -> MCPServer:
    server = MCPServer("meta-echo", middleware=[codex_sandbox_middleware])

    @server.tool()
    def meta(ctx: Context) -> str:
        """The ``_meta`` of this call."""
        return received(ctx)

    @server.resource("meta://{name}")
    def echo(name: str, ctx: Context) -> str:
        """The ``_meta`` of this read."""
        return received(ctx)

    return server


if __name__ == "__main__":
    build_server().run()
