"""The sandbox state as an opaque, original JSON value (never a typed model).

Codex parses the state itself and ignores unknown fields; everybody in between
forwards it unchanged. ``SandboxState`` keeps the original text beside the
parsed object so a serializer can emit it byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from launcher_probe.errors import InputRejected
from launcher_probe.json_input import (
    STATE_LIMITS,
    InvalidJSON,
    JSONLimitExceeded,
    MalformedJSON,
    checked_value,
    loads_strict,
)

__all__ = ["InvalidJSON", "InvalidSandboxState", "SandboxState", "loads_strict"]


class InvalidSandboxState(InputRejected, ValueError):
    """The state is not a JSON object within ``STATE_LIMITS`` that survives a faithful
    round trip."""

    reason = "invalid_sandbox_state"


def _refused(error: InvalidJSON) -> InvalidSandboxState:
    """The state's refusal for ``error``; JSON that parses but is not strict keeps the
    reason ``invalid_json`` that every other argument gives it."""
    refused = InvalidSandboxState(str(error))
    if not isinstance(error, MalformedJSON | JSONLimitExceeded):
        refused.reason = error.reason
    return refused


@dataclass(frozen=True, slots=True)
class SandboxState:
    """The state value: ``text`` as received (or compact), ``value`` the same, parsed."""

    text: str
    value: dict[str, Any]

    @classmethod
    def from_text(cls, text: str) -> SandboxState:
        """Parse JSON text strictly (``loads_strict`` within ``STATE_LIMITS``): an object."""
        try:
            value = loads_strict(text, "sandbox state", STATE_LIMITS)
        except InvalidJSON as error:
            raise _refused(error) from error
        if not isinstance(value, dict):
            raise InvalidSandboxState("sandbox state must be a JSON object")
        return cls(text, value)

    @classmethod
    def from_value(cls, value: Any) -> SandboxState:
        """Wrap an already-parsed object; its text is the compact serialisation, keys in order."""
        if isinstance(value, SandboxState):
            return value
        if not isinstance(value, dict):
            raise InvalidSandboxState("sandbox state must be a JSON object")
        try:
            text = checked_value(value, "sandbox state", STATE_LIMITS)
        except InvalidJSON as error:
            raise _refused(error) from error
        return cls.from_text(text)
