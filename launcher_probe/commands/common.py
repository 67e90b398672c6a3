"""What every command shares: escaped one-line messages, JSON output, JSON|@FILE and
seconds arguments."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from launcher_probe.errors import UsageError


def escaped(text: str) -> str:
    """``text`` with control characters (from a path, say) shown escaped, so that a
    path cannot start a line of its own in a report."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def say(message: str) -> None:
    """One line on stderr; control characters are shown escaped."""
    print(f"launcher-probe: {escaped(message)}", file=sys.stderr)


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout."""
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


#: The most a JSON|@FILE argument may hold (a sandbox state or _meta is far smaller).
ARGUMENT_FILE_LIMIT = 1 << 24


def argument_text(option: str, value: str) -> str:
    """The text of a JSON|@FILE argument: UTF-8, read from FILE when it starts with '@'.

    A FILE longer than ``ARGUMENT_FILE_LIMIT`` characters is refused, not read to the end.
    """
    from launcher_probe.errors import InputRejected

    if not value.startswith("@"):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise UsageError(f"{option} is not valid UTF-8") from error
        return value
    try:
        with open(value[1:], encoding="utf-8") as stream:
            text = stream.read(ARGUMENT_FILE_LIMIT + 1)
    except (OSError, UnicodeError) as error:
        raise InputRejected(f"cannot read {option} file {value[1:]!r}: {error}") from error
    if len(text) > ARGUMENT_FILE_LIMIT:
        limit = f"{ARGUMENT_FILE_LIMIT} characters"
        raise InputRejected(f"cannot read {option} file {value[1:]!r}: longer than {limit}")
    return text


def argument_json(option: str, value: str | None, *, must_be_object: bool) -> Any:
    """Parse a JSON|@FILE argument strictly; malformed JSON is a usage error."""
    from launcher_probe.state import InvalidJSON, loads_strict

    if value is None:
        return None
    try:
        parsed = loads_strict(argument_text(option, value), option)
    except InvalidJSON as error:
        raise UsageError(str(error)) from error
    if must_be_object and not isinstance(parsed, dict):
        raise UsageError(f"{option} must be a JSON object")
    return parsed


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds above zero."""
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
