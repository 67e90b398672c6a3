"""The metadata injector: ``_meta`` for ``tools/call`` and ``resources/read``.

Pure functions over plain data. Given a server description, the sandbox state,
the caller's metadata and the ``Decision`` the server was launched under, they
build the ``_meta`` object Codex 0.169.0 would send, reject keys a caller may
never set, and say why the launcher was left out when it was.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from launcher_probe.contract import (
    CODEX_APPS_OBJECT_KEY,
    CODEX_APPS_RESERVED_KEYS,
    CODEX_APPS_RESERVED_NESTED_KEY,
    CODEX_APPS_SERVER,
    HOST_OWNED_KEYS,
    SANDBOX_CAPABILITIES,
    SANDBOX_KEYS,
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    LauncherDescriptor,
    Reason,
)
from launcher_probe.errors import InputRejected
from launcher_probe.host.decision import Decision, Published, Withheld
from launcher_probe.state import SandboxState

#: The MCP progress token: set by the host after every other key.
PROGRESS_TOKEN_KEY = "progressToken"  # noqa: S105  (a _meta key, not a secret)
_STATE_KEYS = (SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY)
_JSON_WHITESPACE = " \t\n\r"


class MetaRejected(InputRejected):
    """Request metadata was rejected; nothing is sent (fail closed)."""


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
        object.__setattr__(self, "transport", Transport(self.transport))
        if not isinstance(self.capabilities, Mapping | None):
            raise TypeError("capabilities must be the experimental capabilities object")

    def wants_sandbox_state(self) -> bool:
        """True when either sandbox capability is advertised (its value is ignored)."""
        advertised = self.capabilities or {}
        return any(name in advertised for name in SANDBOX_CAPABILITIES)


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
        """``{"included": bool, "reason": str | None, "detail": str}``."""
        reason = None if self.omitted_reason is None else self.omitted_reason.value
        return {"included": self.launcher_included, "reason": reason, "detail": self.detail}


#: The sandbox state as a ``SandboxState``, JSON text, or an already-parsed object.
StateInput = SandboxState | str | Mapping[str, Any] | None
#: The Decision bound at the server's launch, or a callable that makes it on demand
#: (called on each request that could carry the launcher: for one-shot use before a launch,
#: never for a running server), or ``None`` for a server with no launcher.
LauncherInput = Decision | Callable[[], Decision] | None


def tool_call_meta(
    server: ServerDescription,
    *,
    sandbox_state: StateInput,
    launcher: LauncherInput,
    caller_meta: object = None,
    host_meta: Mapping[str, Any] | None = None,
    progress_token: str | int | None = None,
) -> MetaResult:
    """``_meta`` for a ``tools/call`` request.

    Raises ``MetaRejected`` for refused metadata and ``InvalidSandboxState`` for a bad state.
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
    host_meta: Mapping[str, Any] | None = None,
    progress_token: str | int | None = None,
) -> MetaResult:
    """``_meta`` for a ``resources/read`` request.

    ``thread_id`` and ``origin_call_id`` bind the read to a thread and to the tool call
    it came from; they are checked (``originCallId requires threadId``), not copied into
    ``_meta``: a host that wants ``threadId`` there passes it in ``host_meta``.
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


def dumps_meta(result: MetaResult, *, indent: int | None = None, explain: bool = False) -> str:
    """JSON text of ``result.meta`` with the state keys spliced in as the state's original text.

    With ``explain``: ``{"meta": <meta>, "launcher": <result.explanation()>}``.
    """
    if not explain:
        return _render_object(_meta_members(result, indent, 1), indent, 0)
    members = [
        ("meta", _render_object(_meta_members(result, indent, 2), indent, 1)),
        ("launcher", _encode(result.explanation(), indent, 1)),
    ]
    return _render_object(members, indent, 0)


# --- building ----------------------------------------------------------------


def _build(
    method: Method,
    server: ServerDescription,
    *,
    sandbox_state: StateInput,
    launcher: LauncherInput,
    caller_meta: object,
    host_meta: Mapping[str, Any] | None,
    progress_token: str | int | None,
    binding: tuple[str | None, str | None] = (None, None),
) -> MetaResult:
    caller = _caller_object(caller_meta)
    host = dict(host_meta or {})
    _check_host_keys(host)
    _check_caller_keys(method, server, caller, host)
    thread_id, origin_call_id = binding
    if origin_call_id is not None and thread_id is None:
        raise MetaRejected("originCallId requires threadId")
    state = _sandbox_state(sandbox_state)

    meta = {**caller, **host}
    sent = state if server.wants_sandbox_state() else None
    if sent is not None:
        meta[SANDBOX_STATE_KEY] = sent.value
        meta[SANDBOX_STATE_META_KEY] = sent.value
    descriptor, reason, detail = _launcher_verdict(server, state, launcher)
    if descriptor is not None:
        meta[SANDBOX_LAUNCHER_KEY] = descriptor.to_json()
    if progress_token is not None:
        meta.pop(PROGRESS_TOKEN_KEY, None)
        meta[PROGRESS_TOKEN_KEY] = progress_token
    return MetaResult(meta, descriptor is not None, reason, detail, sent)


def _caller_object(caller_meta: object) -> dict[str, Any]:
    if caller_meta is None:
        return {}
    if not isinstance(caller_meta, Mapping):
        raise MetaRejected(f"invalid type: {_json_kind(caller_meta)}, expected a map")
    for key in caller_meta:
        if not isinstance(key, str):
            raise MetaRejected(f"invalid type: {_json_kind(key)} key, expected a string")
    return dict(caller_meta)


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "sequence"
    return type(value).__name__


def _check_host_keys(host: dict[str, Any]) -> None:
    for key in (*SANDBOX_KEYS, PROGRESS_TOKEN_KEY):
        if key in host:
            raise MetaRejected(f"host metadata must not set {key}: the injector sets it")


def _check_caller_keys(
    method: Method, server: ServerDescription, caller: dict[str, Any], host: dict[str, Any]
) -> None:
    apps = server.name == CODEX_APPS_SERVER
    for key, value in caller.items():
        reserved = _reserved_key(key, value, apps=apps, host=host)
        if reserved is not None:
            raise MetaRejected(f"reserved {_METHOD_NOUN[method]} metadata key: {reserved}")


def _reserved_key(key: str, value: Any, *, apps: bool, host: dict[str, Any]) -> str | None:
    """The reserved key this caller entry sets (dotted when nested), or None."""
    if key in HOST_OWNED_KEYS or key in host or (apps and key in CODEX_APPS_RESERVED_KEYS):
        return key
    nested = apps and key == CODEX_APPS_OBJECT_KEY and isinstance(value, Mapping)
    if nested and CODEX_APPS_RESERVED_NESTED_KEY in value:
        return f"{CODEX_APPS_OBJECT_KEY}.{CODEX_APPS_RESERVED_NESTED_KEY}"
    return None


def _sandbox_state(sandbox_state: StateInput) -> SandboxState | None:
    if sandbox_state is None or isinstance(sandbox_state, SandboxState):
        return sandbox_state
    if isinstance(sandbox_state, str):
        return SandboxState.from_text(sandbox_state)
    return SandboxState.from_value(dict(sandbox_state))


def _launcher_verdict(
    server: ServerDescription, state: SandboxState | None, launcher: LauncherInput
) -> tuple[LauncherDescriptor | None, Reason | None, str]:
    if not server.wants_sandbox_state():
        names = " or ".join(SANDBOX_CAPABILITIES)
        return None, Reason.CAPABILITY_NOT_ADVERTISED, f"server does not advertise {names}"
    if state is None:
        return None, Reason.NO_SANDBOX_STATE, "no sandbox state was given for this request"
    if server.transport is not Transport.STDIO:
        detail = f"the {server.transport} transport shares no filesystem with the host"
        return None, Reason.TRANSPORT_NOT_STDIO, detail
    if launcher is None:
        raise ValueError("a stdio server needs the Decision made before its launch")
    decision = launcher if isinstance(launcher, Published | Withheld) else launcher()
    if not isinstance(decision, Published):
        return None, decision.reason, decision.detail
    if not decision.fingerprint.still_matches():
        path = decision.descriptor.codex_executable
        detail = f"{path} changed since it was verified; resolve again before the next launch"
        return None, Reason.BINARY_CHANGED, detail
    return decision.descriptor, None, ""


# --- rendering ---------------------------------------------------------------


def _meta_members(result: MetaResult, indent: int | None, depth: int) -> list[tuple[str, str]]:
    state = result.state
    members = []
    for key, value in result.meta.items():
        if state is not None and key in _STATE_KEYS and value is state.value:
            members.append((key, state.text.strip(_JSON_WHITESPACE)))  # byte for byte
        else:
            members.append((key, _encode(value, indent, depth)))
    return members


def _encode(value: Any, indent: int | None, depth: int) -> str:
    if indent is None:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent)
    return text.replace("\n", "\n" + " " * (indent * depth))


def _render_object(members: list[tuple[str, str]], indent: int | None, depth: int) -> str:
    if not members:
        return "{}"
    colon = ":" if indent is None else ": "
    items = [json.dumps(key, ensure_ascii=False) + colon + text for key, text in members]
    if indent is None:
        return "{" + ",".join(items) + "}"
    inner = "\n" + " " * (indent * (depth + 1))
    return "{" + inner + ("," + inner).join(items) + "\n" + " " * (indent * depth) + "}"
