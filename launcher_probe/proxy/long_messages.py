"""A message of the host's too long for the proxy to read whole (``framing.pump`` drops it):
what its first and last bytes tell of it, so that whoever waits for it gets an answer
under the id it waits on. SDKs write the id before a long value (Python's) or after it
(TypeScript's), so the one or the other holds it."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from launcher_probe.proxy.members import leading, trailing

_INFINITY = float("inf")


def answer_id(value: Any, written: str) -> str:
    """The id to answer with, as the host wrote it (``written``) when it is a string or a
    finite number (never ``NaN``, which no strict reader takes), else ``null``."""
    number = type(value) in (int, float) and -_INFINITY < value < _INFINITY
    return written if type(value) is str or number else "null"


class Glimpse(NamedTuple):
    """A long message as far as its first and last bytes tell."""

    #: Its id as written: ``null`` when those bytes name none, or two.
    id_text: str
    #: It answers a request of the server's: it names no method, and a result or an error.
    answers_server: bool


def glimpse(head: bytes | bytearray, tail: bytes | bytearray) -> Glimpse:
    """What ``head`` (a message's first bytes) and ``tail`` (its last, to its newline) tell
    of a message too long to read."""
    text = _utf8_prefix(head)
    members, keys = leading(text)
    ids = {
        answer_id(member.value, text[member.value_start : member.end])
        for member in members
        if member.key == "id"
    }
    last = trailing(bytes(tail).decode("utf-8", "replace"))
    ids.update(_tail_id(written) for key, written in last if key == "id")
    keys += [key for key, _ in last]
    answers = "method" not in keys and ("result" in keys or "error" in keys)
    return Glimpse(ids.pop() if len(ids) == 1 else "null", answers)


def _tail_id(written: str) -> str:
    """The id to answer with that ``trailing`` read as ``written`` (``null`` for one Python
    will not read: an integer past its digit limit)."""
    try:
        return answer_id(json.loads(written), written)
    except ValueError:
        return "null"


def _utf8_prefix(head: bytes | bytearray) -> str:
    """``head`` decoded up to its first byte that is not UTF-8 (it may end inside a
    character)."""
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as error:
        return head[: error.start].decode("utf-8")
