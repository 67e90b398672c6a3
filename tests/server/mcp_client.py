"""A test client on the official MCP SDK: launch the example server over stdio, talk to it."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client, types

#: The example server: the module the package ships, and how it is started.
EXAMPLE_MODULE = "launcher_probe.examples.shell_server"
EXAMPLE_SERVER = ("-m", EXAMPLE_MODULE)

T = TypeVar("T")

Body = Callable[[ClientSession, types.InitializeResult], Awaitable[T]]


def with_example_server(
    body: Body[T], *, env: dict[str, str], errlog: Path, server_args: tuple[str, ...] = ()
) -> T:
    """Start the example server (``sys.executable``), initialize, run ``body``, shut down.

    The server's stderr goes to ``errlog``.
    """

    async def session() -> T:
        parameters = StdioServerParameters(
            command=sys.executable, args=[*EXAMPLE_SERVER, *server_args], env=env
        )
        with errlog.open("w") as stderr:
            async with (
                stdio_client(parameters, errlog=stderr) as (read, write),
                ClientSession(read, write) as client,
            ):
                initialized = await client.initialize()
                with anyio.fail_after(120):
                    return await body(client, initialized)

    return anyio.run(session)


async def call_run(
    client: ClientSession, command: list[str], meta: dict[str, Any] | None
) -> types.CallToolResult:
    """``tools/call run`` with ``_meta`` exactly as given."""
    return await client.call_tool("run", {"command": command}, meta=meta)  # type: ignore[arg-type]


def error_text(result: types.CallToolResult) -> str:
    """The text of an ``isError`` result."""
    assert result.is_error, result
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


def outcome(result: types.CallToolResult) -> dict[str, Any]:
    """The structured outcome of a successful ``run``."""
    assert not result.is_error, error_text(result)
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content
