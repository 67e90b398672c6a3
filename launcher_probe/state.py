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

from launcher_probe.errors import InputRejected


class InvalidJSON(ValueError):
    """Text that is not strict JSON (see ``loads_strict``)."""


class InvalidSandboxState(InputRejected, ValueError):
    """The state is not a JSON object that survives a faithful round trip."""


def loads_strict(text: str, what: str) -> Any:
    """``json.loads`` that rejects NaN/Infinity, out-of-range numbers, repeated keys and
    lone surrogates (``"\\ud800"`` parses, but is no UTF-8 text: Codex refuses it).

    Errors are ``InvalidJSON`` whose message starts with ``what``.
    """

    def reject_constant(name: str) -> Any:
        raise InvalidJSON(f"{what} contains {name}, which is not JSON")

    def parse_float(number: str) -> float:
        value = float(number)
        if math.isinf(value):
            raise InvalidJSON(f"{what} number {number} is out of range")
        return value

    def parse_int(number: str) -> int:
        try:
            return int(number)
        except ValueError as error:  # longer than sys.get_int_max_str_digits()
            raise InvalidJSON(f"{what} number is too long: {error}") from error

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                raise InvalidJSON(f"{what} repeats the key {key!r}")
            result[key] = value
        return result

    try:
        value = json.loads(
            text,
            parse_constant=reject_constant,
            parse_float=parse_float,
            parse_int=parse_int,
            object_pairs_hook=unique_keys,
        )
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except json.JSONDecodeError as error:
        raise InvalidJSON(f"{what} is not valid JSON: {error}") from error
    except RecursionError as error:
        raise InvalidJSON(f"{what} is nested too deeply") from error
    except UnicodeEncodeError as error:
        code = ord(error.object[error.start])
        raise InvalidJSON(
            f"{what} contains a lone surrogate (\\u{code:04x}), which is not UTF-8"
        ) from error
    return value


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
            value = loads_strict(text, "sandbox state")
        except InvalidJSON as error:
            raise InvalidSandboxState(str(error)) from error
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
