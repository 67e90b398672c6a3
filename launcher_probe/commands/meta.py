"""``meta``: build the tools/call or resources/read ``_meta`` for a server."""

from __future__ import annotations

import argparse
import re

from launcher_probe.arguments import add_via, argument_text
from launcher_probe.client import resolve_with_origin
from launcher_probe.commands.common import argument_json, write_stdout
from launcher_probe.errors import ExitCode, InputRejected, UsageError
from launcher_probe.host.decision import Decision, Withheld
from launcher_probe.host.inject import (
    BindingWithToolCall,
    Method,
    ServerDescription,
    Transport,
    dumps_meta,
    request_meta,
)
from launcher_probe.json_input import MalformedJSON, loads_strict
from launcher_probe.messages import say_warnings

#: A JSON number literal (RFC 8259), the whole argument.
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    json_or_file = "JSON|@FILE"
    parser.add_argument(
        "--transport", required=True, metavar="stdio|http|remote", help="how the server is reached"
    )
    parser.add_argument(
        "--capabilities",
        required=True,
        metavar=json_or_file,
        help="the server's capabilities.experimental object from its initialize result",
    )
    parser.add_argument("--state", metavar=json_or_file, help="the sandbox state (forwarded as is)")
    parser.add_argument("--caller-meta", metavar=json_or_file, help="the caller's _meta")
    parser.add_argument(
        "--host-meta",
        metavar=json_or_file,
        help="host-owned keys the host sets itself (threadId, x-codex-turn-metadata, callId...)",
    )
    parser.add_argument(
        "--method", default="tools/call", metavar="tools/call|resources/read", help="the request"
    )
    parser.add_argument("--server", default="", metavar="NAME", help="the server's name")
    parser.add_argument("--thread-id", metavar="ID", help="resources/read: the bound thread")
    parser.add_argument(
        "--origin-call-id", metavar="ID", help="resources/read: the originating tool call"
    )
    parser.add_argument(
        "--progress-token",
        metavar="TOKEN",
        help="the progressToken, set last: a JSON number is an integer (5), a JSON string "
        "literal a string ('\"5\"'), anything else the text as given (abc)",
    )
    parser.add_argument(
        "--codex", metavar="PATH", help="resolve this path (when the launcher could be sent)"
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help='print the report {"schema": 1, "meta": ..., "included", "launcher", "reason", '
        '"detail"}',
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="the output is always JSON; with --json an error is a JSON report on stdout too",
    )
    add_via(parser)
    parser.epilog = f"{_sample_states_help()}\n\n{parser.epilog or ''}"


def _sample_states_help() -> str:
    """The sample states for --help, as ``launcher-probe sample-state`` prints them."""
    from launcher_probe.json_output import dumps_utf8
    from launcher_probe.sandbox_policy import MODES, sample_state

    lines = [
        "sample states, as Codex sends them (launcher-probe sample-state KIND [--cwd DIR] "
        "prints one\nfor the current directory: sample-state read-only > state.json, then "
        "--state @state.json):"
    ]
    for kind in MODES:
        lines.append(f"  {kind}: {dumps_utf8(sample_state(kind, '/home/me/project'))}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.transport not in set(Transport):
        raise UsageError(f"--transport must be one of {', '.join(Transport)}")
    if args.method not in set(Method):
        raise UsageError(f"--method must be one of {', '.join(Method)}")
    transport, method = Transport(args.transport), Method(args.method)
    capabilities = argument_json("--capabilities", args.capabilities, must_be_object=True)
    caller_meta = argument_json("--caller-meta", args.caller_meta, must_be_object=False)
    host_meta = argument_json("--host-meta", args.host_meta, must_be_object=True)
    state = None if args.state is None else argument_text("--state", args.state)
    progress_token = _progress_token(args.progress_token)
    server = ServerDescription(args.server, transport, capabilities)

    def resolve() -> Decision:  # called only when the launcher could be sent
        decision, origin = resolve_with_origin(args.via, args.codex)
        say_warnings(decision.warnings)
        if isinstance(decision, Withheld) and origin.via == "helper":
            say_warnings((f"launcher withheld ({origin.describe()}): {decision.reason}",))
        return decision

    try:
        result = request_meta(
            method,
            server,
            sandbox_state=state,
            launcher=resolve,
            caller_meta=caller_meta,
            thread_id=args.thread_id,
            origin_call_id=args.origin_call_id,
            host_meta=host_meta,
            progress_token=progress_token,
        )
    except BindingWithToolCall as error:
        raise UsageError(
            "--thread-id and --origin-call-id go with --method resources/read"
        ) from error
    write_stdout(dumps_meta(result, indent=2, explain=args.explain))
    return int(ExitCode.OK)


def _progress_token(text: str | None) -> str | int | None:
    """``--progress-token``: a JSON number literal is that number (an integer: MCP's and
    Codex's tokens are strings or integers), a JSON string literal (starting with '"') is
    that string, anything else is the text itself. JSON that does not parse is a
    UsageError; JSON that is not strict is InvalidJSON."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise UsageError("--progress-token is not valid UTF-8") from error
    if not text.startswith('"') and _JSON_NUMBER.fullmatch(text) is None:
        return text
    try:
        token = loads_strict(text, "--progress-token")
    except MalformedJSON as error:  # not strict or too large: InvalidJSON, exit 4
        raise UsageError(str(error)) from error
    if isinstance(token, str) or type(token) is int:
        return token
    raise InputRejected(f"--progress-token {text}: a progressToken is a string or an integer")
