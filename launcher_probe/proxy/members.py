"""Where the members of a JSON object stand in its text: enough to splice one value without
re-serialising the rest (which then reaches the server as the host wrote it)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, NamedTuple

_OPENING = re.compile(r"[ \t\n\r]*(\{)[ \t\n\r]*")
_COLON = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")
#: After a value: the object's end (nothing skipped after it), or a comma and the spaces after.
_SEPARATOR = re.compile(r"[ \t\n\r]*(?:(\})|,[ \t\n\r]*)")
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
    opening = _OPENING.match(text, start)
    if opening is None:
        raise ValueError("not a JSON object")
    if text.startswith("}", opening.end()):
        return Walked((), opening.start(1), opening.end())
    members: list[Member] = []
    position = opening.end()
    while True:
        if not text.startswith('"', position):
            raise ValueError("a key must be a string")
        key, after = scanstring(text, position + 1)
        colon = _COLON.match(text, after)
        if colon is None:
            raise ValueError("a key must be followed by ':'")
        value_start = colon.end()
        if path and key == path[0] and text.startswith("{", value_start):
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
        separator = _SEPARATOR.match(text, end)
        if separator is None:
            raise ValueError("members must be separated by ','")
        if separator[1] == "}":
            return Walked(tuple(members), opening.start(1), separator.start(1))
        position = separator.end()
