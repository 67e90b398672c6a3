"""The options of ``proxy`` and ``wrap`` (the commands, and ``doctor`` reading a server
configured through them): where the launcher comes from, and the
operator's sandbox policy (``launcher_probe.sandbox_policy``) or a state given verbatim."""

from __future__ import annotations

import argparse
import os

from launcher_probe.arguments import add_seconds, add_via, argument_text
from launcher_probe.errors import UsageError
from launcher_probe.state import SandboxState

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from launcher_probe.host.decision import Decision


def add_launcher_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--codex",
        metavar="PATH",
        help="the operator's path to the Codex CLI (only candidate); hosts start servers "
        "with a reduced environment, so name it here or in the host's env field",
    )
    add_via(parser)


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    from launcher_probe.sandbox_policy import MODES

    parser.add_argument(
        "--sandbox",
        choices=MODES,
        help="the sandbox policy (proxy: the state of every call, unless --trust-host-state "
        "and the host sends its own): read-only (default) or workspace-write "
        "(the workspace, /tmp and $TMPDIR writable; .git, .agents, .codex, .aws under it not)",
    )
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        help="the workspace and sandboxCwd (default: the current directory)",
    )
    parser.add_argument(
        "--writable-root",
        action="append",
        default=[],
        metavar="DIR",
        help="another writable directory (repeatable; workspace-write only)",
    )
    parser.add_argument(
        "--network", action="store_true", help="allow network access (default: restricted)"
    )
    parser.add_argument(
        "--state",
        metavar="JSON|@FILE",
        help="a sandbox state to use verbatim instead of the policy options",
    )
    parser.add_argument(
        "--print-state", action="store_true", help="print the state the options give, and exit"
    )


def add_proxy_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``launcher-probe proxy``."""
    parser.description = f"{parser.description}. See docs/hosts.md for the per-host configuration."
    add_launcher_arguments(parser)
    add_policy_arguments(parser)
    parser.add_argument(
        "--trust-host-state",
        action="store_true",
        help="let a state the host sends (Codex does) stand, adding only the launcher; "
        "without it, a call whose _meta sets a sandbox key, or a codex/sandbox-state/update "
        "request, is refused with a JSON-RPC error, whatever the server advertises",
    )
    add_seconds(
        parser,
        "--grace",
        "after the host's stdin ends or a signal is forwarded, how long the server has "
        "to exit before its process tree is killed (default 5)",
    )
    _add_json_and_command(parser, "start the server", "the server")


def add_wrap_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``launcher-probe wrap``."""
    parser.description = (
        f"{parser.description}. A stdin, stdout or stderr that is a socket (Node and Electron "
        "hosts make them) becomes a pipe, copied outside the sandbox. A server on asyncio "
        "(the Python MCP SDK) needs --network here, or proxy: a note on stderr says so as a "
        "Python program starts with the network restricted by the policy options. See "
        "docs/hosts.md for what composes with it."
    )
    add_launcher_arguments(parser)
    add_policy_arguments(parser)
    parser.add_argument(
        "--permission-profile",
        "-P",
        metavar="NAME",
        help="a named Codex permissions profile (codex sandbox -P NAME) instead of the policy",
    )
    parser.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="operator opt-out: run CMD unsandboxed when no launcher is verified",
    )
    _add_json_and_command(parser, "run CMD", "the command")


def _add_json_and_command(parser: argparse.ArgumentParser, failing: str, command: str) -> None:
    """``--json`` (the error report when it cannot ``failing``) and the command after ``--``."""
    parser.add_argument(
        "--json",
        action="store_true",
        help=f"when it cannot {failing}, print the JSON error report on stdout too",
    )
    parser.add_argument(
        "argv",
        nargs=argparse.REMAINDER,
        metavar="-- CMD ...",
        help=f"{command}, after -- (or the first word that is no option)",
    )


def check_policy_options(args: argparse.Namespace) -> None:
    """UsageError when the options name more than one policy: a permissions profile
    (``-P``, wrap's) or ``--state`` beside another policy option, or beside each other."""
    given = args.sandbox is not None or args.cwd or args.writable_root or args.network
    if getattr(args, "permission_profile", None) is not None and (given or args.state):
        raise UsageError("--permission-profile takes the place of the policy options")
    if args.state is not None and given:
        raise UsageError("--state takes the whole state: give no other policy option")


def policy_state(args: argparse.Namespace, where: str | None = None) -> SandboxState:
    """The state the options give (checked by :func:`check_policy_options`): ``--state``
    verbatim, else the policy's (``--sandbox`` read-only unless given). Relative paths
    (``--cwd``, ``--writable-root``, ``--state @FILE``) are taken from ``where`` (this
    process's working directory by default), and so is the default ``--cwd``."""
    from launcher_probe.sandbox_policy import READ_ONLY, Policy, absolute_directory

    check_policy_options(args)
    where = os.getcwd() if where is None else where
    if args.state is not None:
        given = args.state
        if given.startswith("@") and len(given) > 1:
            given = "@" + os.path.join(where, given[1:])
        text = argument_text("--state", given)
        # One JSON-RPC message is one line: a line break in JSON text can only be
        # whitespace between tokens, so a space in its place changes nothing else.
        return SandboxState.from_text(text.replace("\r", " ").replace("\n", " ").strip())
    cwd = absolute_directory("--cwd", where if args.cwd is None else args.cwd, where)
    if not os.path.isdir(cwd):
        raise UsageError(f"--cwd is not a directory: {cwd!r}")
    roots = tuple(absolute_directory("--writable-root", root, where) for root in args.writable_root)
    return Policy(args.sandbox or READ_ONLY, cwd, roots, args.network).state()


def command_after_dashes(words: list[str], name: str) -> list[str]:
    """The command, after ``--`` (which may be missing: some hosts drop it, the MCP
    Inspector's CLI among them); UsageError when there is none."""
    command = words[1:] if words[:1] == ["--"] else words
    if not command:
        raise UsageError(f"{name} needs the command to run, after --")
    return command


def resolved(args: argparse.Namespace) -> Decision:
    """The Decision ``resolve`` would make with these options (helper or in process)."""
    from launcher_probe.client import resolve_via

    decision, _ = resolve_via(args.via, args.codex)
    return decision


def withheld_lines(decision: Decision) -> list[str]:
    """Why the launcher is withheld and the fix ``doctor`` prints (empty when published)."""
    from launcher_probe.host.decision import Withheld

    if not isinstance(decision, Withheld):
        return []
    from launcher_probe.doctor.fixes import withheld_fix

    lines = [f"launcher withheld ({decision.reason}): {decision.detail}"]
    return lines + [f"fix: {line}" for line in withheld_fix(decision)]
