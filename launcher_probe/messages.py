"""One-line messages on stderr, shown escaped so that no text can start a line of its own."""

from __future__ import annotations

import sys

from launcher_probe.json_output import utf8_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["escaped", "say", "say_warnings"]


def escaped(text: str) -> str:
    """``text`` as one printable line of UTF-8: undecodable path bytes as ``\\xNN`` (the one
    convention, as in JSON output), control characters escaped (``\\n``), so that a path
    cannot start a line of its own in a report."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in utf8_text(text))


def say(message: str) -> None:
    """One line on stderr; control characters are shown escaped."""
    print(f"launcher-probe: {escaped(message)}", file=sys.stderr)


def say_warnings(warnings: Iterable[str]) -> None:
    """Each of the resolver's warnings as a ``launcher-probe: warning: ...`` line on stderr."""
    for warning in warnings:
        say(f"warning: {warning}")
