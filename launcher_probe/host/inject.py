"""The metadata injector: ``_meta`` for ``tools/call`` and ``resources/read``.

Pure functions over plain data. Given a server description, the sandbox state,
the caller's metadata and the ``Decision`` the server was launched under, they
build the ``_meta`` object Codex 0.169.0 would send, reject keys a caller may
never set, and say why the launcher was left out when it was.
"""

from __future__ import annotations

import enum
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from launcher_probe.contract import (
    CODEX_APPS_SERVER,
    SANDBOX_CAPABILITIES,
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    LauncherDescriptor,
    Reason,
)
from launcher_probe.host.decision import Decision, Published, Withheld
from launcher_probe.host.meta_input import (
    PROGRESS_TOKEN_KEY,
    HostMeta,
    MetaRejected,
    caller_object,
)
from launcher_probe.json_input import META_LIMITS
from launcher_probe.json_output import dumps_utf8, versioned
from launcher_probe.state import InvalidSandboxState, SandboxState

__all__ = [
    "PROGRESS_TOKEN_KEY",
    "BindingWithToolCall",
    "HostMeta",
    "MetaRejected",
    "MetaResult",
    "Method",
    "ServerDescription",
    "Transport",
    "dumps_meta",
    "request_meta",
    "resource_read_meta",
    "tool_call_meta",
]
_STATE_KEYS = (SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY)
_STATE_CAPABILITY, _META_CAPABILITY = SANDBOX_CAPABILITIES
_JSON_WHITESPACE = " \t\n\r"


class Transport(enum.StrEnum):
    """How the host reaches the server. Only ``stdio`` shares the host's filesystem."""

    STDIO = "stdio"  # a local child process
    HTTP = "http"  # Streamable HTTP or SSE, any URL, loopback included
    REMOTE = "remote"  # a stdio server started by a remote executor


class Method(enum.StrEnum):
    """The MCP request the metadata goes with."""

    TOOLS_CALL = "tools/call"
    RESOURCES_READ = "resources/read"


_METHOD_NOUN = {Method.TOOLS_CALL: "tool call", Method.RESOURCES_READ: "resource read"}


@dataclass(frozen=True, slots=True)
class ServerDescription:
    """A connected server: its name, transport and ``capabilities.experimental`` object
    (``None``, as an SDK gives for a server that declares none, counts as ``{}``)."""

    name: str
    transport: Transport
    capabilities: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "transport", Transport(self.transport))
        except (ValueError, TypeError) as error:
            raise MetaRejected(f"transport must be one of {', '.join(Transport)}") from error
        if not isinstance(self.name, str):
            raise MetaRejected("the server name must be a string")
        if not isinstance(self.capabilities, Mapping | None):
            raise MetaRejected("capabilities must be the experimental capabilities object")

    def wants_sandbox_state(self) -> bool:
        """True when either sandbox capability is advertised (its value is ignored)."""
        advertised = self.capabilities
        if not advertised:
            return False
        return _STATE_CAPABILITY in advertised or _META_CAPABILITY in advertised


@dataclass(frozen=True, slots=True)
class MetaResult:
    """The ``_meta`` to send, whether the launcher is in it, and if not, why not."""

    meta: dict[str, Any]
    launcher_included: bool
    omitted_reason: Reason | None
    detail: str
    #: The state carried by the two state keys (``None`` when they are absent).
    state: SandboxState | None = None

    def explanation(self) -> dict[str, Any]:
        """``{"included": bool, "launcher": {"codexExecutable": ...} | None, "reason": str |
        None, "detail": str}``: the launcher sent, or why none was."""
        reason = None if self.omitted_reason is None else self.omitted_reason.value
        launcher = self.meta.get(SANDBOX_LAUNCHER_KEY) if self.launcher_included else None
        return {
            "included": self.launcher_included,
            "launcher": launcher,
            "reason": reason,
            "detail": self.detail,
        }


#: The sandbox state as a ``SandboxState``, JSON text, or an already-parsed object.
StateInput = SandboxState | str | Mapping[str, Any] | None
#: The Decision bound at the server's launch, or a callable that makes it on demand
#: (called on each request that could carry the launcher: for one-shot use before a launch,
#: never for a running server), or ``None`` for a server with no launcher.
LauncherInput = Decision | Callable[[], Decision] | None
#: The host's keys: a mapping (checked on every call), a ``HostMeta`` checked once per
#: turn, or ``None``.
HostMetaInput = HostMeta | Mapping[str, Any] | None


