"""A server command that runs ``launcher-probe proxy`` or ``wrap``: what ``doctor`` says of
it (the policy, the inner command, the options the launcher is resolved with), read by the
commands' own options (``proxy.options``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from launcher_probe.errors import InputRejected, UsageError
from launcher_probe.interpreter_name import is_python

COMMANDS = ("proxy", "wrap")


def launcher_probe_words(command: str | None, args: Sequence[str]) -> list[str] | None:
    """The words after ``launcher-probe`` when ``command args`` runs ``proxy`` or ``wrap``
    (as the console script, or as ``python -m launcher_probe``); None otherwise."""
    if command is None:
        return None
    name, words = os.path.basename(command), list(args)
    if is_python(name) and words[:2] == ["-m", "launcher_probe"]:
        words = words[2:]
    elif name != "launcher-probe":
        return None
    while words[:1] == ["--debug"]:
        words = words[1:]
    return words if words[:1] and words[0] in COMMANDS else None


def explained(words: list[str], where: str | None = None) -> dict[str, Any]:
    """``{"command", "policy", "inner", "codex", "trust_host_state", "allow_unsandboxed",
    "problem"}`` for ``launcher-probe WORDS`` run in ``where`` (this process's working
    directory by default; ``trust_host_state``: the proxy's flag, None for ``wrap``;
    ``allow_unsandboxed``: wrap's, None for ``proxy``); ``problem`` when it would
    run no server: the words do not parse, name two policies or a policy it refuses
    (``policy_state``), or ask for its help or its state alone."""
    from launcher_probe.arguments import raising_parser_class
    from launcher_probe.proxy.options import (
        add_proxy_arguments,
        add_wrap_arguments,
        check_policy_options,
        command_after_dashes,
        policy_state,
    )
    from launcher_probe.sandbox_policy import READ_ONLY

    part: dict[str, Any] = {
        "command": words[0],
        "policy": None,
        "inner": None,
        "codex": None,
        "trust_host_state": None,
        "allow_unsandboxed": None,
    }
    parser = raising_parser_class()(prog=f"launcher-probe {words[0]}", add_help=False)
    parser.add_argument("--debug", action="store_true")
    parser.add_argument("-h", "--help", action="store_true")  # said, not printed
    (add_proxy_arguments if words[0] == "proxy" else add_wrap_arguments)(parser)
    try:
        args = parser.parse_args(words[1:])
        for asked, does in (
            (args.help, "--help prints its help"),
            (args.print_state, "--print-state prints the state"),
        ):
            if asked:
                raise UsageError(f"{does} and exits: no server runs")
        check_policy_options(args)
        if getattr(args, "permission_profile", None) is None:
            policy_state(args, where)
        inner = command_after_dashes(args.argv, words[0])
    except (UsageError, InputRejected) as error:
        return {**part, "problem": str(error)}
    if getattr(args, "permission_profile", None) is not None:
        policy: dict[str, Any] = {"permission_profile": args.permission_profile}
    elif args.state is not None:
        policy = {"state": args.state}
    else:
        policy = {
            "sandbox": args.sandbox or READ_ONLY,
            "cwd": args.cwd,
            "writable_roots": list(args.writable_root),
            "network": "enabled" if args.network else "restricted",
        }
    trusted = getattr(args, "trust_host_state", None)
    return {
        **part,
        "policy": policy,
        "inner": inner,
        "codex": args.codex,
        "trust_host_state": trusted,
        "allow_unsandboxed": getattr(args, "allow_unsandboxed", None),
        "problem": None,
    }


def summary(part: dict[str, Any]) -> str:
    """One line for doctor's text report."""
    if part["problem"] is not None:
        return f"through launcher-probe {part['command']}, which would refuse: {part['problem']}"
    policy = part["policy"]
    if "permission_profile" in policy:
        shown = f"Codex permissions profile {policy['permission_profile']}"
    elif "state" in policy:
        shown = f"the state {policy['state']}"
    else:
        roots = "".join(f", also writable {root}" for root in policy["writable_roots"])
        cwd = policy["cwd"] or "the directory it starts in"
        shown = f"{policy['sandbox']} in {cwd}{roots}, network {policy['network']}"
    if part["command"] == "wrap":
        role = "around the server"
    elif part["trust_host_state"]:
        role = "when the host sends no state"
    else:
        role = "the only state: a call that sets its own is refused"
    inner = " ".join(part["inner"])
    return f"through launcher-probe {part['command']}: {shown} ({role}); runs {inner}"
