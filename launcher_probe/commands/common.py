"""What every command shares: escaped one-line messages, warnings, UTF-8 JSON output,
JSON|@FILE and seconds arguments."""

from __future__ import annotations

import sys

from launcher_probe.errors import InputRejected, UsageError
from launcher_probe.json_output import dumps_utf8, error_report, utf8_text, versioned

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable
    from typing import Any


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


def argument_text(option: str, value: str) -> str:
    """The text of a JSON|@FILE argument: UTF-8, read from FILE when it starts with '@'.

    FILE must be a regular file (a FIFO, device or directory is refused without being
    opened or waited on) of at most ``META_LIMITS.max_bytes``; it is never read past that.
    An inline value that is not UTF-8 is a UsageError; a FILE that cannot be used is
    InputRejected.
    """
    from launcher_probe.host.paths import open_regular_file
    from launcher_probe.json_input import META_LIMITS

    if not value.startswith("@"):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise UsageError(f"{option} is not valid UTF-8") from error
        return value
    path, limit = value[1:], META_LIMITS.max_bytes
    problem = f"cannot read {option} file '{utf8_text(path)}'"
    try:
        with open_regular_file(path) as stream:
            raw = stream.read(limit + 1)
    except OSError as error:
        raise InputRejected(f"{problem}: {error.strerror or error}") from error
    except ValueError as error:  # a NUL byte or a lone surrogate: no file has that name
        raise InputRejected(f"{problem}: no such file name: {error}") from error
    if len(raw) > limit:
        raise InputRejected(f"{problem}: larger than {limit} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputRejected(f"{problem}: not UTF-8 (byte {error.start})") from error


def argument_json(option: str, value: str | None, *, must_be_object: bool) -> Any:
    """Parse a JSON|@FILE argument strictly (``loads_strict``, ``META_LIMITS``): JSON that
    does not parse is a UsageError; JSON that is not strict (``InvalidJSON``) or over a
    limit (``JSONLimitExceeded``) is refused, exit 4, as in every other argument."""
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


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds above zero."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


def add_seconds(parser: argparse.ArgumentParser, flag: str, help_text: str) -> None:
    """Add ``flag`` taking a positive number of seconds (None when not given)."""
    parser.add_argument(flag, type=positive_seconds, default=None, metavar="S", help=help_text)


def add_via(parser: argparse.ArgumentParser) -> None:
    """Add ``--via auto|helper|local``: who makes the decision (see launcher_probe.client)."""
    parser.add_argument(
        "--via",
        choices=("auto", "helper", "local"),
        default="auto",
        help="auto: the running helper (launcher-probe serve) if its socket answers, else in "
        "this process; helper: only the helper; local: only this process (default auto)",
    )
