"""``wrap``: run a command (an MCP server, or anything) inside the verified ``codex sandbox``;
with no verified launcher, run nothing and exit 3 (docs/hosts.md)."""

from __future__ import annotations

import argparse
import errno
import os
import stat

from launcher_probe.commands.common import write_stdout
from launcher_probe.errors import InputRejected, NothingUsable, UsageError
from launcher_probe.exec_signals import defaults_for_exec
from launcher_probe.messages import say, say_warnings
from launcher_probe.proxy.options import (
    add_wrap_arguments,
    check_policy_options,
    command_after_dashes,
    policy_state,
    resolved,
    withheld_lines,
)

add_arguments = add_wrap_arguments


def run(args: argparse.Namespace) -> int:
    check_policy_options(args)
    profile = args.permission_profile
    state = None if profile is not None else policy_state(args)
    if args.print_state:
        if state is None:
            raise UsageError("--print-state shows the policy's state; a profile has none")
        write_stdout(state.text)
        return 0
    command = command_after_dashes(args.argv, "wrap")
    _check_runnable(command[0])
    from launcher_probe.host.decision import Published
    from launcher_probe.server.request import SandboxRequest

    decision = resolved(args)
    say_warnings(decision.warnings)
    if not isinstance(decision, Published):
        lines = withheld_lines(decision)
        if not args.allow_unsandboxed:
            raise NothingUsable(f"{lines[0]}; running nothing", hints=tuple(lines[1:]))
        say(f"warning: running {command[0]!r} UNSANDBOXED (--allow-unsandboxed): {lines[0]}")
        return _exec(command, search=True)
    launcher = decision.descriptor
    if state is None:
        argv = [launcher.codex_executable, "sandbox", "-P", profile, "--", *command]
    else:
        argv = SandboxRequest(state, launcher).command(command)
        if args.state is None and not args.network:  # the policy's, the network restricted
            from launcher_probe.proxy.program import asyncio_note

            if (note := asyncio_note(command)) is not None:
                say(f"note: {note}")
    from launcher_probe.proxy.stdio_pipes import pipes_for_sockets

    try:
        put_back = pipes_for_sockets()
    except OSError as error:
        raise InputRejected(f"cannot give the command pipes for its stdio: {error}") from error
    try:
        return _exec(argv)
    except InputRejected:
        put_back()  # the host's own sockets again (main may run in a host's process)
        raise


def _check_runnable(name: str) -> None:
    """InputRejected (exit 4) unless ``name`` is a file one may execute, found as ``exec``
    finds it: checked before the sandbox starts, whose own refusal is a panic of Codex's."""
    from launcher_probe.proxy.program import find_program

    try:
        path = find_program(name)
        if stat.S_ISDIR(os.stat(path).st_mode) or not os.access(path, os.X_OK):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as error:
        raise InputRejected(f"cannot execute {name!r}: {error.strerror}") from error


def _exec(argv: list[str], *, search: bool = False) -> int:
    """Replace this process with ``argv`` (no shell in between)."""
    try:
        with defaults_for_exec():
            if search:  # the operator's opt-out: the command itself, found on PATH
                os.execvp(argv[0], argv)  # noqa: S606
            os.execv(argv[0], argv)  # noqa: S606
    except OSError as error:
        raise InputRejected(f"cannot execute {argv[0]!r}: {error.strerror}") from error
