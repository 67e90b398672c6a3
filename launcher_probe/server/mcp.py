"""Glue for the official MCP Python SDK (2.x; install the ``mcp`` extra).

Add ``codex_sandbox_middleware`` to a server to advertise the sandbox capabilities
and answer the legacy state-update request; call ``sandbox_request(ctx)`` in a tool
to read that call's ``_meta``::

    server = MCPServer("my-server", middleware=[codex_sandbox_middleware])

    @server.tool()
    def run(command: list[str], ctx: Context) -> str:
        with sandbox_request(ctx).prepare(command) as prepared:
            done = prepared.run(capture_output=True, text=True)
        ...

Why middleware: in mcp 2.3 ``MCPServer`` takes no experimental capabilities, and the
``initialize`` result can be changed only through the middleware chain (the SDK refuses an
``initialize`` handler and names middleware as the hook). The chain is public but
*provisional* (it may change in a 2.x minor release), so the ``mcp`` extra pins the minor
release it was tested with, ``tests/server/test_mcp_sdk_contract.py`` fails when an SDK
lacks what this module relies on, and the middleware logs an error if it ever finds a
result it cannot extend. A low-level ``Server`` run by hand takes the middleware too
(``server.middleware.append(codex_sandbox_middleware)``): the SDK's stable
``create_initialization_options(experimental_capabilities=EXPERIMENTAL_CAPABILITIES)``
reaches the ``initialize`` result only, and its own ``server/discover`` answer (MCP
2026-07-28 clients, the SDK's ``Client`` in its default mode) leaves them out.
"""

from __future__ import annotations

import logging
from typing import Any

from launcher_probe.extras import missing_mcp_extra

try:
    from mcp.server import ServerRequestContext
    from mcp.server.context import CallNext, HandlerResult
    from mcp.server.mcpserver import Context
except ImportError as error:
    raise missing_mcp_extra(__name__) from error

from launcher_probe.contract import SANDBOX_CAPABILITIES, SANDBOX_STATE_UPDATE_METHOD
from launcher_probe.server.request import SandboxRequest

__all__ = ["EXPERIMENTAL_CAPABILITIES", "codex_sandbox_middleware", "sandbox_request"]

log = logging.getLogger("launcher_probe.server")

#: ``capabilities.experimental`` entries that opt a server into sandbox metadata (what
#: the middleware adds; ``initialize`` only through ``create_initialization_options``).
EXPERIMENTAL_CAPABILITIES: dict[str, dict[str, Any]] = {name: {} for name in SANDBOX_CAPABILITIES}

#: Requests whose result carries the server's capabilities (handshake and 2026-07-28 era).
_CAPABILITY_RESULTS = ("initialize", "server/discover")


async def codex_sandbox_middleware(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """Server middleware: advertise ``codex/sandbox-state`` (and its deprecated alias) in
    ``capabilities.experimental``, and acknowledge the legacy ``codex/sandbox-state/update``
    request with an empty result without storing anything (the state travels per call)."""
    if ctx.method == SANDBOX_STATE_UPDATE_METHOD:
        return {}
    result = await call_next(ctx)
    if ctx.method not in _CAPABILITY_RESULTS:
        return result
    capabilities = result.get("capabilities") if isinstance(result, dict) else None
    if not isinstance(capabilities, dict):
        log.error(
            "cannot advertise %s: the %s result is no wire object with capabilities "
            "(an MCP SDK outside the tested range?); clients will send no sandbox state",
            " and ".join(SANDBOX_CAPABILITIES),
            ctx.method,
        )
        return result
    experimental = capabilities.get("experimental") or {}
    capabilities["experimental"] = {**experimental, **EXPERIMENTAL_CAPABILITIES}
    return result


def sandbox_request(
    ctx: Context[Any, Any] | ServerRequestContext[Any, Any], *, allow_unsandboxed: bool = False
) -> SandboxRequest:
    """The ``SandboxRequest`` of the tool call ``ctx`` belongs to.

    ``ctx`` is an ``MCPServer`` tool's ``Context`` or a low-level handler's request
    context. ``allow_unsandboxed`` must come from the operator's configuration. This is
    ``SandboxRequest.from_meta``: the launcher is verified, never taken on trust.
    """
    request_context = ctx.request_context if isinstance(ctx, Context) else ctx
    return SandboxRequest.from_meta(request_context.meta, allow_unsandboxed=allow_unsandboxed)
