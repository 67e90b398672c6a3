"""What every command shares: UTF-8 output on stdout, JSON reports, JSON|@FILE arguments
parsed strictly."""

from __future__ import annotations

import sys

from launcher_probe.errors import UsageError
from launcher_probe.json_output import dumps_utf8, error_report, utf8_text, versioned

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


class _Written:
    """How many times ``write_stdout`` wrote: ``main`` prints a ``--json`` error report
    only when its command printed no document of its own (one document, never two)."""

    count = 0


def stdout_writes() -> int:
    """How many texts ``write_stdout`` has written in this process."""
    return _Written.count


def write_stdout(text: str) -> None:
    """``text`` and a newline on stdout as UTF-8, whatever the locale says."""
    line = utf8_text(text) + "\n"
    _Written.count += 1
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:  # stdout replaced by a text-only stream (an embedding host, say)
        sys.stdout.write(line)
        return
    sys.stdout.flush()
    binary.write(line.encode("utf-8"))
    binary.flush()


def print_json(value: dict[str, Any], *, indent: int | None = 2, wire: bool = False) -> None:
    """A report on stdout as JSON with ``"schema"`` (docs/json.md), indented unless
    ``indent`` is None, always valid UTF-8. ``wire``: an object of the Codex contract (the
    launcher descriptor), printed exactly as it is, without ``"schema"``."""
    write_stdout(dumps_utf8(value if wire else versioned(value), indent=indent))


def print_error_json(reason: str, detail: str) -> None:
    """The error report ``{"schema": 1, "error": {"reason", "detail"}}`` on stdout."""
    write_stdout(dumps_utf8(error_report(reason, detail), indent=2))


def argument_json(option: str, value: str | None, *, must_be_object: bool) -> Any:
    """Parse a JSON|@FILE argument strictly (``loads_strict``, ``META_LIMITS``): JSON that
    does not parse is a UsageError; JSON that is not strict (``InvalidJSON``) or over a
    limit (``JSONLimitExceeded``) is refused, exit 4, as in every other argument."""
    from launcher_probe.arguments import argument_text
    from launcher_probe.json_input import MalformedJSON, loads_strict

    if value is None:
        return None
    try:
        parsed = loads_strict(argument_text(option, value), option)
    except MalformedJSON as error:
        raise UsageError(str(error)) from error
    if must_be_object and not isinstance(parsed, dict):
        raise UsageError(f"{option} must be a JSON object")
    return parsed
