"""``json.loads`` and ``json.dumps`` (without ``indent``) straight on the C codec, ``_json``.

They give the same values and texts as the json package, which runs this same C scanner
and encoder; importing that package also loads its pure-Python fallbacks and compiles six
patterns, about 2 ms of a warm ``resolve`` that reads one record and prints one line.
"""

from __future__ import annotations

from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    #: ``parse_constant``: called with ``NaN``, ``Infinity`` or ``-Infinity``.
    ConstantHook = Callable[[str], Any]
    #: ``object_pairs_hook``: called with each object's pairs, in order, repeats kept.
    PairsHook = Callable[[list[tuple[str, Any]]], Any]

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
    """What the C scanner reads of a ``JSONDecoder``: ``json.loads``' defaults, but for the
    hooks given."""

    __slots__ = ("object_pairs_hook", "parse_constant")
    strict = True
    object_hook = None
    parse_float = float
    parse_int = int

    def __init__(
        self,
        parse_constant: ConstantHook | None,
        object_pairs_hook: PairsHook | None,
    ) -> None:
        self.parse_constant = parse_constant or _CONSTANTS.__getitem__
        self.object_pairs_hook = object_pairs_hook


def _scanner(
    parse_constant: ConstantHook | None,
    object_pairs_hook: PairsHook | None,
) -> Callable[[str, int], tuple[Any, int]]:
    """The C scanner with these hooks (a ``JSONDecoder``'s ``scan_once``)."""
    options = _LoadsOptions(parse_constant, object_pairs_hook)
    return make_scanner(options)  # type: ignore[arg-type]  # any object with these attributes


_SCAN = _scanner(None, None)
_WHITESPACE = " \t\n\r"


def loads(
    text: str,
    *,
    parse_constant: ConstantHook | None = None,
    object_pairs_hook: PairsHook | None = None,
) -> Any:
    """``json.loads(text, ...)`` for a ``str``, with these hooks: the same value, the same
    errors (what a hook raises; for text that is not one JSON value, json's own
    ``JSONDecodeError``, a ValueError, saying where)."""
    scan = _SCAN
    if parse_constant is not None or object_pairs_hook is not None:
        scan = _scanner(parse_constant, object_pairs_hook)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = scan(text, start)
    except (StopIteration, SystemError):
        # The C scanner reports a syntax error as json.decoder's JSONDecodeError, which
        # Python 3.11 finds only once json.decoder is imported (a SystemError before):
        # json itself then parses the same text the same way, and says what is wrong.
        _refused_by_json(text, parse_constant, object_pairs_hook)
    if text[end:].strip(_WHITESPACE):
        _refused_by_json(text, parse_constant, object_pairs_hook)  # extra data after the value
    return value


def _refused_by_json(
    text: str,
    parse_constant: ConstantHook | None,
    object_pairs_hook: PairsHook | None,
) -> NoReturn:
    import json

    json.loads(text, parse_constant=parse_constant, object_pairs_hook=object_pairs_hook)
    raise ValueError("not one JSON value")  # json accepted what its scanner refused: never
