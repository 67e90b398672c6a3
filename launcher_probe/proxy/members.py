"""Where the members of a JSON object stand in its text: enough to splice one value without
re-serialising the rest (which then reaches the server as the host wrote it)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SPACES = frozenset(" \t\n\r")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class Member:
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


@dataclass(frozen=True, slots=True)
class Walked:
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


def _skip(text: str, position: int) -> int:
    if text[position : position + 1] not in _SPACES:  # the usual case: compact JSON
        return position
    match = _WHITESPACE.match(text, position)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def walk(text: str, start: int = 0, path: tuple[str, ...] = ()) -> Walked:
    """The object at ``start`` (whitespace before it skipped); ValueError unless it is one.

    Each value is decoded once; the value of member ``path[0]``, when an object, is walked
    in turn with ``path[1:]`` (and its ``value`` is the dict of its members)."""
    opening = _skip(text, start)
    if text[opening : opening + 1] != "{":
        raise ValueError("not a JSON object")
    position = _skip(text, opening + 1)
    members: list[Member] = []
    if text[position : position + 1] == "}":
        return Walked((), opening, position)
    while True:
        if text[position : position + 1] != '"':
            raise ValueError("a key must be a string")
        key, after = scanstring(text, position + 1)
        colon = _skip(text, after)
        if text[colon : colon + 1] != ":":
            raise ValueError("a key must be followed by ':'")
        value_start = _skip(text, colon + 1)
        if path and key == path[0] and text[value_start : value_start + 1] == "{":
            inner = walk(text, value_start, path[1:])
            value: Any = {member.key: member.value for member in inner.members}
            end, nested = inner.close + 1, inner
        else:
            try:
                value, end = _DECODER.raw_decode(text, value_start)
            except json.JSONDecodeError as error:
                raise ValueError(str(error)) from error
            nested = None
        members.append(Member(key, position, value_start, end, value, nested))
        position = _skip(text, end)
        separator = text[position : position + 1]
        if separator == "}":
            return Walked(tuple(members), opening, position)
        if separator != ",":
            raise ValueError("members must be separated by ','")
        position = _skip(text, position + 1)
