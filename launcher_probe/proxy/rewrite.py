"""The host's ``tools/call`` and ``resources/read`` with ``_meta`` set by the injector.

Only a message that names one of the methods the proxy looks at is decoded; every other
message, and every message that cannot be rewritten safely (not UTF-8, not JSON, a key
there twice), goes on exactly as it came. A state the host sent is the host's authority and
stays as sent: only the launcher is added, when the host sent none. Without one, the
operator's policy is the state. The host's own keys keep their text, ``progressToken`` last.
"""

from __future__ import annotations

import json
from typing import Any

from launcher_probe.contract import (
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    Reason,
)
from launcher_probe.errors import InputRejected
from launcher_probe.host.inject import (
    PROGRESS_TOKEN_KEY,
    HostMeta,
    MetaResult,
    ServerDescription,
    Transport,
    resource_read_meta,
    tool_call_meta,
)
from launcher_probe.json_output import dumps_utf8
from launcher_probe.proxy.capabilities import DISCOVERY_METHODS, ServerCapabilities
from launcher_probe.proxy.launcher import BoundLauncher
from launcher_probe.proxy.members import Member, Walked, walk
from launcher_probe.proxy.notes import Notes
from launcher_probe.state import SandboxState

_BUILDERS = {"tools/call": tool_call_meta, "resources/read": resource_read_meta}
_STATE_KEYS = (SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY)
#: A message that holds none of these cannot name a method the proxy looks at ("\/" is
#: JSON's other spelling of "/").
_MARKERS = tuple(
    spelling
    for name in (*_BUILDERS, *DISCOVERY_METHODS)
    for spelling in {name.encode(), name.replace("/", "\\/").encode()}
)
_COMPACT = (",", ":")
_SPACES = " \t\n\r"
#: The members walked into: the request's params, then their ``_meta``.
_PATH = ("params", "_meta")
#: The host's key sets kept checked (a turn's keys stay the same for each of its calls).
MAX_TURNS = 8
#: The host's keys when it sent none but (maybe) a progress token: checked once, here.
_NO_HOST_KEYS = HostMeta({})


