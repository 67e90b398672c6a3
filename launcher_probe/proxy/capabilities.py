"""What the server behind the proxy advertises, learnt from its answer to ``initialize``
(or, in MCP 2026-07-28 where ``initialize`` is gone, to ``server/discover``).

Only the answers to those requests are decoded: while none is awaited, a message from the
server is not looked at at all. Only a result that holds a ``capabilities`` object teaches
anything (a host cannot pass off a ``ping``'s ``{}`` under the id of an ``initialize``), and
a server learnt to take the sandbox state is never taken to have dropped it: the proxy
would then relay what a host sets."""

from __future__ import annotations

import json
from _thread import allocate_lock
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from launcher_probe.contract import SANDBOX_CAPABILITIES

#: The requests whose result carries the server's capabilities.
DISCOVERY_METHODS = ("initialize", "server/discover")
#: Requests awaited at once; beyond, the oldest is forgotten.
MAX_AWAITED = 16
#: A larger message from the server is never decoded (no such result is that large).
INSPECT_LIMIT = 4 << 20


class ServerCapabilities:
    """The server's ``capabilities.experimental`` (None until learnt). Also what becomes of
    a message of the server's past ``INSPECT_LIMIT`` (``framing.LongMessages``): it goes on
    unread, and ``on_unread`` runs when a discovery answer was awaited meanwhile and nothing
    was learnt yet (it may have been that answer: nothing is learnt from it)."""

    def __init__(
        self, on_learnt: Callable[[ServerCapabilities], None], on_unread: Callable[[], None]
    ) -> None:
        self.experimental: Mapping[str, Any] | None = None
        self._awaited: list[str | int | float] = []
        self._lock = allocate_lock()
        self._on_learnt = on_learnt
        self._on_unread = on_unread

    def passes(self) -> bool:
        """A message past ``INSPECT_LIMIT`` goes on as it comes, unread."""
        if self._awaited and self.experimental is None:
            self._on_unread()
        return True

    def dropped(self, head: bytes, tail: bytes) -> bytes:
        return b""  # (none is: each passes)

    @property
    def wants_sandbox_state(self) -> bool:
        return _advertises_state(self.experimental)

    def expect(self, request_id: object) -> None:
        """The host sent a discovery request with this id: look at its answer."""
        if not _an_id(request_id):
            return
        with self._lock:
            self._awaited.append(request_id)
            del self._awaited[:-MAX_AWAITED]

    @property
    def awaiting(self) -> bool:
        """A discovery request is unanswered."""
        return bool(self._awaited)

    def awaits(self, request_id: object) -> bool:
        """A discovery request with this id is still unanswered (another request of the
        host's under it could have its answer taken for the discovery's)."""
        if not _an_id(request_id):
            return False
        with self._lock:
            return request_id in self._awaited

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
        answered, result = message.get("id"), message.get("result")
        capabilities = result.get("capabilities") if isinstance(result, dict) else None
        if not isinstance(capabilities, dict):
            return line  # no discovery result (an error, or another request's answer)
        with self._lock:
            if isinstance(answered, bool) or answered not in self._awaited:
                return line
            self._awaited.remove(answered)
        experimental = capabilities.get("experimental")
        learnt = experimental if isinstance(experimental, dict) else {}
        if self.wants_sandbox_state and not _advertises_state(learnt):
            return line  # once it takes the state, it takes it: the proxy keeps adding it
        self.experimental = learnt
        self._on_learnt(self)
        return line


def _an_id(request_id: object) -> TypeGuard[str | int | float]:
    """Whether ``request_id`` is a JSON-RPC id that can be awaited: a string or a number.
    JSON has one kind of number, so ``1.0`` is the id ``1`` (``1.0 == 1`` here too, and a
    JavaScript server answers it as ``1``)."""
    return not isinstance(request_id, bool) and isinstance(request_id, str | int | float)


def _advertises_state(experimental: Mapping[str, Any] | None) -> bool:
    """``capabilities.experimental`` names either sandbox capability."""
    return any(name in (experimental or {}) for name in SANDBOX_CAPABILITIES)
