"""``exec``: run a command under the launcher named in a tools/call ``_meta``."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from launcher_probe.arguments import argument_text
from launcher_probe.errors import InputRejected, UsageError
from launcher_probe.json_input import MalformedJSON, loads_strict
from launcher_probe.messages import say
from launcher_probe.server.request import SandboxRequest


class _SaidWarning(logging.Handler):
    """A warning of the server side (the operator's opt-out in use) as the CLI's own
    ``launcher-probe: warning: ...`` line."""

    def emit(self, record: logging.LogRecord) -> None:
        say(f"warning: {record.getMessage()}")


@contextmanager
def _warnings_said() -> Iterator[None]:
    """Route ``launcher_probe.server``'s warnings to stderr as warning lines meanwhile."""
    logger, handler = logging.getLogger("launcher_probe.server"), _SaidWarning(logging.WARNING)
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--meta",
        required=True,
        metavar="JSON|@FILE",
        help="the tools/call _meta object as JSON, or @FILE to read it from FILE",
    )
    parser.add_argument(
        "--readable-root",
        action="append",
        default=[],
        metavar="DIR",
        help="extra absolute directory the command may read (repeatable)",
    )
    parser.add_argument(
        "--disable-network", action="store_true", help="deny network access to the command"
    )
    parser.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="operator opt-out: run CMD unsandboxed when the launcher or state is unusable",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="when it cannot run CMD, print the JSON error report on stdout too",
    )
    parser.add_argument(
        "argv", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command, after --"
    )


def run(args: argparse.Namespace) -> int:
    if args.argv[:1] != ["--"] or len(args.argv) < 2:
        raise UsageError("exec needs -- followed by the command to run")
    # Unlike other JSON arguments, an unparsable _meta is refused (4), not a usage error;
    # JSON that is not strict is InvalidJSON (invalid_json, 4), as everywhere.
    try:
        meta = loads_strict(argument_text("--meta", args.meta), "--meta")
    except (MalformedJSON, UsageError) as error:  # UsageError: inline text that is not UTF-8
        raise InputRejected(str(error)) from error
    if meta is None:  # from_meta takes None as "no _meta"; here it is JSON null
        raise InputRejected("_meta must be a JSON object, not null")
    request = SandboxRequest.from_meta(meta, allow_unsandboxed=args.allow_unsandboxed)
    with _warnings_said():
        prepared = request.prepare(
            args.argv[1:], readable_roots=args.readable_root, disable_network=args.disable_network
        )
    try:
        # No shell in between: the sandbox (or, opted out, the command from PATH) replaces
        # us; on Linux the launcher is executed through the descriptor that was verified.
        prepared.exec()
    except OSError as error:
        shown = prepared.argv[0]
        raise InputRejected(f"cannot execute {shown!r}: {error.strerror}") from error
