"""``doctor``: explain, part by part, whether MCP servers get the launcher and how to fix
what stops them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from launcher_probe.arguments import add_seconds
from launcher_probe.commands.common import print_json
from launcher_probe.contract import SANDBOX_LAUNCHER_KEY
from launcher_probe.doctor.check import CHECK_TIMEOUT
from launcher_probe.doctor.report import Options, diagnose, exit_code
from launcher_probe.host.bubblewrap import Bubblewrap
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT
from launcher_probe.messages import escaped, say

#: Characters of a withheld decision's detail shown (the JSON report has all of it).
DETAIL_CHARS = 240


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--codex", metavar="PATH", help="the operator's path (only candidate)")
    parser.add_argument(
        "--codex-config",
        metavar="FILE",
        help="Codex's config.toml listing the MCP servers (default $CODEX_HOME/config.toml, "
        "CODEX_HOME defaulting to ~/.codex)",
    )
    parser.add_argument(
        "--server",
        metavar="NAME",
        action="append",
        default=[],
        help="only this [mcp_servers.NAME] (repeatable; default every one listed)",
    )
    parser.add_argument(
        "--check-servers",
        action="store_true",
        help="start each stdio server as configured, exchange MCP initialize, read its "
        "capabilities, shut it down",
    )
    parser.add_argument("--json", action="store_true", help="print the stable JSON report")
    add_seconds(
        parser, "--timeout", f"deadline of the probe, in seconds (default {DEFAULT_TIMEOUT:g})"
    )
    add_seconds(
        parser,
        "--server-timeout",
        f"deadline of each server's start and initialize, in seconds (default {CHECK_TIMEOUT:g})",
    )


def run(args: argparse.Namespace) -> int:
    options = Options(
        codex=args.codex,
        codex_config=args.codex_config,
        servers=tuple(args.server),
        check_servers=args.check_servers,
        timeout=args.timeout or DEFAULT_TIMEOUT,
        server_timeout=args.server_timeout or CHECK_TIMEOUT,
    )
    report = diagnose(options, _progress)
    if args.json:
        print_json(report)
    else:
        _render(report)
    return exit_code(report)


def _progress(message: str) -> None:
    """A long step is starting: said on a terminal, quiet otherwise."""
    if sys.stderr.isatty():
        say(f"{message}...")


def _line(indent: int, text: str) -> None:
    print(escaped(" " * indent + text))


def _fix(lines: list[str], indent: int = 4) -> None:
    for line in lines:
        _line(indent, f"fix: {line}")


def _render(report: dict[str, Any]) -> None:
    _settings(report["settings"])
    _candidates(report["candidates"])
    _launcher(report["launcher"])
    _helper(report["helper"])
    _servers(report["servers"])
    launcher = report["launcher"]
    if launcher["decision"] == "published":
        descriptor = json.dumps(launcher["launcher"], ensure_ascii=False)
        verdict = "ok" if report["ok"] else "a server would not receive it (see above)"
        _line(0, f"result: {verdict}; launcher published: {descriptor}")
    else:
        _line(0, f"result: launcher withheld: {launcher['reason']} (fix above)")


def _settings(part: dict[str, Any]) -> None:
    config = part["config"]
    _line(0, "settings")
    _line(2, f"--codex:        {part['flag'] or '(not given)'}")
    _line(2, f"{part['env']['name']}: {part['env']['value'] or '(not set)'}")
    state = f"codex = {config['codex']}" if config["codex"] else "no codex key"
    state = state if config["exists"] else "absent"
    _line(2, f"config file:    {config['path']} ({state})")
    cache = part["cache"]
    if cache["directory"] is not None:
        _line(2, f"cache dir:      {cache['directory']} ({cache['filesystem'] or 'type unknown'})")
    if cache["warning"] is not None:
        _line(2, f"warning: {cache['warning']}")
    if part["source"] is None:
        _line(2, "verdict: no operator setting; discovery searches every place")
    else:
        _line(2, f"verdict: {part['source']} decides: {part['path']} is the only candidate")


def _candidates(part: dict[str, Any]) -> None:
    _line(0, "candidates")
    for number, item in enumerate(part["candidates"], 1):
        verdict = "ok" if item["ok"] else f"REJECTED {item['reason']}: {item['detail']}"
        _line(2, f"{number}. {item['source']:<10} {item['path']}")
        _line(5, f"resolved: {item['resolved'] or '-'}")
        _line(5, f"verdict:  {verdict}")
        _fix(item["fix"], 5)
    if not part["candidates"]:
        _line(2, f"none found in {len(part['searched'])} place(s) (discover lists them)")


def _launcher(part: dict[str, Any]) -> None:
    _line(0, "launcher")
    if part["decision"] == "published":
        descriptor = json.dumps(part["launcher"], ensure_ascii=False)
        _line(2, f"verdict: published {descriptor}")
        _line(2, f"from: {part['source']} {part['path']}, codex-cli {part['version']}")
    else:
        detail = part["detail"]
        if len(detail) > DETAIL_CHARS:
            detail = f"{detail[:DETAIL_CHARS]}... (--json has it all)"
        _line(2, f"verdict: withheld: {part['reason']}: {detail}")
    for warning in part["warnings"]:
        _line(2, f"warning: {warning}")
    probe, cache = part["probe"], part["cache"]
    if probe is not None:
        steps = ", ".join(f"{step['name']} exit {step['exit_status']}" for step in probe["steps"])
        outcome = "passed" if probe["ok"] else f"failed ({probe['reason']})"
        _line(2, f"probe: {outcome} in {probe['duration']:.2f} s: {steps}")
        if probe["bubblewrap"] is not None:
            shown = probe["bubblewrap"]
            used = Bubblewrap(shown["source"], shown["path"], shown["sha256"])
            _line(4, f"bubblewrap: {used.describe()}")
        failed = probe["failed_step"]
        if failed is not None:
            _line(4, f"{failed['name']} stderr: {failed['stderr_excerpt'][-300:]}")
    if cache is not None:
        shown = cache["state"]
        if cache["age"] is not None:
            shown += f", age {cache['age']:.0f} s, expires in {cache['expires_in']:.0f} s"
        if cache["why"]:
            shown += f" ({cache['why']})"
        _line(2, f"cache: {shown}: {cache['file'] or '-'}")
    launcher = part["meta"].get(SANDBOX_LAUNCHER_KEY)
    keys = ", ".join(key for key in part["meta"] if key != SANDBOX_LAUNCHER_KEY)
    sent = f"{SANDBOX_LAUNCHER_KEY} = {json.dumps(launcher)}" if launcher else "no launcher"
    _line(2, f"_meta a capable stdio server receives: {keys}; {sent}")
    _fix(part["fix"], 2)


def _helper(part: dict[str, Any]) -> None:
    _line(0, "helper")
    if part["running"]:
        up = "" if part["uptime"] is None else f", up {part['uptime']:.0f} s"
        _line(2, f"verdict: running (pid {part['pid']}{up}): {part['socket']}")
    elif part["socket"] is None:
        _line(2, f"verdict: not asked: {part['detail']}")
    else:
        _line(2, f"verdict: not running ({part['socket']}); optional: launcher-probe serve")
    if part["agrees"]:
        _line(2, "decision: the same as this process's (above)")
    elif part["problem"] is not None:
        _line(2, f"problem: {part['problem']}")
        _fix(part["fix"], 2)


def _servers(part: dict[str, Any]) -> None:
    exists = "" if part["exists"] else " (absent)"
    _line(0, f"servers in {part['config']}{exists}")
    for server in part["servers"]:
        where = server["url"] or " ".join([server["command"], *server["args"]])
        _line(2, f"{server['name']}: {server['transport']} {where}")
        check = server["check"]
        if not server["enabled"]:
            _line(4, "disabled (enabled = false)")
        if server["through"] is not None:
            from launcher_probe.proxy.configured import summary

            _line(4, summary(server["through"]))
            if server["through"]["note"] is not None:
                _line(4, f"note: {server['through']['note']}")
            launcher = server["through"]["launcher"]
            if launcher is not None:
                shown = (launcher["launcher"] or {}).get("codexExecutable") or launcher["reason"]
                _line(4, f"its launcher: {launcher['decision']} ({shown})")
        if check is not None and check["ok"]:
            names = ", ".join(check["capabilities"]) or "(none)"
            _line(4, f"experimental capabilities: {names} (initialize in {check['duration']} s)")
        if check is not None and (check["stderr_excerpt"].strip() or not check["ok"]):
            excerpt = " ".join(check["stderr_excerpt"].split())[-300:]
            _line(4, f"stderr: {excerpt or '(it wrote nothing)'}")
        verdict = server["launcher"].replace("_", " ")
        if server["reason"] is not None:
            verdict += f" ({server['reason']}): {server['detail']}"
        elif server["assumed"] and server["transport"] == "stdio":
            verdict += " if it advertises codex/sandbox-state"
            verdict += (
                " (--check-servers asks it)"
                if server["enabled"]
                else ", once enabled (--check-servers starts no disabled server)"
            )
        _line(4, f"launcher: {verdict}")
        _fix(server["fix"])
    if not part["servers"]:
        _line(2, "no MCP server listed")