def tool_call_meta(
    server: ServerDescription,
    *,
    sandbox_state: StateInput,
    launcher: LauncherInput,
    caller_meta: object = None,
    host_meta: HostMetaInput = None,
    progress_token: str | int | None = None,
) -> MetaResult:
    """``_meta`` for a ``tools/call`` request.

    Raises only documented errors, for any arguments: ``MetaRejected`` for refused
    metadata or arguments (a reserved key or its look-alike, JSON over ``META_LIMITS``, a
    capable stdio server without a Decision), ``InvalidSandboxState`` for a bad state, and
    what a ``launcher`` callable raises (``resolve_launcher``: ``ConfigError``).
    """
    return _build(
        Method.TOOLS_CALL,
        server,
        sandbox_state=sandbox_state,
        launcher=launcher,
        caller_meta=caller_meta,
        host_meta=host_meta,
        progress_token=progress_token,
    )


def resource_read_meta(
    server: ServerDescription,
    *,
    sandbox_state: StateInput,
    launcher: LauncherInput,
    caller_meta: object = None,
    thread_id: str | None = None,
    origin_call_id: str | None = None,
    host_meta: HostMetaInput = None,
    progress_token: str | int | None = None,
) -> MetaResult:
    """``_meta`` for a ``resources/read`` request.

    ``thread_id`` and ``origin_call_id`` bind the read to a thread and to the tool call
    it came from; they are checked (``originCallId requires threadId``), not copied into
    ``_meta``: a host that wants ``threadId`` there passes it in ``host_meta``.
    Raises as ``tool_call_meta`` does.
    """
    return _build(
        Method.RESOURCES_READ,
        server,
        sandbox_state=sandbox_state,
        launcher=launcher,
        caller_meta=caller_meta,
        host_meta=host_meta,
        progress_token=progress_token,
        binding=(thread_id, origin_call_id),
    )


class BindingWithToolCall(MetaRejected):
    """``thread_id`` or ``origin_call_id`` given for a ``tools/call``: they bind a
    ``resources/read`` only."""


def request_meta(
    method: Method,
    server: ServerDescription,
    *,
    sandbox_state: StateInput,
    launcher: LauncherInput,
    caller_meta: object = None,
    thread_id: str | None = None,
    origin_call_id: str | None = None,
    host_meta: HostMetaInput = None,
    progress_token: str | int | None = None,
) -> MetaResult:
    """``_meta`` for a request of ``method``, built as :func:`tool_call_meta` or
    :func:`resource_read_meta` builds it: the one dispatch the CLI's ``meta`` and the helper
    share.
    ``BindingWithToolCall`` (before anything is resolved) for a ``tools/call`` with
    ``thread_id`` or ``origin_call_id``; otherwise raises as those do."""
    if method is Method.TOOLS_CALL and (thread_id is not None or origin_call_id is not None):
        raise BindingWithToolCall("thread_id and origin_call_id go with resources/read")
    return _build(
        method,
        server,
        sandbox_state=sandbox_state,
        launcher=launcher,
        caller_meta=caller_meta,
        host_meta=host_meta,
        progress_token=progress_token,
        binding=(thread_id, origin_call_id),
    )


def dumps_meta(result: MetaResult, *, indent: int | None = None, explain: bool = False) -> str:
    """JSON text of ``result.meta`` with the state keys spliced in as the state's original text,
    always valid UTF-8 (``launcher_probe.json_output``); linear in its size.

    With ``explain``: the report ``{"schema": 1, "meta": <meta>, **result.explanation()}``
    (docs/json.md).
    """
    separators = (",", ":") if indent is None else None
    state_text = "" if result.state is None else result.state.text.strip(_JSON_WHITESPACE)
    while True:  # a placeholder no value holds: a fresh random one, checked by counting
        placeholder = f"launcher-probe-state-{secrets.token_hex(16)}"
        meta, spliced = _spliced(result, placeholder)
        document = versioned({"meta": meta, **result.explanation()}) if explain else meta
        try:
            text = dumps_utf8(document, indent=indent, separators=separators)
        except (TypeError, ValueError, RecursionError) as error:  # meta changed after the build
            raise MetaRejected(f"the metadata is not JSON: {error}") from error
        quoted = json.dumps(placeholder)
        if text.count(quoted) == spliced:
            return text.replace(quoted, state_text)


