"""The helper's wire protocol, version 1: JSON lines over a Unix stream socket.

A request is one line holding an object ``{"v": 1, "op": NAME, ...}``; the answer is one
line, ``{"v": 1, "ok": true, "result": {...}}`` or
``{"v": 1, "ok": false, "error": {"reason": CODE, "detail": TEXT}}``. An optional ``"id"``
(a string or an integer) is echoed back. ``docs/protocol.md`` is the reference.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable
from typing import Any

from launcher_probe.json_input import Limits
from launcher_probe.json_output import dumps_utf8, versioned
from launcher_probe.state import InvalidJSON, loads_strict

VERSION = 1
#: The longest request line accepted, newline included.
MAX_REQUEST_BYTES = 1 << 20
#: A request line as JSON: the whole line, and a ``_meta`` (64 levels) inside the request
#: object (each field is then checked within its own limits, as everywhere).
REQUEST_LIMITS = Limits(max_bytes=MAX_REQUEST_BYTES, max_depth=66)
#: The longest probe deadline a request may ask for, in seconds.
MAX_TIMEOUT = 600.0


class ErrorReason(enum.StrEnum):
    """Why a request got no result. Values are stable wire strings."""

    MALFORMED_REQUEST = "malformed_request"  # not UTF-8, not JSON, not an object
    REQUEST_TOO_LARGE = "request_too_large"  # over MAX_REQUEST_BYTES; the connection closes
    UNSUPPORTED_VERSION = "unsupported_version"  # "v" is missing or not 1
    UNKNOWN_OP = "unknown_op"
    INVALID_ARGUMENT = "invalid_argument"  # a field of the wrong type, or unknown
    INPUT_REJECTED = "input_rejected"  # the injector or the config refused the input
    PEER_REFUSED = "peer_refused"  # another user; the connection closes
    BUSY = "busy"  # too many connections; the connection closes
    IDLE_TIMEOUT = "idle_timeout"  # silent too long (or a line never finished); closes
    SHUTTING_DOWN = "shutting_down"  # the helper stopped before it could answer
    INTERNAL_ERROR = "internal_error"


#: Reasons after which the helper closes the connection.
CLOSING = frozenset(
    {
        ErrorReason.REQUEST_TOO_LARGE,
        ErrorReason.PEER_REFUSED,
        ErrorReason.BUSY,
        ErrorReason.IDLE_TIMEOUT,
        ErrorReason.SHUTTING_DOWN,
    }
)


class ProtocolError(Exception):
    """A request that cannot be answered with a result; becomes an error line."""

    def __init__(self, reason: ErrorReason, detail: str, request_id: object = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.request_id = request_id


# --- fields ------------------------------------------------------------------


def _optional_text(name: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{name} must be a string or null")


def _flag(name: str, value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    raise ValueError(f"{name} must be true or false")


def _seconds(name: str, value: Any) -> float | None:
    if value is None:
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not 0 < value <= MAX_TIMEOUT or not math.isfinite(value):
        raise ValueError(f"{name} must be a number of seconds above 0, at most {MAX_TIMEOUT:g}")
    return float(value)


def _optional_object(name: str, value: Any) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    raise ValueError(f"{name} must be an object or null")


def _state(name: str, value: Any) -> str | dict[str, Any] | None:
    if value is None or isinstance(value, str | dict):
        return value
    raise ValueError(f"{name} must be an object, its JSON text, or null")


def _anything(name: str, value: Any) -> Any:
    return value  # checked by the injector itself (caller metadata)


def _token(name: str, value: Any) -> str | int | None:
    if value is None or isinstance(value, str) or (type(value) is int):
        return value
    raise ValueError(f"{name} must be a string, an integer or null")


def _server(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("transport"), str):
        raise ValueError(f'{name} must be an object with "transport" (and "name", "capabilities")')
    unknown = set(value) - {"name", "transport", "capabilities"}
    if unknown:
        raise ValueError(f"{name} has unknown fields: {', '.join(sorted(unknown))}")
    if not isinstance(value.get("name", ""), str):
        raise ValueError(f"{name}.name must be a string")
    _optional_object(f"{name}.capabilities", value.get("capabilities"))
    return value


_Field = Callable[[str, Any], Any]

#: Every operation and the fields its request may carry (each optional unless noted).
OPERATIONS: dict[str, dict[str, _Field]] = {
    "resolve": {"codex": _optional_text, "refresh": _flag, "timeout": _seconds},
    "meta": {
        "server": _server,  # required
        "method": _optional_text,
        "state": _state,
        "caller_meta": _anything,
        "host_meta": _optional_object,
        "progress_token": _token,
        "thread_id": _optional_text,
        "origin_call_id": _optional_text,
        "codex": _optional_text,
    },
    "status": {},
    "forget": {"codex": _optional_text},
}
_REQUIRED = {"meta": ("server",)}
_ENVELOPE = frozenset({"v", "op", "id"})


class Request:
    """One parsed request: its operation, its checked arguments and its id."""

    __slots__ = ("args", "id", "op")

    def __init__(self, op: str, args: dict[str, Any], request_id: object) -> None:
        self.op = op
        self.args = args
        self.id = request_id


def parse_request(line: bytes) -> Request:
    """Parse one request line (without its newline); ProtocolError when it is unusable."""
    try:
        value = loads_strict(line.decode("utf-8"), "request", REQUEST_LIMITS)
    except UnicodeDecodeError as error:
        raise ProtocolError(ErrorReason.MALFORMED_REQUEST, f"not UTF-8: {error}") from error
    except InvalidJSON as error:
        raise ProtocolError(ErrorReason.MALFORMED_REQUEST, str(error)) from error
    if not isinstance(value, dict):
        raise ProtocolError(ErrorReason.MALFORMED_REQUEST, "a request must be a JSON object")
    request_id = value.get("id")
    if request_id is not None and not isinstance(request_id, str) and type(request_id) is not int:
        raise ProtocolError(ErrorReason.INVALID_ARGUMENT, "id must be a string or an integer")
    version = value.get("v")
    if type(version) is not int or version != VERSION:
        detail = f'"v" must be {VERSION}, not {json.dumps(version)}'
        raise ProtocolError(ErrorReason.UNSUPPORTED_VERSION, detail, request_id)
    op = value.get("op")
    if not isinstance(op, str) or op not in OPERATIONS:
        known = ", ".join(OPERATIONS)
        detail = f'unknown "op" {json.dumps(op)}; known: {known}'
        raise ProtocolError(ErrorReason.UNKNOWN_OP, detail, request_id)
    fields = OPERATIONS[op]
    args: dict[str, Any] = {}
    try:
        for name in _REQUIRED.get(op, ()):
            if name not in value:
                raise ValueError(f"{op} needs {name}")
        for name, given in value.items():
            if name in _ENVELOPE:
                continue
            check = fields.get(name)
            if check is None:
                raise ValueError(f"{op} takes no field {json.dumps(name)}")
            args[name] = check(name, given)
    except ValueError as error:
        raise ProtocolError(ErrorReason.INVALID_ARGUMENT, str(error), request_id) from error
    return Request(op, args, request_id)


# --- responses -----------------------------------------------------------------


def _encode(value: Any) -> bytes:
    """One line of UTF-8 JSON; a path that is not UTF-8 shown as the CLI shows it."""
    return dumps_utf8(value, separators=(",", ":")).encode("utf-8") + b"\n"


def result_line(result: dict[str, Any], request_id: object = None) -> bytes:
    """``{"v": 1, "ok": true, "result": {"schema": 1, ...}}`` (with ``id`` when given), one
    line."""
    response: dict[str, Any] = {"v": VERSION, "ok": True}
    if request_id is not None:
        response["id"] = request_id
    response["result"] = versioned(result)
    return _encode(response)


def result_line_from_text(result_json: bytes, request_id: object = None) -> bytes:
    """:func:`result_line` for a result already encoded as one line of JSON (no newline)."""
    head = b'{"v":1,"ok":true,'
    if request_id is not None:
        head += b'"id":' + _encode(request_id)[:-1] + b","
    return head + b'"result":' + result_json + b"}\n"


def error_line(reason: ErrorReason, detail: str, request_id: object = None) -> bytes:
    """``{"v": 1, "ok": false, "error": {"reason": ..., "detail": ...}}``, one line."""
    response: dict[str, Any] = {"v": VERSION, "ok": False}
    if request_id is not None:
        response["id"] = request_id
    response["error"] = {"reason": str(reason), "detail": detail}
    return _encode(response)


def encode_result(result: dict[str, Any]) -> bytes:
    """A result object, with ``"schema"``, as one line of JSON without the newline (for
    result_line_from_text)."""
    return _encode(versioned(result))[:-1]
