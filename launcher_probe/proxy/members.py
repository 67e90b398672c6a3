"""Where the members of a JSON object stand in its text: enough to splice one value without
re-serialising the rest (which then reaches the server as the host wrote it)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, NamedTuple

_SPACE = r"[ \t\n\r]*"
#: A key without escapes or control characters (what the decoder's scan would read as it
#: stands), its colon and the spaces around: group 3 is the key.
_KEY = rf'"([^"\\\x00-\x1f]*)"{_SPACE}:{_SPACE}'
#: An object's opening (group 1), then its end (group 2: an empty object) or a plain key.
_FIRST = re.compile(rf"{_SPACE}(\{{){_SPACE}(?:(\}})|{_KEY})?")
#: After a value: the object's end (group 1, nothing skipped after it), or a comma, the
#: spaces after it and a plain key.
_NEXT = re.compile(rf"{_SPACE}(?:(\}})|(,){_SPACE}(?:{_KEY})?)")
_COLON = re.compile(_SPACE + ":" + _SPACE)
#: An object's last member when its value is plain, then its end and the text's.
_LAST = re.compile(
    rf',{_SPACE}"([^"\\\x00-\x1f]*)"{_SPACE}:{_SPACE}'
    rf'(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|"[^"\\\x00-\x1f]*"|true|false|null)'
    rf"{_SPACE}\}}{_SPACE}\Z"
)
#: The most members ``trailing`` reads.
MAX_TRAILING = 8
#: One JSON value at an index: ``(value, end)``; StopIteration when there is none.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class Member(NamedTuple):
    """``"key": value`` from ``start`` (the key's quote) to ``end`` (after the value)."""

    key: str
    start: int
    value_start: int
    end: int
    value: Any
    #: The value walked, when it is an object on the path.
    walked: Walked | None = None

    def text(self, source: str) -> str:
        return source[self.start : self.end]


class Walked(NamedTuple):
    """An object's members and where its braces stand."""

    members: tuple[Member, ...]
    open: int
    close: int

    def by_key(self) -> dict[str, Member]:
        """The members by key; ValueError when a key is there twice (readers differ on which
        one counts, so nothing is spliced)."""
        found = {member.key: member for member in self.members}
        if len(found) != len(self.members):
            raise ValueError("duplicate key")
        return found

    def find(self, key: str) -> Member | None:
        """The member named ``key``; None when absent. ValueError when it is there twice
        (readers differ on which one counts, so nothing is spliced)."""
        found = [member for member in self.members if member.key == key]
        if len(found) > 1:
            raise ValueError(f"duplicate key {key!r}")
        return found[0] if found else None


def walk(text: str, start: int = 0, path: tuple[str, ...] = ()) -> Walked:
    """The object at ``start`` (whitespace before it skipped); ValueError unless it is one.

    Each value is decoded once; the value of member ``path[0]``, when an object, is walked
    in turn with ``path[1:]`` (and its ``value`` is the dict of its members)."""
    members: list[Member] = []
    opening, close = _read_object(text, start, path, members, [])
    return Walked(tuple(members), opening, close)


def leading(text: str) -> tuple[list[Member], list[str]]:
    """What the first bytes of a message tell of its object: the members that end within
    ``text``, and every key read (the last may be that of a member ``text`` cuts short),
    up to the end of ``text`` or to what is not JSON (or nested past the parser's stack)."""
    members: list[Member] = []
    keys: list[str] = []
    with contextlib.suppress(ValueError, RecursionError):
        _read_object(text, 0, (), members, keys)
    if members and _NEXT.match(text, members[-1].end) is None:
        members.pop()  # a number the end of ``text`` may cut short
    return members, keys


def trailing(text: str) -> list[tuple[str, str]]:
    """What the last bytes of a message tell of its object: its last members whose values
    are plain (a number, a string without escapes, true, false, null), last first, each
    as ``(key, the value's text)``; up to ``MAX_TRAILING`` of them. No quote stands unescaped inside
    a JSON string, so these are the object's own members (when the message is JSON)."""
    found: list[tuple[str, str]] = []
    rest = text
    while len(found) < MAX_TRAILING and (last := _LAST.search(rest)) is not None:
        found.append((last[1], last[2]))
        rest = rest[: last.start()] + "}"
    return found


def _read_object(
    text: str, start: int, path: tuple[str, ...], members: list[Member], keys: list[str]
) -> tuple[int, int]:
    """``walk``'s reading: each member appended to ``members`` once read, its key to
    ``keys`` before its value is; where the object's braces stand."""
    found = _FIRST.match(text, start)
    if found is None:
        raise ValueError("not a JSON object")
    opening = found.start(1)
    if found[2] is not None:
        return opening, found.start(2)
    wanted = path[0] if path else None
    while True:
        key = found[3]
        if key is None:  # a key with escapes (or none at all): the decoder's own scan
            position = found.end()
            if not text.startswith('"', position):
                raise ValueError("a key must be a string")
            key, after = scanstring(text, position + 1)
            colon = _COLON.match(text, after)
            if colon is None:
                raise ValueError("a key must be followed by ':'")
            value_start = colon.end()
        else:
            position, value_start = found.start(3) - 1, found.end()
        keys.append(key)
        if key == wanted and text.startswith("{", value_start):
            inner = walk(text, value_start, path[1:])
            value: Any = {member.key: member.value for member in inner.members}
            end, nested = inner.close + 1, inner
        else:
            try:
                value, end = _SCAN(text, value_start)
            except StopIteration as error:
                raise ValueError(f"expecting a value at {error.value}") from error
            nested = None
        members.append(Member(key, position, value_start, end, value, nested))
        found = _NEXT.match(text, end)
        if found is None:
            raise ValueError("members must be separated by ','")
        if found[1] is not None:
            return opening, found.start(1)
