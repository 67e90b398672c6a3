"""The wire contract shared by the host side and the server side.

Names here are exactly what Codex CLI 0.169.0 sends; see the seed's
"Sandbox request metadata"; docs/json.md documents the reason codes.
"""

from __future__ import annotations

import enum
import os

from launcher_probe.errors import InputRejected
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CODEX_APPS_OBJECT_KEY",
    "CODEX_APPS_RESERVED_KEYS",
    "CODEX_APPS_RESERVED_NESTED_KEY",
    "CODEX_APPS_SERVER",
    "CODEX_EXECUTABLE_FIELD",
    "ENV_VAR",
    "HOST_OWNED_KEYS",
    "SANDBOX_CAPABILITIES",
    "SANDBOX_KEYS",
    "SANDBOX_LAUNCHER_KEY",
    "SANDBOX_STATE_CAPABILITY",
    "SANDBOX_STATE_KEY",
    "SANDBOX_STATE_META_CAPABILITY",
    "SANDBOX_STATE_META_KEY",
    "SANDBOX_STATE_UPDATE_METHOD",
    "InvalidLauncherDescriptor",
    "LauncherDescriptor",
    "Reason",
    "Source",
]

#: Environment variable naming the operator's Codex executable.
ENV_VAR = "LAUNCHER_PROBE_CODEX"


class Source(enum.StrEnum):
    """Where a candidate came from; the first three are the operator's word."""

    EXPLICIT = "explicit"
    ENV = "env"
    CONFIG = "config"
    HARNESS = "harness"
    STANDALONE = "standalone"
    PATH = "path"
    KNOWN = "known"


#: ``_meta`` key carrying the opaque sandbox policy (preferred name).
SANDBOX_STATE_KEY = "codex/sandbox-state"
#: ``_meta`` key carrying an identical copy of the policy (deprecated alias).
SANDBOX_STATE_META_KEY = "codex/sandbox-state-meta"
#: ``_meta`` key carrying the launcher descriptor.
SANDBOX_LAUNCHER_KEY = "codex/sandbox-launcher"
#: The only field of the launcher descriptor.
CODEX_EXECUTABLE_FIELD = "codexExecutable"

#: Experimental capability a server advertises to receive sandbox metadata.
SANDBOX_STATE_CAPABILITY = "codex/sandbox-state"
#: Deprecated capability name that opts into the same contract.
SANDBOX_STATE_META_CAPABILITY = "codex/sandbox-state-meta"
#: Either capability yields all three sandbox keys.
SANDBOX_CAPABILITIES = (SANDBOX_STATE_CAPABILITY, SANDBOX_STATE_META_CAPABILITY)
#: Legacy request older Codex builds send to servers advertising the capability.
SANDBOX_STATE_UPDATE_METHOD = "codex/sandbox-state/update"

#: Keys the host owns in ``_meta``; a caller (or the model) may never set them.
SANDBOX_KEYS = (SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY, SANDBOX_LAUNCHER_KEY)
HOST_OWNED_KEYS = ("threadId", "x-codex-turn-metadata", "codex/connectionLease", *SANDBOX_KEYS)
#: The hosted-apps server whose routing keys are reserved as well.
CODEX_APPS_SERVER = "codex_apps"
CODEX_APPS_RESERVED_KEYS = ("connector_id", "link_id")
#: ``resource_uri`` inside this object is reserved on ``codex_apps``.
CODEX_APPS_OBJECT_KEY = "_codex_apps"
CODEX_APPS_RESERVED_NESTED_KEY = "resource_uri"


class Reason(enum.StrEnum):
    """Why a launcher was withheld, rejected or omitted. Values are stable wire strings."""

    # path rules
    NOT_FOUND = "not_found"
    NOT_ABSOLUTE = "not_absolute"
    NOT_UTF8 = "not_utf8"
    NOT_REGULAR_FILE = "not_regular_file"
    NOT_EXECUTABLE = "not_executable"
    UNSAFE_PERMISSIONS = "unsafe_permissions"
    SHIM_UNRESOLVED = "shim_unresolved"
    # discovery: what stands between a path and the native binary
    DISPATCHER_UNRESOLVED = "dispatcher_unresolved"
    UNRECOGNISED_SCRIPT = "unrecognised_script"
    NOT_NATIVE = "not_native"
    # not a native executable for this host (a script, another CPU or OS)
    WRONG_PLATFORM = "wrong_platform"
    # verification probe
    NOT_CODEX = "not_codex"
    SANDBOX_UNSUPPORTED = "sandbox_unsupported"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    PROBE_TIMEOUT = "probe_timeout"
    SPAWN_FAILED = "spawn_failed"
    PROBE_FAILED = "probe_failed"
    # cache and resolver
    LOCK_TIMEOUT = "lock_timeout"
    BINARY_CHANGED = "binary_changed"
    # injector
    CAPABILITY_NOT_ADVERTISED = "capability_not_advertised"
    TRANSPORT_NOT_STDIO = "transport_not_stdio"
    NO_SANDBOX_STATE = "no_sandbox_state"


class InvalidLauncherDescriptor(InputRejected, ValueError):
    """A value that is not a launcher descriptor with an absolute ``codexExecutable``."""


class LauncherDescriptor(Value):
    """The value of ``codex/sandbox-launcher``: ``{"codexExecutable": "/abs/path"}``."""

    __slots__ = ("codex_executable",)
    codex_executable: str

    def __init__(self, codex_executable: str) -> None:
        if not isinstance(codex_executable, str):
            raise InvalidLauncherDescriptor(f"{CODEX_EXECUTABLE_FIELD} must be a string")
        if not os.path.isabs(codex_executable):
            shown = repr(codex_executable)
            raise InvalidLauncherDescriptor(f"{CODEX_EXECUTABLE_FIELD} must be absolute: {shown}")
        super().__init__(codex_executable=codex_executable)

    def to_json(self) -> dict[str, str]:
        """The exact wire form."""
        return {CODEX_EXECUTABLE_FIELD: self.codex_executable}

    @classmethod
    def from_json(cls, value: Any) -> LauncherDescriptor:
        """Parse the wire form (unknown fields are ignored); InvalidLauncherDescriptor
        otherwise."""
        if not isinstance(value, dict) or CODEX_EXECUTABLE_FIELD not in value:
            field = CODEX_EXECUTABLE_FIELD
            raise InvalidLauncherDescriptor(f"launcher must be an object with {field!r}")
        path = value[CODEX_EXECUTABLE_FIELD]
        if not isinstance(path, str):
            raise InvalidLauncherDescriptor(f"{CODEX_EXECUTABLE_FIELD} must be a string")
        return cls(path)
