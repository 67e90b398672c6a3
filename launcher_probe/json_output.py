"""Output that is always valid UTF-8, with one escaping convention for what is not.

A path that is not UTF-8 reaches Python as a ``str`` with surrogate escapes; written
as is it becomes invalid UTF-8 (or a crash). Every report shows such a path the way
:func:`printable` does: each undecodable byte as ``\\xNN``.

Every report (a top-level JSON object the CLI prints, or a result of the helper) carries
``"schema": SCHEMA``, the version of the shapes ``docs/json.md`` documents.
"""

from __future__ import annotations

import os

from launcher_probe.json_core import dumps

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

#: The version of every report's shape (docs/json.md); raised when a shape changes
#: incompatibly (a key removed or renamed, a meaning changed), not when a key is added.
SCHEMA = 1


def printable(path: str | bytes) -> str:
    """``path`` as text safe to print or put in JSON: undecodable bytes as ``\\xNN``, a
    surrogate that stands for no byte (``"\\ud800"``, from JSON say) as ``\\uNNNN``."""
    try:
        raw = path if isinstance(path, bytes) else os.fsencode(path)
    except UnicodeEncodeError:
        assert isinstance(path, str)
        return "".join(_printable_char(char) for char in path)
    return raw.decode("utf-8", "backslashreplace")


def _printable_char(char: str) -> str:
    try:
        return os.fsencode(char).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return f"\\u{ord(char):04x}"


def versioned(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with ``"schema": SCHEMA`` first."""
    return {"schema": SCHEMA, **report}


def error_report(reason: str, detail: str) -> dict[str, Any]:
    """The report of a failed command or request: ``{"schema": 1, "error": {"reason",
    "detail"}}``."""
    return versioned({"error": {"reason": reason, "detail": detail}})


def utf8_text(text: str) -> str:
    """``text`` itself when it is valid UTF-8; else each undecodable path byte as ``\\xNN``
    (any other lone surrogate, which no path yields, as ``\\udNNN``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return printable(text)
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def utf8_value(value: Any) -> Any:
    """``value`` (a JSON value of bounded depth) with every string key and value ``utf8_text``."""
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, dict):
        return {utf8_text(key): utf8_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [utf8_value(item) for item in value]
    return value


def dumps_utf8(
    value: Any, *, indent: int | None = None, separators: tuple[str, str] | None = None
) -> str:
    """``json.dumps`` of ``value`` (not ASCII-escaped) that encodes as UTF-8, always."""
    if indent is None:
        text = dumps(value, ensure_ascii=False, allow_nan=False, separators=separators)
    else:
        import json  # its Python encoder: the C one writes no indent

        text = json.dumps(
            value, ensure_ascii=False, allow_nan=False, indent=indent, separators=separators
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return dumps_utf8(utf8_value(value), indent=indent, separators=separators)
    return text
