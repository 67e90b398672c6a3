"""Strict, bounded JSON input: the one parser for every JSON document read from outside.

Every CLI JSON argument, every ``_meta`` (the caller's, the host's, one a server
receives) and every sandbox state goes through ``loads_strict`` (text) or
``checked_value`` (an already-parsed object), so the same limits hold everywhere:

- size: at most ``Limits.max_bytes`` of UTF-8 (``META_LIMITS``: 256 KiB;
  ``STATE_LIMITS``: 64 KiB, as the state travels twice in a ``_meta``);
- nesting: at most ``Limits.max_depth`` levels of arrays and objects (64 for a
  ``_meta``, 32 for a state), checked before parsing, so no input reaches the
  interpreter's recursion limit;
- strictness: no NaN/Infinity, no out-of-range or over-long number, no repeated
  key, no lone surrogate (``"\\ud800"`` parses, but is no UTF-8 text: Codex refuses it).

Parsing runs in the C decoder (``json_core``) with one light hook per object, then one C
re-encode, so its time and memory are linear in the (capped) size. Text that is strict JSON
is read without importing the json package, ``dataclasses`` or ``typing`` (the helper's
client parses every answer here); only text the C scanner refuses (a syntax error, an
over-long number) imports json, to tell which it is.
"""

from __future__ import annotations

import re
from _json import encode_basestring, make_encoder
from itertools import accumulate

from launcher_probe.errors import InputRejected
from launcher_probe.json_core import loads, not_serializable
from launcher_probe.value import Value, finite

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "META_LIMITS",
    "STATE_LIMITS",
    "InvalidJSON",
    "JSONLimitExceeded",
    "Limits",
    "NonStringKey",
    "checked_size",
    "checked_value",
    "loads_strict",
]


class InvalidJSON(InputRejected, ValueError):
    """Text or a value that is not strict JSON; the message starts with what it is."""

    reason = "invalid_json"


class NonStringKey(InvalidJSON):
    """A value whose walk (``checked_value``) met an object key that is no string: the
    first fault it met; ``key`` is that key."""

    def __init__(self, what: str, key: object) -> None:
        super().__init__(f"{what} has a {type(key).__name__} key, not a string")
        self.key = key


class MalformedJSON(InvalidJSON):
    """Text that does not parse as JSON at all (a syntax error), as opposed to JSON that
    parses but is not strict (NaN, a repeated key, ...)."""


class JSONLimitExceeded(InvalidJSON):
    """JSON that may be well formed but is larger or deeper than its ``Limits`` allow."""

    reason = "json_limit_exceeded"


class Limits(Value):
    """The most one JSON document may hold: UTF-8 bytes and levels of arrays/objects."""

    __slots__ = ("max_bytes", "max_depth")
    max_bytes: int
    max_depth: int

    def __init__(self, max_bytes: int, max_depth: int) -> None:
        super().__init__(max_bytes=max_bytes, max_depth=max_depth)


#: A ``_meta`` object (the caller's, the host's, or a whole received one: two states and
#: the caller's keys) or any other JSON argument: 256 KiB, 64 levels.
META_LIMITS = Limits(max_bytes=1 << 18, max_depth=64)
#: A sandbox state (Codex sends a few hundred bytes, 7 levels): 64 KiB, 32 levels.
STATE_LIMITS = Limits(max_bytes=1 << 16, max_depth=32)

_STRING = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_BRACKET = re.compile(r"[][{}]")
_NESTING = {"[": 1, "{": 1, "]": -1, "}": -1}
#: A number with a fraction or exponent: compiled on an out-of-range error only (re's cache).
_FLOAT = r"-?\d+(?:\.\d+(?:[eE][-+]?\d+)?|[eE][-+]?\d+)"
#: ``json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))`` as the
#: C encoder that ``JSONEncoder.encode`` builds on every call, built once: its chunks joined
#: are that text. No cycle check (``markers``): every value it encodes has been walked first
#: (``checked_value``, within ``max_depth``) or parsed from text.
_COMPACT = make_encoder(
    None, not_serializable, encode_basestring, None, ":", ",", False, False, False
)