class Rewriter:
    """``from_host``: one message from the host, as the server is to receive it."""

    def __init__(
        self,
        server: ServerCapabilities,
        launcher: BoundLauncher,
        policy_state: SandboxState,
        notes: Notes,
    ) -> None:
        self.server = server
        self.launcher = launcher
        self.policy_state = policy_state
        self.notes = notes
        #: The state keys' member texts: the policy state never changes.
        self._state_members = {key: _member(key, policy_state.text) for key in _STATE_KEYS}
        self._described = ServerDescription("", Transport.STDIO, server.experimental)
        self._launcher_member: tuple[object, str] | None = None
        #: The host's keys checked, by their exact member texts (``_turn``).
        self._turns: dict[tuple[str, ...], HostMeta] = {}

    def from_host(self, line: bytes | bytearray) -> bytes | bytearray:
        for marker in _MARKERS:
            if marker in line:
                break
        else:
            return line
        try:
            text = line.decode("utf-8")
            rewritten = self._rewritten(text, walk(text, 0, _PATH))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return line  # not ours to judge: the server answers it as it would without us
        return line if rewritten is None else rewritten.encode("utf-8")

    def _rewritten(self, text: str, message: Walked) -> str | None:
        if text[message.close + 1 :].strip(_SPACES):
            return None
        members = message.by_key()
        method, request_id = members.get("method"), members.get("id")
        if method is None or request_id is None:
            return None  # a notification, or an answer to the server
        if method.value in DISCOVERY_METHODS:
            self.server.expect(request_id.value)
            return None
        build = _BUILDERS.get(method.value) if isinstance(method.value, str) else None
        params = members.get("params")
        if build is None or params is None or params.walked is None:
            return None
        if not self._description().wants_sandbox_state():
            return None
        meta = params.walked.find("_meta")
        if meta is not None and meta.value is not None and meta.walked is None:
            return None  # _meta is no object: the server says so
        host = {} if meta is None or meta.walked is None else meta.walked.by_key()
        try:
            if SANDBOX_STATE_KEY in host or SANDBOX_STATE_META_KEY in host:
                meta_text = self._launcher_added(text, build, host)
            else:
                meta_text = self._policy_applied(text, build, host)
        except InputRejected as error:
            self.notes.once(f"{method.value} relayed unchanged: {error}")
            return None
        if meta_text is None:
            return None
        if meta is not None:
            return text[: meta.value_start] + meta_text + text[meta.end :]
        at = params.walked.open + 1
        comma = "," if params.walked.members else ""
        return f'{text[:at]}"_meta":{meta_text}{comma}{text[at:]}'

    def _description(self) -> ServerDescription:
        """The server as the injector sees it, made again only when its capabilities change.
        The name the host gives it is not known here (it matters for codex_apps only)."""
        experimental = self.server.experimental
        if self._described.capabilities is not experimental:
            self._described = ServerDescription("", Transport.STDIO, experimental)
        return self._described

    def _launcher_text(self, value: object) -> str:
        """The launcher's member text, rendered again only when the launcher changes."""
        cached = self._launcher_member
        if cached is None or cached[0] != value:
            rendered = _member(SANDBOX_LAUNCHER_KEY, dumps_utf8(value, separators=_COMPACT))
            cached = self._launcher_member = (value, rendered)
        return cached[1]

    def _turn(self, text: str, host: dict[str, Member]) -> HostMeta:
        """The host's keys (but its progress token) checked, once for each exact text of
        theirs: a host sends the same keys for every call of a turn."""
        members = [member for member in host.values() if member.key != PROGRESS_TOKEN_KEY]
        if not members:
            return _NO_HOST_KEYS
        texts = tuple(member.text(text) for member in members)
        turn = self._turns.get(texts)
        if turn is None:
            turn = HostMeta({member.key: member.value for member in members})
            if len(self._turns) >= MAX_TURNS:
                self._turns.clear()
            self._turns[texts] = turn
        return turn

    def _built(self, build: Any, state: object, **options: Any) -> MetaResult:
        result: MetaResult = build(
            self._description(), sandbox_state=state, launcher=self.launcher.decision, **options
        )
        if result.omitted_reason is Reason.BINARY_CHANGED:
            self.notes.once(f"launcher left out ({result.omitted_reason}): {result.detail}")
            self.launcher.renew(self.notes.once)
        return result

    def _launcher_added(self, text: str, build: Any, host: dict[str, Member]) -> str | None:
        """The host's ``_meta`` with the launcher added before ``progressToken``, or None
        when the host sent one already or there is none to add."""
        if SANDBOX_LAUNCHER_KEY in host:
            return None
        state = host.get(SANDBOX_STATE_KEY) or host[SANDBOX_STATE_META_KEY]
        result = self._built(build, state.value)
        if not result.launcher_included:
            return None
        parts = [member.text(text) for member in host.values() if member.key != PROGRESS_TOKEN_KEY]
        parts.append(self._launcher_text(result.meta[SANDBOX_LAUNCHER_KEY]))
        token = host.get(PROGRESS_TOKEN_KEY)
        if token is not None:
            parts.append(token.text(text))
        return "{" + ",".join(parts) + "}"

    def _policy_applied(self, text: str, build: Any, host: dict[str, Member]) -> str:
        """``_meta`` for the operator's policy: the host's keys as sent, the injector's after."""
        token = host.get(PROGRESS_TOKEN_KEY)
        result = self._built(
            build,
            self.policy_state,
            host_meta=self._turn(text, host),
            progress_token=None if token is None else token.value,
        )
        parts = []
        for key, value in result.meta.items():
            member = host.get(key)
            if member is not None:
                parts.append(member.text(text))
            elif key in self._state_members:
                parts.append(self._state_members[key])
            elif key == SANDBOX_LAUNCHER_KEY:
                parts.append(self._launcher_text(value))
            else:
                parts.append(_member(key, dumps_utf8(value, separators=_COMPACT)))
        return "{" + ",".join(parts) + "}"


def _member(key: str, value_text: str) -> str:
    return f"{json.dumps(key, ensure_ascii=False)}:{value_text}"
