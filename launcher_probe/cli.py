"""The command line: argparse, one small function per command.

Host modules are imported inside each command so that a warm ``resolve``
loads only what it needs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from launcher_probe import __version__
from launcher_probe.errors import ExitCode, LauncherProbeError, UsageError

EXIT_CODES_HELP = """\
exit codes:
  0  success (published, passed, found)
  1  internal error
  2  usage error
  3  nothing usable found / launcher withheld / probe failed
  4  input rejected or refused (fail closed)
"""


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


# --- discover ---------------------------------------------------------------


def _add_discover(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--codex", metavar="PATH", help="the operator's path (only candidate)")
    parser.add_argument("--json", action="store_true", help="print the stable JSON report")


def _run_discover(args: argparse.Namespace) -> int:
    raise NotImplementedError  # issue 2


# --- command table ----------------------------------------------------------

Command = tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[..., int]]

COMMANDS: tuple[Command, ...] = (
    (
        "discover",
        "list every place the Codex CLI could be, with the path-rule verdict of each",
        _add_discover,
        _run_discover,
    ),
)


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of exiting, so main() owns exit codes."""

    def error(self, message: str) -> Any:
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="launcher-probe",
        description=(
            "Find the Codex CLI, verify it with a cached probe, and publish the "
            '{"codexExecutable": ...} launcher descriptor to MCP servers, or withhold it '
            "with a reason."
        ),
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"launcher-probe {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, help_text, add_arguments, run in COMMANDS:
        command = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_arguments(command)
        command.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; errors become one line on stderr and an exit code."""
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        result: int = args.run(args)
        return result
    except LauncherProbeError as error:
        if debug:
            raise
        print(f"launcher-probe: {error}", file=sys.stderr)
        return int(error.exit_code)
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        if debug:
            raise
        print(f"launcher-probe: internal error: {error!r} (rerun with --debug)", file=sys.stderr)
        return int(ExitCode.INTERNAL)
