"""The command-line arguments more than one command takes: a parser that raises instead of
exiting, positive seconds, ``--via``, and the text of a ``JSON|@FILE`` argument."""

from __future__ import annotations

from launcher_probe.errors import InputRejected, UsageError
from launcher_probe.json_output import utf8_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from typing import NoReturn

__all__ = ["add_seconds", "add_via", "argument_text", "positive_seconds", "raising_parser_class"]


def raising_parser_class() -> type[argparse.ArgumentParser]:
    """argparse's parser raising UsageError instead of exiting, so main() owns exit codes.

    Made on demand: argparse is not imported on the argparse-free warm ``resolve``."""
    import argparse

    class RaisingParser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(f"{message} (see {self.prog} --help)")

    return RaisingParser


def argument_text(option: str, value: str) -> str:
    """The text of a JSON|@FILE argument: UTF-8, read from FILE when it starts with '@'.

    FILE must be a regular file (a FIFO, device or directory is refused without being
    opened or waited on) of at most ``META_LIMITS.max_bytes``; it is never read past that.
    An inline value that is not UTF-8 is a UsageError; a FILE that cannot be used is
    InputRejected.
    """
    from launcher_probe.host.paths.rules import open_regular_file
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


#: The longest wait a seconds option takes (a week): beyond some billions of seconds the
#: waits underneath (``poll``, ``select``) overflow.
MAX_SECONDS = 7 * 24 * 3600.0


def positive_seconds(text: str) -> float:
    """argparse type: a number of seconds above zero, at most ``MAX_SECONDS``."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"not a number of seconds above 0 and at most {MAX_SECONDS:.0f}: {text!r}"
        )
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
