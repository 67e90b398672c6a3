"""``proxy``: run a stdio MCP server behind a relay that gives its ``tools/call`` and
``resources/read`` the sandbox state and the verified launcher (docs/hosts.md)."""

from __future__ import annotations

import argparse

from launcher_probe.commands.common import add_seconds, say_warnings, write_stdout
from launcher_probe.commands.policy_options import (
    add_launcher_arguments,
    add_policy_arguments,
    command_after_dashes,
    policy_state,
    resolved,
    withheld_lines,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = f"{parser.description}. See docs/hosts.md for the per-host configuration."
    add_launcher_arguments(parser)
    add_policy_arguments(parser)
    add_seconds(
        parser,
        "--grace",
        "after the host's stdin ends or a signal is forwarded, how long the server has "
        "to exit before its process tree is killed (default 5)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="when it cannot start the server, print the JSON error report on stdout too",
    )
    parser.add_argument(
        "argv",
        nargs=argparse.REMAINDER,
        metavar="-- CMD ...",
        help="the server, after -- (or the first word that is no option)",
    )


def run(args: argparse.Namespace) -> int:
    state = policy_state(args)
    if args.print_state:
        write_stdout(state.text)
        return 0
    command = command_after_dashes(args.argv, "proxy")
    from launcher_probe.proxy.capabilities import ServerCapabilities
    from launcher_probe.proxy.child import DEFAULT_GRACE
    from launcher_probe.proxy.launcher import BoundLauncher
    from launcher_probe.proxy.notes import Notes
    from launcher_probe.proxy.relay import run_proxy
    from launcher_probe.proxy.rewrite import Rewriter

    decision = resolved(args)  # once, before the server starts; kept for its life
    say_warnings(decision.warnings)
    notes = Notes()
    for line in withheld_lines(decision):
        notes.once(line)

    def learnt(server: ServerCapabilities) -> None:
        if not server.wants_sandbox_state:
            notes.once(
                "the server advertises neither codex/sandbox-state nor "
                "codex/sandbox-state-meta: its requests are relayed with nothing added"
            )

    server = ServerCapabilities(learnt)
    launcher = BoundLauncher(decision, lambda: resolved(args))
    rewriter = Rewriter(server, launcher, state, notes)
    grace = DEFAULT_GRACE if args.grace is None else args.grace
    return run_proxy(command, rewriter, server, grace)
