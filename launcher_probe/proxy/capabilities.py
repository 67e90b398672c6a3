"""What the server behind the proxy advertises, learnt from its answer to ``initialize``
(or, in MCP 2026-07-28 where ``initialize`` is gone, to ``server/discover``).

Only the answers to those requests are decoded: while none is awaited, a message from the
server is not looked at at all."""

from __future__ import annotations

import json
from _thread import allocate_lock
from collections.abc import Callable, Mapping
from typing import Any

from launcher_probe.contract import SANDBOX_CAPABILITIES

#: The requests whose result carries the server's capabilities.
DISCOVERY_METHODS = ("initialize", "server/discover")
#: Requests awaited at once; beyond, the oldest is forgotten.
MAX_AWAITED = 16
#: A larger message from the server is never decoded (no such result is that large).
INSPECT_LIMIT = 4 << 20


class ServerCapabilities:
    """The server's ``capabilities.experimental`` (None until learnt)."""

    def __init__(self, on_learnt: Callable[[ServerCapabilities], None]) -> None:
        self.experimental: Mapping[str, Any] | None = None
        self._awaited: list[str | int] = []
        self._lock = allocate_lock()
        self._on_learnt = on_learnt

    @property
    def wants_sandbox_state(self) -> bool:
        advertised = self.experimental or {}
        return any(name in advertised for name in SANDBOX_CAPABILITIES)

    def expect(self, request_id: object) -> None:
        """The host sent a discovery request with this id: look at its answer."""
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return
        with self._lock:
            self._awaited.append(request_id)
            del self._awaited[:-MAX_AWAITED]

    def observe(self, line: bytes | bytearray) -> bytes | bytearray:
        """``line`` unchanged; learnt from when it answers an awaited request."""
        if not self._awaited or len(line) > INSPECT_LIMIT or b'"id"' not in line:
            return line
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
            return line
        if not isinstance(message, dict) or "method" in message:
            return line
        answered = message.get("id")
        with self._lock:
            if isinstance(answered, bool) or answered not in self._awaited:
                return line
            self._awaited.remove(answered)
        result = message.get("result")
        if isinstance(result, dict):
            capabilities = result.get("capabilities")
            experimental = (
                capabilities.get("experimental") if isinstance(capabilities, dict) else None
            )
            self.experimental = experimental if isinstance(experimental, dict) else {}
            self._on_learnt(self)
        return line
