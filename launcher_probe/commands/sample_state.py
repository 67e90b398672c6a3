"""``sample-state``: print a sample sandbox state, of the shape Codex sends."""

from __future__ import annotations

import argparse
import os

from launcher_probe.commands.common import print_json
from launcher_probe.errors import ExitCode, InputRejected
from launcher_probe.sandbox_policy import MODES, sample_state


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "kind",
        choices=MODES,
        metavar="|".join(MODES),
        help="read-only: all readable, nothing writable; workspace-write: also DIR, /tmp "
        "and $TMPDIR writable (DIR's .git, .agents, .codex, .aws stay read-only); network "
        "restricted in both",
    )
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        help="the working directory and project of the state (default: the current one)",
    )
    parser.add_argument("--json", action="store_true", help="the same: the state is JSON")
    parser.description = (
        f"{parser.description}: one line of JSON, for a host to send (meta --state @FILE, "
        "sandbox_state=) or a server to run commands under"
    )
    parser.epilog = (
        "Save it and pass it on: launcher-probe sample-state workspace-write > state.json;\n"
        "launcher-probe meta ... --state @state.json\n\n" + (parser.epilog or "")
    )


def run(args: argparse.Namespace) -> int:
    if args.cwd is not None and not os.path.isdir(args.cwd):
        raise InputRejected(f"--cwd {args.cwd}: no such directory (the state's working directory)")
    print_json(sample_state(args.kind, args.cwd), indent=None, wire=True)
    return int(ExitCode.OK)
