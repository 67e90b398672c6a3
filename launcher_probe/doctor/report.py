"""Join the parts into doctor's one report, and its exit code."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from launcher_probe.doctor import candidates, helper, launcher, settings
from launcher_probe.doctor.check import CHECK_TIMEOUT, check_server
from launcher_probe.doctor.servers import (
    codex_config_file,
    read_servers,
    receives_it,
    server_part,
)
from launcher_probe.errors import ExitCode, UsageError
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT
from launcher_probe.json_output import printable

#: At most this many servers are checked at once (each is a process and a thread).
PARALLEL_CHECKS = 8


@dataclass(frozen=True, slots=True)
class Options:
    """What ``doctor`` was asked."""

    codex: str | None = None
    codex_config: str | None = None
    servers: Sequence[str] = ()
    check_servers: bool = False
    timeout: float = DEFAULT_TIMEOUT
    server_timeout: float = CHECK_TIMEOUT


def diagnose(options: Options, progress: Callable[[str], None]) -> dict[str, Any]:
    """The report: ``{"ok", "settings", "candidates", "launcher", "helper", "servers"}``.

    ``ok`` is true when the launcher would be published and every enabled local server
    listed would receive it (a remote one is not applicable). ``progress`` is told about
    each long step before it starts.
    ConfigError for a config file (launcher-probe's or Codex's) that cannot be used;
    UsageError for ``--server NAME`` that the Codex config does not list.
    """
    report: dict[str, Any] = {"settings": settings.collect(options.codex)}
    report["candidates"] = candidates.collect(options.codex)
    progress("deciding the launcher (probing it unless its verdict is cached)")
    decision, report["launcher"] = launcher.collect(options.codex, timeout=options.timeout)
    report["helper"] = helper.collect(options.codex, decision)
    file = codex_config_file(options.codex_config)
    listed = read_servers(file, required=options.codex_config is not None)
    chosen = _chosen(listed or [], options.servers, printable(str(file)))
    checks: list[dict[str, Any] | None] = [None] * len(chosen)
    stdio = [i for i, server in enumerate(chosen) if server.transport == "stdio" and server.enabled]
    if options.check_servers and stdio:
        progress(f"checking {len(stdio)} stdio server(s): initialize, then shut down")
        with ThreadPoolExecutor(min(PARALLEL_CHECKS, len(stdio))) as pool:
            done = pool.map(
                lambda i: check_server(chosen[i], timeout=options.server_timeout), stdio
            )
            for index, check in zip(stdio, done, strict=True):
                checks[index] = check
    parts = [server_part(s, decision, c) for s, c in zip(chosen, checks, strict=True)]
    report["servers"] = {
        "config": printable(str(file)),
        "exists": listed is not None,
        "checked": options.check_servers,
        "servers": parts,
    }
    report["ok"] = (
        report["launcher"]["decision"] == "published"
        and report["helper"]["agrees"] is not False
        and all(map(receives_it, parts))
    )
    return {"ok": report.pop("ok"), **report}


def _chosen(listed: list[Any], names: Sequence[str], file: str) -> list[Any]:
    if not names:
        return listed
    known = {server.name: server for server in listed}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UsageError(f"{file} lists no server named {', '.join(unknown)}")
    return [known[name] for name in dict.fromkeys(names)]


def exit_code(report: dict[str, Any]) -> int:
    """0 when ``ok``, else 3 (something would be withheld or omitted)."""
    return int(ExitCode.OK if report["ok"] else ExitCode.WITHHELD)
