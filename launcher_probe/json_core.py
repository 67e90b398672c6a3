"""``json.loads`` and ``json.dumps`` (without ``indent``) straight on the C codec, ``_json``.

They give the same values and texts as the json package, which runs this same C scanner
and encoder; importing that package also loads its pure-Python fallbacks and compiles six
patterns, about 2 ms of a warm ``resolve`` that reads one record and prints one line.
"""

from __future__ import annotations

from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__ = ["dumps", "loads", "not_serializable"]


def not_serializable(value: object) -> Any:
    """``JSONEncoder.default``: what is no JSON type is a TypeError, with json's message."""
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(
    value: Any,
    *,
    ensure_ascii: bool = True,
    allow_nan: bool = True,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
) -> str:
    """``json.dumps(value, ...)`` with these options (``separators`` None: json's default,
    ``", "`` and ``": "``): the same text, the same errors (a cycle is a ValueError, a NaN
    a ValueError without ``allow_nan``)."""
    item_separator, key_separator = separators or (", ", ": ")
    escape = encode_basestring_ascii if ensure_ascii else encode_basestring
    # The markers dict (json's cycle check) is the call's own: dumps is thread-safe.
    markers: dict[int, object] = {}
    encode = make_encoder(
        markers,
        not_serializable,
        escape,
        None,
        key_separator,
        item_separator,
        sort_keys,
        False,
        allow_nan,
    )
    return "".join(encode(value, 0))


_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class _LoadsOptions:
    """What the C scanner reads of a ``JSONDecoder``: ``json.loads``' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


_SCAN = make_scanner(_LoadsOptions)  # type: ignore[arg-type]  # any object with these attributes
_WHITESPACE = " \t\n\r"


def loads(text: str) -> Any:
    """``json.loads(text)`` for a ``str``: the same value; for text that is not one JSON
    value, json's own ``JSONDecodeError`` (a ValueError) saying where."""
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _SCAN(text, start)
    except (StopIteration, SystemError):
        # The C scanner reports a syntax error as json.decoder's JSONDecodeError, which
        # Python 3.11 finds only once json.decoder is imported (a SystemError before):
        # json itself then parses the same text the same way, and says what is wrong.
        _refused_by_json(text)
    if text[end:].strip(_WHITESPACE):
        _refused_by_json(text)  # extra data after the value
    return value


def _refused_by_json(text: str) -> NoReturn:
    import json

    json.loads(text)
    raise ValueError("not one JSON value")  # json accepted what its scanner refused: never
