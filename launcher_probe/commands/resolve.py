"""``resolve``: publish the verified launcher descriptor or withhold it with a reason."""

from __future__ import annotations

import argparse

from launcher_probe.commands.common import add_seconds, add_via, print_json, say_warnings
from launcher_probe.errors import ExitCode


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--codex", metavar="PATH", help="the operator's path (only candidate)")
    parser.add_argument("--json", action="store_true", help="print the whole decision as JSON")
    parser.add_argument("--refresh", action="store_true", help="probe again; replace the verdict")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    add_seconds(parser, "--timeout", "deadline of each probe, in seconds (default 10)")
    add_seconds(
        parser,
        "--lock-timeout",
        "how long to wait for another process probing the same path (default 30)",
    )
    add_via(parser)


def run(args: argparse.Namespace) -> int:
    from launcher_probe.client import resolve_via
    from launcher_probe.errors import NothingUsable
    from launcher_probe.host.decision import Published

    decision, via = resolve_via(
        args.via,
        args.codex,
        refresh=args.refresh,
        use_cache=not args.no_cache,
        timeout=args.timeout,
        lock_timeout=args.lock_timeout,
    )
    if args.json:
        print_json({**decision.to_json(), "via": via})
    else:
        say_warnings(decision.warnings)
    if isinstance(decision, Published):
        if not args.json:
            print_json(decision.descriptor.to_json(), indent=None, wire=True)
        return int(ExitCode.OK)
    detail = " ".join(decision.detail.split())
    raise NothingUsable(f"launcher withheld: {decision.reason}: {detail}")
