"""``probe``: verify a Codex CLI now, without the cache."""

from __future__ import annotations

import argparse

from launcher_probe.arguments import add_seconds
from launcher_probe.commands.common import print_json
from launcher_probe.contract import Source
from launcher_probe.errors import ExitCode
from launcher_probe.host.discovery.candidate import make_candidate
from launcher_probe.host.paths.rules import PathRejected
from launcher_probe.host.probe.steps import probe_launcher
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT, ProbeLevel
from launcher_probe.messages import escaped


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="the Codex CLI to probe (a shim is resolved)")
    parser.add_argument("--json", action="store_true", help="print the stable JSON verdict")
    add_seconds(
        parser,
        "--timeout",
        f"one deadline for the whole probe, in seconds (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--level",
        choices=("capability", "enforcement"),
        default="capability",
        help="capability (default) or also check that the sandbox enforces its profiles",
    )


def run(args: argparse.Namespace) -> int:
    # The path as given and, through any shim, its native binary must pass the path rules.
    candidate = make_candidate(Source.EXPLICIT, args.path)
    if not candidate.verdict.ok or candidate.resolved is None:
        raise PathRejected(candidate.verdict)
    path, native = candidate.path, candidate.resolved
    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    result = probe_launcher(native, timeout=timeout, level=ProbeLevel(args.level))
    if args.json:
        print_json({"path": path, "resolved": native, **result.to_json()})
    elif result.ok:
        print(escaped(f"pass: {native}: {result.detail} in {result.duration:.2f} s"))
    else:
        transient = "transient" if result.transient else "permanent"
        print(escaped(f"fail ({transient}): {native}: {result.reason}: {result.detail}"))
    return int(ExitCode.OK if result.ok else ExitCode.WITHHELD)