def _depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text`` (strings skipped); linear."""
    brackets = _BRACKET.findall(_STRING.sub("", text))
    return max(accumulate(map(_NESTING.__getitem__, brackets)), default=0)


def _too_large(what: str, limits: Limits) -> JSONLimitExceeded:
    return JSONLimitExceeded(f"{what} is larger than {limits.max_bytes} bytes")


def _check_size(size: int, what: str, limits: Limits) -> None:
    if size > limits.max_bytes:
        raise _too_large(what, limits)


def _check_depth(depth: int, what: str, limits: Limits) -> None:
    if depth > limits.max_depth:
        raise JSONLimitExceeded(f"{what} is nested deeper than {limits.max_depth} levels")


def _unique_keys(what: str) -> Any:
    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise InvalidJSON(f"{what} repeats the key {key!r}")
                seen.add(key)
        return result

    return build


def _reject_constant(what: str) -> Any:
    def reject(name: str) -> Any:
        raise InvalidJSON(f"{what} contains {name}, which is not JSON")

    return reject


def _compact(value: Any, what: str, text: str | None = None) -> tuple[str, int]:
    """``value`` as compact JSON and its size in UTF-8; InvalidJSON when it holds no JSON
    (``text``: its source)."""
    try:
        compact = "".join(_COMPACT(value, 0))
        size = len(compact) if compact.isascii() else len(compact.encode("utf-8"))
    except UnicodeEncodeError as error:
        code = ord(error.object[error.start])
        raise InvalidJSON(
            f"{what} contains a lone surrogate (\\u{code:04x}), which is not UTF-8"
        ) from error
    except ValueError as error:  # an infinite float (1e400 parses as inf), or NaN
        floats = re.findall(_FLOAT, _STRING.sub('""', text or ""))
        huge = next((number for number in floats if not finite(float(number))), None)
        if huge is not None:
            shown = huge if len(huge) <= 40 else f"{huge[:20]}...{huge[-12:]}"
            raise InvalidJSON(f"{what} number {shown} is out of range") from error
        raise InvalidJSON(f"{what} is not JSON: {error}") from error
    except TypeError as error:
        raise InvalidJSON(f"{what} is not JSON: {error}") from error
    return compact, size


def loads_strict(text: str, what: str, limits: Limits = META_LIMITS) -> Any:
    """Parse ``text`` strictly within ``limits``; ``InvalidJSON`` (``JSONLimitExceeded``
    past a limit) whose message starts with ``what``, and nothing else, for any text."""
    if not isinstance(text, str):
        raise InvalidJSON(f"{what} must be JSON text, not {type(text).__name__}")
    _check_size(len(text), what, limits)
    _check_size(len(text.encode("utf-8", "surrogatepass")), what, limits)
    _check_depth(_depth(text), what, limits)
    try:
        value = loads(
            text, parse_constant=_reject_constant(what), object_pairs_hook=_unique_keys(what)
        )
    except InvalidJSON:
        raise
    except ValueError as error:
        from json import JSONDecodeError  # imported already when the error is one

        if isinstance(error, JSONDecodeError):
            raise MalformedJSON(f"{what} is not valid JSON: {error}") from error
        # an integer longer than sys.get_int_max_str_digits()
        raise InvalidJSON(f"{what} number is too long: {error}") from error
    _compact(value, what, text)
    return value


def checked_value(value: Any, what: str, limits: Limits = META_LIMITS) -> str:
    """The compact JSON text of an already-parsed ``value`` when it is strict JSON within
    ``limits`` (dicts with string keys, lists, tuples, strings, finite numbers, booleans,
    None); ``InvalidJSON`` otherwise. Time and memory are bounded by ``limits`` whatever
    ``value`` is (a cycle, shared references, a huge string): the walk stops once the
    value cannot fit, before anything is encoded."""
    return _checked(value, what, limits)[0]


def checked_size(value: Any, what: str, limits: Limits = META_LIMITS) -> int:
    """The size in UTF-8 bytes of ``checked_value(value, what, limits)``; raises as it does."""
    return _checked(value, what, limits)[1]


def _checked(value: Any, what: str, limits: Limits) -> tuple[str, int]:
    budget = limits.max_bytes + 2  # spent by a lower bound of each part's encoded size
    pending: list[tuple[Any, int]] = [([value], 0)]  # the value, in a list of its own
    max_depth = limits.max_depth
    while pending and budget >= 0:
        item, depth = pending.pop()
        if depth > max_depth:
            _check_depth(depth, what, limits)
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    raise NonStringKey(what, key)
                budget -= len(key) + 4
            children = item.values()
        else:
            budget -= len(item) + 1
            children = item
        for child in children:
            kind = type(child)
            if kind is str:
                budget -= len(child)
            elif kind is dict or kind is list or kind is tuple:
                pending.append((child, depth + 1))
            elif kind is int:
                budget -= child.bit_length() >> 2
            elif not (kind is float or kind is bool or child is None):
                budget -= _check_other(child, depth + 1, pending, what)
    if budget < 0:
        raise _too_large(what, limits)
    compact, size = _compact(value, what)
    _check_size(size, what, limits)
    return compact, size


def _check_other(child: Any, depth: int, pending: list[tuple[Any, int]], what: str) -> int:
    """``checked_value`` for what is no plain JSON type: a subclass of one (queued, or its
    size returned), else InvalidJSON."""
    if isinstance(child, dict | list | tuple):
        pending.append((child, depth))
        return 0
    if isinstance(child, str):
        return len(child)
    if isinstance(child, int):
        return child.bit_length() >> 2
    if isinstance(child, float):
        return 0
    raise InvalidJSON(f"{what} holds a {type(child).__name__}, which is not JSON")
