"""The sandbox state as an opaque, original JSON value (never a typed model).

Codex parses the state itself and ignores unknown fields; everybody in between
forwards it unchanged. ``SandboxState`` keeps the original text beside the
parsed object so a serializer can emit it byte for byte.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any


class InvalidSandboxState(ValueError):
    """The state is not a JSON object that survives a faithful round trip."""


def _reject_constant(name: str) -> Any:
    raise InvalidSandboxState(f"sandbox state contains {name}, which is not JSON")


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise InvalidSandboxState(f"sandbox state number {text} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise InvalidSandboxState(f"sandbox state repeats the key {key!r}")
        result[key] = value
    return result


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidSandboxState(f"sandbox state is not JSON: {error}") from error


@dataclass(frozen=True, slots=True)
class SandboxState:
    """The state value: ``text`` as received (or compact), ``value`` the same, parsed."""

    text: str
    value: dict[str, Any]

    @classmethod
    def from_text(cls, text: str) -> SandboxState:
        """Parse JSON text strictly: an object, no NaN/Infinity, no overflow, no repeated key."""
        try:
            value = json.loads(
                text,
                parse_constant=_reject_constant,
                parse_float=_parse_float,
                object_pairs_hook=_unique_keys,
            )
        except json.JSONDecodeError as error:
            raise InvalidSandboxState(f"sandbox state is not valid JSON: {error}") from error
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
        return cls.from_text(_compact(value))

    def compact_text(self) -> str:
        """One-line JSON of the value, every field in its original order."""
        return _compact(self.value)
