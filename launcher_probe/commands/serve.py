"""``serve``: the per-user host helper on a Unix socket (JSON lines, docs/protocol.md)."""

from __future__ import annotations

import argparse
import logging
import sys

from launcher_probe.arguments import add_seconds
from launcher_probe.messages import escaped
from launcher_probe.service.app import serve
from launcher_probe.service.location import default_socket
from launcher_probe.service.log_writer import LogWriter
from launcher_probe.service.server import DEFAULT_IDLE_TIMEOUT, Limits
from launcher_probe.service.units import UNITS

#: How long the helper's last log lines may wait for stderr when it stops.
_LOG_DRAIN_TIMEOUT = 2.0


class _OneLineFormatter(logging.Formatter):
    """Log lines with control characters (from a path, say) escaped: one event, one line."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return escaped(super().formatMessage(record))


def _positive_count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive count: {text!r}")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--socket",
        metavar="PATH",
        help="the Unix socket (default: $LAUNCHER_PROBE_SOCKET, else "
        "<user runtime dir>/launcher-probe/launcher-probe.sock)",
    )
    parser.add_argument(
        "--print-unit",
        choices=("systemd", "launchd"),
        help="print the systemd user units (service + socket) or the launchd agent, and exit",
    )
    parser.add_argument(
        "--max-connections",
        type=_positive_count,
        default=256,
        metavar="N",
        help="connections served at once; more get a busy error and are closed at once "
        "(default 256)",
    )
    add_seconds(
        parser,
        "--idle-timeout",
        "close a connection that completes no request for this long, however slowly it "
        f"sends (default {DEFAULT_IDLE_TIMEOUT:g})",
    )


def run(args: argparse.Namespace) -> int:
    if args.print_unit is not None:
        sys.stdout.write(UNITS[args.print_unit](args.socket))
        return 0

    formatter = _OneLineFormatter("%(asctime)s launcher-probe serve: %(levelname)s %(message)s")
    writer = LogWriter(formatter)  # on fd 2: no thread of the helper waits on it
    logging.basicConfig(level=logging.INFO, handlers=[writer.handler])
    idle = DEFAULT_IDLE_TIMEOUT if args.idle_timeout is None else args.idle_timeout
    limits = Limits(max_connections=args.max_connections, idle_timeout=idle)
    try:
        return serve(args.socket or default_socket(), limits)
    finally:
        writer.close(_LOG_DRAIN_TIMEOUT)
