"""``proxy``: run a stdio MCP server behind a relay that gives its ``tools/call`` and
``resources/read`` the sandbox state and the verified launcher (docs/hosts.md)."""

from __future__ import annotations

import argparse

from launcher_probe.commands.common import write_stdout
from launcher_probe.messages import say_warnings
from launcher_probe.proxy.options import (
    add_proxy_arguments,
    command_after_dashes,
    policy_state,
    resolved,
    withheld_lines,
)

add_arguments = add_proxy_arguments


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
    from launcher_probe.proxy.relay import answer_host, run_proxy
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

    def unread() -> None:
        notes.once(
            "a message of the server's longer than 4 MiB passed unread while its initialize "
            "(or server/discover) answer was awaited: were it that answer, nothing was learnt "
            "from it, and the server's requests are relayed with nothing added"
        )

    server = ServerCapabilities(learnt, unread)
    launcher = BoundLauncher(decision, lambda: resolved(args))
    rewriter = Rewriter(
        server, launcher, state, notes, answer=answer_host, trust_host_state=args.trust_host_state
    )
    grace = DEFAULT_GRACE if args.grace is None else args.grace
    try:
        return run_proxy(command, rewriter, server, grace)
    finally:
        launcher.settle(grace)  # a renewal's probe ends (within the grace), its directory gone
