"""``cache``: show or clear this host's cached verdicts."""

from __future__ import annotations

import argparse
from typing import Any

from launcher_probe.commands.common import print_json
from launcher_probe.errors import ExitCode
from launcher_probe.host.cache.policy import VerdictCache
from launcher_probe.json_output import printable
from launcher_probe.messages import escaped


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="cache_command", metavar="show|clear", required=True)
    shown = "list this host's cached verdicts, fresh or stale against the file now"
    show = sub.add_parser("show", help=shown, description=shown)
    show.add_argument("--json", action="store_true", help="print the stable JSON listing")
    cleared = "remove this host's cached verdicts (other hosts' records are kept)"
    clear = sub.add_parser("clear", help=cleared, description=cleared)
    clear.add_argument(
        "--json", action="store_true", help='print {"schema": 1, "directory", "removed"}'
    )


def _bubblewrap_text(shown: dict[str, Any]) -> str:
    from launcher_probe.host.bubblewrap import Bubblewrap

    return Bubblewrap(shown["source"], shown["path"], shown["sha256"]).describe()


def run(args: argparse.Namespace) -> int:
    cache = VerdictCache()
    if args.cache_command == "clear":
        removed = cache.clear()
        directory = printable(str(cache.directory))
        if args.json:
            print_json({"directory": directory, "removed": removed})
        else:
            print(escaped(f"removed {removed} record(s) from {directory}"))
        return int(ExitCode.OK)
    listing = cache.listing()
    if args.json:
        print_json(listing)
        return int(ExitCode.OK)
    print(escaped(f"{listing['directory']} (host {listing['host_id']})"))
    for entry in listing["records"]:
        verdict = "passed" if entry["ok"] else entry["reason"]
        why = "" if entry["why"] is None else f" ({entry['why']})"
        print(
            escaped(
                f"{entry['state']:<5} {verdict:<20} {entry['version'] or '-':<10} "
                f"age {entry['age']:.0f} s  {entry['path']}{why}"
            )
        )
        if entry["bubblewrap"] is not None:
            print(escaped(f"      bubblewrap: {_bubblewrap_text(entry['bubblewrap'])}"))
    for problem in listing["problems"]:
        print(escaped(f"ignored   {problem['file']}: {problem['problem']}"))
    return int(ExitCode.OK)
