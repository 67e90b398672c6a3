"""The command line: argparse, one small function per command.

Host modules are imported inside each command so that a warm ``resolve``
loads only what it needs.
"""

from __future__ import annotations

import argparse
import json
import os
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


def _escaped(text: str) -> str:
    """``text`` with control characters (from a path, say) shown escaped, so that a
    path cannot start a line of its own in a report."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _say(message: str) -> None:
    """One line on stderr; control characters are shown escaped."""
    print(f"launcher-probe: {_escaped(message)}", file=sys.stderr)


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


# --- discover ---------------------------------------------------------------


def _add_discover(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--codex", metavar="PATH", help="the operator's path (only candidate)")
    parser.add_argument("--json", action="store_true", help="print the stable JSON report")


def _run_discover(args: argparse.Namespace) -> int:
    from launcher_probe.errors import NothingUsable
    from launcher_probe.host.discovery import discover

    found = discover(args.codex)
    report = found.to_json()
    if args.json:
        _print_json(report)
    else:
        for number, item in enumerate(report["candidates"], 1):
            verdict = "ok" if item["ok"] else f"REJECTED {item['reason']}: {item['detail']}"
            print(_escaped(f"{number}. {item['source']:<10} {item['path']}"))
            print(_escaped(f"   resolved: {item['resolved'] or '-'}"))
            print(_escaped(f"   verdict:  {verdict}"))
            for place in item["also_found_at"]:
                print(_escaped(f"   also at:  {place['source']:<10} {place['path']}"))
        for item in report["skipped"]:
            print(f"skipped {item['source']} entry {item['entry']!r}: {item['reason']}")
        if not found.usable:
            print("No usable Codex CLI. Looked at:")
            for place in report["searched"]:
                print(_escaped(f"  {place['source']:<10} {place['path']}"))
    if not found.usable:
        count = len(found.candidates)
        raise NothingUsable(
            f"no Codex CLI passes the path rules ({count} candidate(s))"
            if count
            else "no Codex CLI found"
        )
    return int(ExitCode.OK)


# --- exec -------------------------------------------------------------------


def _add_exec(parser: argparse.ArgumentParser) -> None:
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
        "argv", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the command, after --"
    )


def _run_exec(args: argparse.Namespace) -> int:
    from launcher_probe.errors import InputRejected
    from launcher_probe.server.request import SandboxRequest
    from launcher_probe.state import InvalidJSON, loads_strict

    if args.argv[:1] != ["--"] or len(args.argv) < 2:
        raise UsageError("exec needs -- followed by the command to run")
    try:  # unlike other JSON arguments, an unusable _meta is refused (4), not a usage error
        meta = loads_strict(_argument_text("--meta", args.meta), "--meta")
    except InvalidJSON as error:
        raise InputRejected(str(error)) from error
    request = SandboxRequest.from_meta(meta, allow_unsandboxed=args.allow_unsandboxed)
    argv = request.command(
        args.argv[1:], readable_roots=args.readable_root, disable_network=args.disable_network
    )
    try:
        # No shell in between: the sandbox (or, opted out, the command) replaces us.
        if request.sandbox_available:
            os.execv(argv[0], argv)  # noqa: S606
        os.execvp(argv[0], argv)  # noqa: S606
    except OSError as error:
        raise InputRejected(f"cannot execute {argv[0]!r}: {error.strerror}") from error


# --- meta -------------------------------------------------------------------


def _add_meta(parser: argparse.ArgumentParser) -> None:
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
        "--codex", metavar="PATH", help="resolve this path (when the launcher could be sent)"
    )
    parser.add_argument(
        "--explain", action="store_true", help='print {"meta": ..., "launcher": {why}}'
    )
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")


#: The most a JSON|@FILE argument may hold (a sandbox state or _meta is far smaller).
ARGUMENT_FILE_LIMIT = 1 << 24


def _argument_text(option: str, value: str) -> str:
    """The text of a JSON|@FILE argument: UTF-8, read from FILE when it starts with '@'.

    A FILE longer than ``ARGUMENT_FILE_LIMIT`` characters is refused, not read to the end.
    """
    from launcher_probe.errors import InputRejected

    if not value.startswith("@"):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise UsageError(f"{option} is not valid UTF-8") from error
        return value
    try:
        with open(value[1:], encoding="utf-8") as stream:
            text = stream.read(ARGUMENT_FILE_LIMIT + 1)
    except (OSError, UnicodeError) as error:
        raise InputRejected(f"cannot read {option} file {value[1:]!r}: {error}") from error
    if len(text) > ARGUMENT_FILE_LIMIT:
        limit = f"{ARGUMENT_FILE_LIMIT} characters"
        raise InputRejected(f"cannot read {option} file {value[1:]!r}: longer than {limit}")
    return text


def _argument_json(option: str, value: str | None, *, must_be_object: bool) -> Any:
    """Parse a JSON|@FILE argument strictly; malformed JSON is a usage error."""
    from launcher_probe.state import InvalidJSON, loads_strict

    if value is None:
        return None
    try:
        parsed = loads_strict(_argument_text(option, value), option)
    except InvalidJSON as error:
        raise UsageError(str(error)) from error
    if must_be_object and not isinstance(parsed, dict):
        raise UsageError(f"{option} must be a JSON object")
    return parsed


def _run_meta(args: argparse.Namespace) -> int:
    from launcher_probe.host.decision import Decision
    from launcher_probe.host.inject import (
        Method,
        ServerDescription,
        Transport,
        dumps_meta,
        resource_read_meta,
        tool_call_meta,
    )
    from launcher_probe.host.resolver import resolve_launcher

    if args.transport not in set(Transport):
        raise UsageError(f"--transport must be one of {', '.join(Transport)}")
    if args.method not in set(Method):
        raise UsageError(f"--method must be one of {', '.join(Method)}")
    transport, method = Transport(args.transport), Method(args.method)
    bound = args.thread_id is not None or args.origin_call_id is not None
    if bound and method is not Method.RESOURCES_READ:
        raise UsageError("--thread-id and --origin-call-id go with --method resources/read")
    capabilities = _argument_json("--capabilities", args.capabilities, must_be_object=True)
    caller_meta = _argument_json("--caller-meta", args.caller_meta, must_be_object=False)
    host_meta = _argument_json("--host-meta", args.host_meta, must_be_object=True)
    state = None if args.state is None else _argument_text("--state", args.state)
    server = ServerDescription(args.server, transport, capabilities)

    def resolve() -> Decision:  # called only when the launcher could be sent
        return resolve_launcher(args.codex)

    if method is Method.TOOLS_CALL:
        result = tool_call_meta(
            server,
            sandbox_state=state,
            launcher=resolve,
            caller_meta=caller_meta,
            host_meta=host_meta,
        )
    else:
        result = resource_read_meta(
            server,
            sandbox_state=state,
            launcher=resolve,
            caller_meta=caller_meta,
            thread_id=args.thread_id,
            origin_call_id=args.origin_call_id,
            host_meta=host_meta,
        )
    sys.stdout.write(dumps_meta(result, indent=2, explain=args.explain) + "\n")
    return int(ExitCode.OK)


# --- probe ------------------------------------------------------------------


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


def _add_seconds(parser: argparse.ArgumentParser, flag: str, help_text: str) -> None:
    parser.add_argument(flag, type=_positive_seconds, default=None, metavar="S", help=help_text)


def _add_probe(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="the Codex CLI to probe (a shim is resolved)")
    parser.add_argument("--json", action="store_true", help="print the stable JSON verdict")
    _add_seconds(parser, "--timeout", "one deadline for the whole probe, in seconds (default 10)")
    parser.add_argument(
        "--level",
        choices=("capability", "enforcement"),
        default="capability",
        help="capability (default) or also check that the sandbox enforces its profiles",
    )


def _run_probe(args: argparse.Namespace) -> int:
    from launcher_probe.host.discovery import Source, make_candidate
    from launcher_probe.host.paths import PathRejected
    from launcher_probe.host.probe import probe_launcher
    from launcher_probe.host.probe_result import DEFAULT_TIMEOUT, ProbeLevel

    # The path as given and, through any shim, its native binary must pass the path rules.
    candidate = make_candidate(Source.EXPLICIT, args.path)
    if not candidate.verdict.ok or candidate.resolved is None:
        raise PathRejected(candidate.verdict)
    path, native = candidate.path, candidate.resolved
    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    result = probe_launcher(native, timeout=timeout, level=ProbeLevel(args.level))
    if args.json:
        _print_json({"path": path, "probed_path": native, **result.to_json()})
    elif result.ok:
        print(_escaped(f"pass: {native}: {result.detail} in {result.duration:.2f} s"))
    else:
        transient = "transient" if result.transient else "permanent"
        print(_escaped(f"fail ({transient}): {native}: {result.reason}: {result.detail}"))
    return int(ExitCode.OK if result.ok else ExitCode.WITHHELD)


# --- resolve ----------------------------------------------------------------


def _add_resolve(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--codex", metavar="PATH", help="the operator's path (only candidate)")
    parser.add_argument("--json", action="store_true", help="print the whole decision as JSON")
    parser.add_argument("--refresh", action="store_true", help="probe again; replace the verdict")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    _add_seconds(parser, "--timeout", "deadline of each probe, in seconds (default 10)")
    _add_seconds(
        parser,
        "--lock-timeout",
        "how long to wait for another process probing the same path (default 30)",
    )


def _run_resolve(args: argparse.Namespace) -> int:
    from launcher_probe.errors import NothingUsable
    from launcher_probe.host.cache import DEFAULT_LOCK_TIMEOUT
    from launcher_probe.host.decision import Published
    from launcher_probe.host.probe_result import DEFAULT_TIMEOUT
    from launcher_probe.host.resolver import ResolverConfig, resolve_launcher

    lock_timeout = DEFAULT_LOCK_TIMEOUT if args.lock_timeout is None else args.lock_timeout
    decision = resolve_launcher(
        args.codex,
        refresh=args.refresh,
        use_cache=not args.no_cache,
        timeout=DEFAULT_TIMEOUT if args.timeout is None else args.timeout,
        config=ResolverConfig(lock_timeout=lock_timeout),
    )
    if args.json:
        _print_json(decision.to_json())
    else:
        for warning in decision.warnings:
            _say(f"warning: {warning}")
    if isinstance(decision, Published):
        if not args.json:
            print(json.dumps(decision.descriptor.to_json(), ensure_ascii=False))
        return int(ExitCode.OK)
    detail = " ".join(decision.detail.split())
    raise NothingUsable(f"launcher withheld: {decision.reason}: {detail}")


# --- cache ------------------------------------------------------------------


def _add_cache(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="cache_command", metavar="show|clear", required=True)
    shown = "list this host's cached verdicts, fresh or stale against the file now"
    show = sub.add_parser("show", help=shown, description=shown)
    show.add_argument("--json", action="store_true", help="print the stable JSON listing")
    cleared = "remove this host's cached verdicts (other hosts' records are kept)"
    clear = sub.add_parser("clear", help=cleared, description=cleared)
    clear.add_argument("--json", action="store_true", help='print {"directory", "removed"}')


def _run_cache(args: argparse.Namespace) -> int:
    from launcher_probe.host.cache import VerdictCache

    cache = VerdictCache(create=False)
    if args.cache_command == "clear":
        removed = cache.clear()
        if args.json:
            _print_json({"directory": str(cache.directory), "removed": removed})
        else:
            print(f"removed {removed} record(s) from {cache.directory}")
        return int(ExitCode.OK)
    listing = cache.listing()
    if args.json:
        _print_json(listing)
        return int(ExitCode.OK)
    print(f"{listing['directory']} (host {listing['host_id']})")
    for entry in listing["records"]:
        verdict = "passed" if entry["ok"] else entry["reason"]
        why = "" if entry["why"] is None else f" ({entry['why']})"
        print(
            f"{entry['state']:<5} {verdict:<20} {entry['version'] or '-':<10} "
            f"age {entry['age']:.0f} s  {entry['path']}{why}"
        )
    for problem in listing["problems"]:
        print(f"ignored   {problem['file']}: {problem['problem']}")
    return int(ExitCode.OK)


# --- command table ----------------------------------------------------------

Command = tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[..., int]]

COMMANDS: tuple[Command, ...] = (
    (
        "discover",
        "list every place the Codex CLI could be, with the path-rule verdict of each",
        _add_discover,
        _run_discover,
    ),
    (
        "exec",
        "run a command under the launcher named in a tools/call _meta; exit with its status",
        _add_exec,
        _run_exec,
    ),
    (
        "meta",
        "build the tools/call or resources/read _meta for a server: publish or omit the launcher",
        _add_meta,
        _run_meta,
    ),
    (
        "probe",
        "verify now, without the cache, that PATH is a full Codex CLI whose sandbox works here",
        _add_probe,
        _run_probe,
    ),
    (
        "resolve",
        "publish the verified launcher descriptor (cached per host) or withhold it with a reason",
        _add_resolve,
        _run_resolve,
    ),
    (
        "cache",
        "show or clear this host's cached verdicts",
        _add_cache,
        _run_cache,
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
    debug = False
    try:
        args = build_parser().parse_args(argv)
        debug = args.debug
        result: int = args.run(args)
        return result
    except LauncherProbeError as error:
        if debug:
            raise
        _say(str(error))
        return int(error.exit_code)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader left (``| head``): say nothing more, and let no flush at exit fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.INTERNAL)
    except Exception as error:
        if debug:
            raise
        print(f"launcher-probe: internal error: {error!r} (rerun with --debug)", file=sys.stderr)
        return int(ExitCode.INTERNAL)
