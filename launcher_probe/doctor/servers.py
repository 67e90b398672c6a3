"""The MCP servers Codex is configured with, and whether each would receive the launcher.

Codex's ``config.toml`` (``$CODEX_HOME/config.toml``, ``CODEX_HOME`` defaulting to
``~/.codex``) lists servers as ``[mcp_servers.NAME]`` tables: ``command``, ``args``,
``env``, ``cwd`` for a stdio server, ``url`` for a streamable HTTP one. The verdict per
server comes from the injector itself (``tool_call_meta``), never from a copy of its rules.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from launcher_probe.contract import SANDBOX_CAPABILITIES, SANDBOX_STATE_CAPABILITY
from launcher_probe.doctor.fixes import (
    HOST_STATE_REFUSED,
    WRAPPED_USES_LAUNCHER,
    fix_for,
    withheld_fix,
)
from launcher_probe.doctor.launcher import EXAMPLE_STATE
from launcher_probe.errors import ConfigError
from launcher_probe.host.decision import Decision, Published, Withheld
from launcher_probe.host.paths.rules import open_regular_file
from launcher_probe.json_output import printable

#: A server's ``launcher`` verdict when none can apply: a remote (HTTP) server, or one that
#: runs in the sandbox as a whole (``wrap``).
NOT_APPLICABLE = "not_applicable"
#: The reason of a server run through ``wrap`` under a published launcher that takes none
#: (``NOT_APPLICABLE``: fine; one that does is ``WRAPPED_USES_LAUNCHER``).
WRAPPED = "wrapped"

#: A Codex config larger than this is refused rather than read.
MAX_CODEX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One ``[mcp_servers.NAME]`` table."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    enabled: bool = True

    @property
    def transport(self) -> str:
        """``stdio`` (a command this host starts) or ``http`` (a URL)."""
        return "stdio" if self.command is not None else "http"


def codex_config_file(given: str | None) -> Path:
    """``given``, else ``$CODEX_HOME/config.toml`` (``CODEX_HOME`` defaults to ``~/.codex``)."""
    if given is not None:
        return Path(given)
    home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return Path(home) / "config.toml"


def read_servers(path: Path, *, required: bool) -> list[ServerConfig] | None:
    """The servers ``path`` lists, in its order; None when it does not exist and is not
    ``required``. ConfigError naming the file (and the line, for TOML errors) otherwise."""
    try:
        with open_regular_file(str(path)) as file:
            raw = file.read(MAX_CODEX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        if required:
            raise ConfigError(f"{printable(str(path))}: no such file") from None
        return None
    except (OSError, ValueError) as error:
        raise ConfigError(f"{printable(str(path))}: cannot read: {error}") from error
    if len(raw) > MAX_CODEX_CONFIG_BYTES:
        raise ConfigError(f"{printable(str(path))}: larger than {MAX_CODEX_CONFIG_BYTES} bytes")
    import tomllib

    from launcher_probe.host.discovery import toml_bounded

    try:
        table = toml_bounded.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{printable(str(path))}: not UTF-8 (byte {error.start})") from error
    except (tomllib.TOMLDecodeError, RecursionError, ValueError, MemoryError) as error:
        raise ConfigError(f"{printable(str(path))}: {error}") from error
    servers = table.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{printable(str(path))}: mcp_servers must be a table")
    return [_server(path, name, entry) for name, entry in servers.items()]


def _server(path: Path, name: str, entry: Any) -> ServerConfig:
    where = f"{printable(str(path))}: [mcp_servers.{name}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table")

    def text(key: str) -> str | None:
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{where}: {key} must be a string")
        return value

    args, env = entry.get("args", []), entry.get("env", {})
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise ConfigError(f"{where}: args must be a list of strings")
    if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
        raise ConfigError(f"{where}: env must be a table of strings")
    command, url = text("command"), text("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{where}: needs exactly one of command (stdio) and url (http)")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: enabled must be true or false")
    return ServerConfig(name, command, tuple(args), dict(env), text("cwd"), url, enabled)


def server_part(
    server: ServerConfig, decision: Decision, check: dict[str, Any] | None
) -> dict[str, Any]:
    """One server's part: its configuration (env values left out), the check (or null),
    and ``launcher``: ``sent``, ``omitted`` (with the injector's ``reason`` and
    ``detail``), ``unknown`` (the check could not ask the server), with ``fix``, or
    ``not_applicable`` (a remote server: ``transport_not_stdio``, nothing to fix).

    Unchecked, the server is assumed to advertise the capability (``assumed`` is true):
    the verdict then says what the transport and the decision allow. A server run through
    ``wrap`` is judged by ``_wrapped`` instead (unchecked, it is assumed to take none;
    under a withheld launcher it is not started, nor checked, unless wrap runs it
    unsandboxed)."""
    from launcher_probe.host.inject import ServerDescription, Transport, tool_call_meta

    part: dict[str, Any] = {
        "name": server.name,
        "transport": server.transport,
        "enabled": server.enabled,
        "command": server.command,
        "args": list(server.args),
        "env_keys": sorted(server.env),
        "cwd": server.cwd,
        "url": server.url,
        "check": check,
        "assumed": check is None,
    }
    through, own = _through(server, decision)
    if through is not None and through["command"] == "proxy" and isinstance(own, Published):
        decision = own  # the proxy adds its launcher to a call whose host sent none
    part["through"] = through
    wraps = through is not None and through["command"] == "wrap" and not through["problem"]
    unsandboxed = wraps and bool(through and through["allow_unsandboxed"])
    if wraps and isinstance(own, Withheld) and not unsandboxed:  # wrap starts nothing
        decision = own
        launcher, reason, detail = _wrapped(own, None, unsandboxed=False)
    elif check is not None and not check["ok"]:
        launcher, reason, detail = "unknown", check["problem"], check["detail"]
    elif wraps:
        decision = own
        launcher, reason, detail = _wrapped(own, check, unsandboxed=unsandboxed)
    else:
        capabilities = {SANDBOX_STATE_CAPABILITY: {}} if check is None else check["capabilities"]
        transport = Transport.STDIO if server.transport == "stdio" else Transport.HTTP
        described = ServerDescription(server.name, transport, capabilities)
        result = tool_call_meta(described, sandbox_state=EXAMPLE_STATE, launcher=decision)
        launcher = "sent" if result.launcher_included else "omitted"
        reason = None if result.omitted_reason is None else str(result.omitted_reason)
        detail = result.detail
        refuses = through is not None and through["trust_host_state"] is False
        if refuses and transport is Transport.STDIO and described.wants_sandbox_state():
            launcher, reason = "omitted", HOST_STATE_REFUSED
            detail = (
                "Codex sends each call its own sandbox state, which this proxy refuses "
                "without --trust-host-state: the server gets no call at all"
            )
    if server.transport == "http":  # runs where it is hosted: a local launcher means nothing
        launcher = NOT_APPLICABLE
    fix: list[str] = []
    if reason is not None and launcher != NOT_APPLICABLE:
        if isinstance(decision, Withheld) and reason == decision.reason:
            fix = withheld_fix(decision)  # the launcher's own fix, for its path
        else:
            fix = fix_for(reason, detail)
    return {**part, "launcher": launcher, "reason": reason, "detail": detail, "fix": fix}


def _wrapped(
    own: Decision, check: dict[str, Any] | None, *, unsandboxed: bool
) -> tuple[str, str | None, str]:
    """A server run through ``wrap``: ``(launcher, reason, detail)`` for the launcher
    ``own`` it starts under, what the ``check`` (an ``ok`` one, or None) learnt, and
    whether wrap runs it ``unsandboxed`` without a launcher (``--allow-unsandboxed``)."""
    if isinstance(own, Withheld):
        does = (
            "runs the server UNSANDBOXED (--allow-unsandboxed)"
            if unsandboxed
            else "starts no server"
        )
        return "omitted", str(own.reason), f"wrap {does}: {own.detail}"
    if check is not None and any(name in check["capabilities"] for name in SANDBOX_CAPABILITIES):
        detail = (
            "it advertises the sandbox capability, so it runs its commands through the "
            "launcher, and their codex sandbox cannot start inside wrap's"
        )
        return "sent", WRAPPED_USES_LAUNCHER, detail
    detail = "it runs in the sandbox as a whole (wrap): no launcher is for it"
    if check is None:
        detail += ", unless it advertises codex/sandbox-state (--check-servers asks it)"
    return NOT_APPLICABLE, WRAPPED, detail


def _through(server: ServerConfig, decision: Decision) -> tuple[dict[str, Any] | None, Decision]:
    """``launcher-probe proxy`` or ``wrap`` as the server's command, explained, and the
    launcher decision it would start under (its own ``--codex``, else doctor's)."""
    from launcher_probe.proxy.configured import explained, launcher_probe_words

    words = launcher_probe_words(server.command, server.args)
    if words is None:
        return None, decision
    part = explained(words, server.cwd)
    if part["problem"] is not None:
        return {**part, "launcher": None, "note": None}, decision
    if part["codex"] is not None:
        from launcher_probe.host.resolver import resolve_launcher

        decision = resolve_launcher(part["codex"])
    shown = decision.to_json()
    launcher = {key: shown.get(key) for key in ("decision", "launcher", "reason", "detail")}
    return {**part, "launcher": launcher, "note": _wrap_note(server, part, decision)}, decision


def _wrap_note(server: ServerConfig, part: dict[str, Any], decision: Decision) -> str | None:
    """What ``wrap`` says on stderr as it starts the server's command (``asyncio_note``: the
    network restricted by the policy options, a launcher to run it under), the command
    found as the server would find it; None when it says nothing."""
    restricted = part["command"] == "wrap" and part["policy"].get("network") == "restricted"
    if not restricted or not isinstance(decision, Published):
        return None
    from launcher_probe.proxy.program import asyncio_note

    return asyncio_note(part["inner"], {**os.environ, **server.env}, server.cwd)


def receives_it(part: dict[str, Any]) -> bool:
    """True when the server of ``part`` is fine as it is: sent the launcher (and able to use
    it), disabled, or one no launcher applies to (remote, or wrapped)."""
    fine = part["launcher"] in ("sent", NOT_APPLICABLE) and part["reason"] != WRAPPED_USES_LAUNCHER
    return not part["enabled"] or fine
