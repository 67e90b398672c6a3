"""Host-side glue for the official MCP Python SDK's client (install the ``mcp`` extra).

A Python MCP runtime launching a stdio server needs three lines::

    async with sandboxed_stdio_session(parameters, name="shell") as session:
        result = await session.call_tool("run", {"command": ["make"]}, sandbox_state=state)
        contents = await session.read_resource("file:///notes", sandbox_state=state)

The launcher is resolved once, before ``stdio_client`` starts the server, and that
Decision is bound to the session; the server's ``capabilities.experimental`` come from its
``initialize`` result; every ``call_tool`` and ``read_resource`` carries the injector's
``_meta`` (``launcher_probe.host.inject``) for the sandbox state the host gives per call.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, TextIO, cast

from launcher_probe.extras import missing_mcp_extra

try:
    import anyio.to_thread
    from mcp import ClientSession, StdioServerParameters, stdio_client, types
    from mcp.shared.dispatcher import ProgressFnT
    from mcp.types import RequestParamsMeta
except ImportError as error:
    raise missing_mcp_extra(__name__) from error

from launcher_probe.contract import Reason
from launcher_probe.host.decision import Decision
from launcher_probe.host.inject import (
    MetaResult,
    ServerDescription,
    StateInput,
    Transport,
    resource_read_meta,
    tool_call_meta,
)

__all__ = ["SandboxedSession", "sandboxed_stdio_session"]

log = logging.getLogger("launcher_probe.host")

#: Omissions that say nothing about the launcher (the server or the request wants none).
_NOT_ABOUT_THE_LAUNCHER = frozenset(
    {Reason.CAPABILITY_NOT_ADVERTISED, Reason.NO_SANDBOX_STATE, Reason.TRANSPORT_NOT_STDIO}
)


class SandboxedSession:
    """A ``ClientSession`` bound to the launcher Decision made before its server started.

    ``call_tool`` and ``read_resource`` build ``_meta`` with the injector: the caller's
    ``meta`` (checked: a reserved key raises ``MetaRejected``), the host's ``host_meta``,
    the ``sandbox_state`` of this call, and the launcher while the bound binary is
    unchanged (else it is left out, ``binary_changed``, and logged).
    """

    def __init__(
        self,
        session: ClientSession,
        server: ServerDescription,
        decision: Decision,
        initialized: types.InitializeResult,
    ) -> None:
        self.session = session
        self.server = server
        self.decision = decision
        self.initialized = initialized

    def tool_call_meta(
        self,
        *,
        sandbox_state: StateInput,
        meta: Mapping[str, Any] | None = None,
        host_meta: Mapping[str, Any] | None = None,
    ) -> MetaResult:
        """The ``_meta`` ``call_tool`` sends for these arguments (``tool_call_meta``)."""
        return _noted(
            tool_call_meta(
                self.server,
                sandbox_state=sandbox_state,
                launcher=self.decision,
                caller_meta=meta,
                host_meta=host_meta,
            ),
            "tools/call",
        )

    def resource_read_meta(
        self,
        *,
        sandbox_state: StateInput,
        meta: Mapping[str, Any] | None = None,
        thread_id: str | None = None,
        origin_call_id: str | None = None,
        host_meta: Mapping[str, Any] | None = None,
    ) -> MetaResult:
        """The ``_meta`` ``read_resource`` sends for these arguments (``resource_read_meta``)."""
        return _noted(
            resource_read_meta(
                self.server,
                sandbox_state=sandbox_state,
                launcher=self.decision,
                caller_meta=meta,
                thread_id=thread_id,
                origin_call_id=origin_call_id,
                host_meta=host_meta,
            ),
            "resources/read",
        )

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        sandbox_state: StateInput,
        meta: Mapping[str, Any] | None = None,
        host_meta: Mapping[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: ProgressFnT | None = None,
    ) -> types.CallToolResult:
        """``tools/call`` with the injector's ``_meta``. With ``progress_callback`` the SDK
        sets ``progressToken`` (after every other key, as Codex does)."""
        built = self.tool_call_meta(sandbox_state=sandbox_state, meta=meta, host_meta=host_meta)
        return await self.session.call_tool(
            name,
            arguments,
            read_timeout_seconds,
            progress_callback,
            meta=cast(RequestParamsMeta, built.meta),  # an open map, as the SDK's TypedDict
        )

    async def read_resource(
        self,
        uri: str,
        *,
        sandbox_state: StateInput,
        meta: Mapping[str, Any] | None = None,
        thread_id: str | None = None,
        origin_call_id: str | None = None,
        host_meta: Mapping[str, Any] | None = None,
    ) -> types.ReadResourceResult:
        """``resources/read`` with the injector's ``_meta``."""
        built = self.resource_read_meta(
            sandbox_state=sandbox_state,
            meta=meta,
            thread_id=thread_id,
            origin_call_id=origin_call_id,
            host_meta=host_meta,
        )
        return await self.session.read_resource(uri, meta=cast(RequestParamsMeta, built.meta))


@asynccontextmanager
async def sandboxed_stdio_session(
    parameters: StdioServerParameters,
    *,
    name: str = "",
    codex: str | None = None,
    decision: Decision | None = None,
    errlog: TextIO = sys.stderr,
    **session_options: Any,
) -> AsyncIterator[SandboxedSession]:
    """Resolve the launcher (``resolve_launcher(codex)`` in a worker thread, unless the
    host passes the ``decision`` it made), then start the server, initialize, and yield
    the session bound to that decision. ``name`` is the server's name as the host knows it;
    ``session_options`` go to ``ClientSession``. Raises what ``resolve_launcher`` raises
    (``ConfigError``) before anything starts, and the SDK's own errors (a server that cannot
    start, a closed connection) as the SDK raises them; the server is stopped on the way out.
    """
    if decision is None:
        from launcher_probe.host.resolver import resolve_launcher

        decision = await anyio.to_thread.run_sync(resolve_launcher, codex)
    async with (
        stdio_client(parameters, errlog=errlog) as (read, write),
        ClientSession(read, write, **session_options) as session,
    ):
        initialized = await session.initialize()
        experimental = initialized.capabilities.experimental
        server = ServerDescription(name, Transport.STDIO, experimental)
        yield SandboxedSession(session, server, decision, initialized)


def _noted(result: MetaResult, method: str) -> MetaResult:
    """``result``, logging a launcher the server could have had but was left out."""
    if result.omitted_reason is not None and result.omitted_reason not in _NOT_ABOUT_THE_LAUNCHER:
        log.warning(
            "launcher left out of %s _meta: %s: %s", method, result.omitted_reason, result.detail
        )
    return result