# --- building ----------------------------------------------------------------


def _build(
    method: Method,
    server: ServerDescription,
    *,
    sandbox_state: StateInput,
    launcher: LauncherInput,
    caller_meta: object,
    host_meta: HostMetaInput,
    progress_token: str | int | None,
    binding: tuple[str | None, str | None] = (None, None),
) -> MetaResult:
    caller, caller_size = caller_object(caller_meta)
    turn = host_meta if isinstance(host_meta, HostMeta) else HostMeta(host_meta)
    named = turn.reserved(apps=server.name == CODEX_APPS_SERVER).first_set(caller)
    if named is not None:
        raise MetaRejected(f"reserved {_METHOD_NOUN[method]} metadata key: {named}")
    thread_id, origin_call_id = binding
    if origin_call_id is not None and thread_id is None:
        raise MetaRejected("originCallId requires threadId")
    if progress_token is not None and (
        type(progress_token) is bool or not isinstance(progress_token, (str, int))
    ):
        raise MetaRejected("progressToken must be a string or an integer")
    state = _sandbox_state(sandbox_state)
    size = caller_size + turn.size + (0 if state is None else 2 * len(state.text.encode()))
    if size > META_LIMITS.max_bytes:
        limit = META_LIMITS.max_bytes
        noun = _METHOD_NOUN[method]
        raise MetaRejected(f"the {noun} metadata would be larger than {limit} bytes")

    meta = caller  # a new dict: the host's keys go after the caller's
    meta.update(turn.keys)
    wanted = server.wants_sandbox_state()
    sent = state if wanted else None
    if sent is not None:
        meta[SANDBOX_STATE_KEY] = sent.value
        meta[SANDBOX_STATE_META_KEY] = sent.value
    descriptor, reason, detail = _launcher_verdict(server, wanted, state, launcher)
    if descriptor is not None:
        meta[SANDBOX_LAUNCHER_KEY] = descriptor.to_json()
    if progress_token is not None:
        meta.pop(PROGRESS_TOKEN_KEY, None)
        meta[PROGRESS_TOKEN_KEY] = progress_token
    return MetaResult(meta, descriptor is not None, reason, detail, sent)


def _sandbox_state(sandbox_state: StateInput) -> SandboxState | None:
    if sandbox_state is None or isinstance(sandbox_state, SandboxState):
        return sandbox_state
    if isinstance(sandbox_state, str):
        return SandboxState.from_text(sandbox_state)
    if isinstance(sandbox_state, Mapping):
        return SandboxState.from_value(dict(sandbox_state))
    raise InvalidSandboxState("sandbox state must be a JSON object or its text")


def _launcher_verdict(
    server: ServerDescription, wanted: bool, state: SandboxState | None, launcher: LauncherInput
) -> tuple[LauncherDescriptor | None, Reason | None, str]:
    if not wanted:
        names = " or ".join(SANDBOX_CAPABILITIES)
        return None, Reason.CAPABILITY_NOT_ADVERTISED, f"server does not advertise {names}"
    if state is None:
        return None, Reason.NO_SANDBOX_STATE, "no sandbox state was given for this request"
    if server.transport is not Transport.STDIO:
        detail = f"the {server.transport} transport shares no filesystem with the host"
        return None, Reason.TRANSPORT_NOT_STDIO, detail
    if launcher is None:
        raise MetaRejected("a stdio server needs the Decision made before its launch")
    decision = launcher() if callable(launcher) else launcher
    if isinstance(decision, Published):
        if decision.fingerprint.still_matches():  # the replay, on every request
            return decision.descriptor, None, ""
        path = decision.descriptor.codex_executable
        detail = f"{path} changed since it was verified; resolve again before the next launch"
        return None, Reason.BINARY_CHANGED, detail
    if isinstance(decision, Withheld):
        return None, decision.reason, decision.detail
    raise MetaRejected("launcher must be a Decision or a callable returning one")


# --- rendering ---------------------------------------------------------------


def _spliced(result: MetaResult, placeholder: str) -> tuple[dict[str, Any], int]:
    """``result.meta`` with ``placeholder`` for each state value to splice in, and how many."""
    state = result.state
    meta, count = {}, 0
    for key, value in result.meta.items():
        if state is not None and key in _STATE_KEYS and value is state.value:
            meta[key], count = placeholder, count + 1
        else:
            meta[key] = value
    return meta, count
