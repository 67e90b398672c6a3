"""TOML parsed in time linear in its size: ``tomllib`` after a bound on dotted keys.

``tomllib`` spends time quadratic in the number of parts of a dotted key (``a.b.c`` in a
key or a table header: each part copies the key so far), so a 64 KiB file of one key of
32,000 parts costs some 20 s. A key of at most ``MAX_KEY_PARTS`` parts costs a bounded
amount per byte, so ``loads`` first refuses a longer one: one linear pass that skips
strings and comments and counts the dots between delimiters (a float's or a time's dot
counts too: a value holds at most one).
"""

from __future__ import annotations

import re
from typing import Any

#: The most parts a dotted key may have (Codex's own keys have at most four).
MAX_KEY_PARTS = 64

#: What the pass stops at: a string's or comment's start, a dot, or a delimiter.
_NEXT = re.compile(r"\"\"\"|'''|[\"'#.=,\[\]{}\n]")
#: Inside a basic string: an escape or its end (a newline ends a one-line one: malformed).
_BASIC = re.compile(r'\\.|"|\n', re.DOTALL)
_MULTILINE_BASIC = re.compile(r'\\.|"""', re.DOTALL)


_DELIMITERS = frozenset("=,[]{}\n")


class KeyTooLong(ValueError):
    """A dotted key of more than ``MAX_KEY_PARTS`` parts."""


def loads(text: str) -> dict[str, Any]:
    """``tomllib.loads(text)`` once no key has more than ``MAX_KEY_PARTS`` parts.

    Raises KeyTooLong (naming the line) or what ``tomllib.loads`` raises."""
    import tomllib

    if text.count(".") >= MAX_KEY_PARTS:
        _check_keys(text)
    return tomllib.loads(text)


def _check_keys(text: str) -> None:
    dots, position = 0, 0
    while (found := _NEXT.search(text, position)) is not None:
        opener, position = found.group(), found.end()
        if opener == ".":
            dots += 1
            if dots >= MAX_KEY_PARTS:
                line = text.count("\n", 0, position) + 1
                raise KeyTooLong(f"a dotted key of more than {MAX_KEY_PARTS} parts (line {line})")
            continue
        if opener in _DELIMITERS:
            dots = 0  # a key ends (or a value starts): quoted parts do not end it
            continue
        end = _string_end(text, opener, position)
        if end is None:
            return  # unterminated: tomllib says where, having read only what was scanned
        position = end


def _string_end(text: str, opener: str, position: int) -> int | None:
    """Where the string or comment opened by ``opener`` (ending at ``position``) ends; None
    when it does not end."""
    if opener == "#":
        end = text.find("\n", position)
        return len(text) if end < 0 else end
    if opener == "'":
        ends = [text.find(stop, position) for stop in ("'", "\n")]
        return min((end for end in ends if end >= 0), default=-1) + 1 or None
    if opener == "'''":
        end = text.find("'''", position)
        return None if end < 0 else _past_quotes(text, end, "'")
    pattern = _BASIC if opener == '"' else _MULTILINE_BASIC  # '"' or '"""'
    while (found := pattern.search(text, position)) is not None:
        if not found.group().startswith("\\"):
            return found.end() if opener == '"' else _past_quotes(text, found.start(), '"')
        position = found.end()
    return None


def _past_quotes(text: str, end: int, quote: str) -> int:
    """Past a multi-line string's closing delimiter at ``end``: up to two more quotes
    before it belong to the string (``'''a''''`` holds ``a'``)."""
    stop = end + 3
    while stop < len(text) and stop < end + 5 and text[stop] == quote:
        stop += 1
    return stop
