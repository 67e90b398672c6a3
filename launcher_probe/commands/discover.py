"""``discover``: every place the Codex CLI could be, with the path-rule verdict of each."""

from __future__ import annotations

import argparse
import json

from launcher_probe.commands.common import print_json
from launcher_probe.errors import ExitCode, NothingUsable
from launcher_probe.host.discovery.order import discover
from launcher_probe.messages import escaped


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--codex", metavar="PATH", help="the operator's path (only candidate)")
    parser.add_argument("--json", action="store_true", help="print the stable JSON report")


def run(args: argparse.Namespace) -> int:
    found = discover(args.codex)
    report = found.to_json()
    if args.json:
        print_json(report)
    else:
        for number, item in enumerate(report["candidates"], 1):
            verdict = "ok" if item["ok"] else f"REJECTED {item['reason']}: {item['detail']}"
            print(escaped(f"{number}. {item['source']:<10} {item['path']}"))
            print(escaped(f"   resolved: {item['resolved'] or '-'}"))
            print(escaped(f"   verdict:  {verdict}"))
            for place in item["also_found_at"]:
                print(escaped(f"   also at:  {place['source']:<10} {place['path']}"))
        for item in report["skipped"]:
            entry = json.dumps(item["entry"], ensure_ascii=False)
            print(escaped(f"skipped: {item['source']} {entry} ({item['reason']})"))
        if not found.usable:
            print("No usable Codex CLI. Looked at:")
            for place in report["searched"]:
                print(escaped(f"  {place['source']:<10} {place['path']}"))
    if not found.usable:
        count = len(found.candidates)
        raise NothingUsable(
            f"no Codex CLI passes the path rules ({count} candidate(s))"
            if count
            else "no Codex CLI found"
        )
    return int(ExitCode.OK)
