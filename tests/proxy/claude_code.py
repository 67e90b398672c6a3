"""Claude Code as the host, as a user drives it: ``claude mcp add`` a server, and ``claude mcp
get`` starts it and health-checks it (``initialize``) as a session would; every wait
bounded. Its home is the test's private HOME; nothing is sent anywhere."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

#: Claude Code's own waits, in ms, for a server to answer ``initialize`` (``MCP_TIMEOUT``).
CONNECT_TIMEOUT_MS = 30_000
#: Claude Code's switches for no telemetry, no update check, no other traffic.
QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


class ClaudeCode:
    """The ``claude`` binary run with ``env`` (its HOME private) in ``cwd``, a project."""

    def __init__(self, binary: Path, env: dict[str, str], cwd: Path) -> None:
        self.binary, self.env, self.cwd = binary, {**env, **QUIET}, cwd

    def run(self, *words: str, timeout_ms: int = CONNECT_TIMEOUT_MS) -> str:
        """``claude WORDS``' stdout; it must exit 0."""
        done = subprocess.run(
            [str(self.binary), *words],
            env={**self.env, "MCP_TIMEOUT": str(timeout_ms)},
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout_ms / 1000 + 60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def add(self, name: str, argv: list[str]) -> None:
        """``claude mcp add -s user NAME -- ARGV``."""
        self.run("mcp", "add", "-s", "user", name, "--", *argv)

    def status(self, name: str, *, timeout_ms: int = CONNECT_TIMEOUT_MS) -> str:
        """What ``claude mcp get NAME`` says of the server once it started it: its
        ``Status:`` (``✔ Connected``, ``✘ Failed to connect``)."""
        said = self.run("mcp", "get", name, timeout_ms=timeout_ms)
        (status,) = (line for line in said.splitlines() if line.startswith("  Status: "))
        return status.removeprefix("  Status: ")

    def server_log(self, name: str) -> list[str]:
        """What Claude Code logged of the server ``name``, an entry each (the server's
        stderr among them), from its JSON lines in its cache directory."""
        cache = self.env.get("XDG_CACHE_HOME") or str(Path(self.env["HOME"], ".cache"))
        logs = sorted(Path(cache, "claude-cli-nodejs").glob(f"*/mcp-logs-{name}/*.jsonl"))
        entries = [json.loads(line) for path in logs for line in path.read_text().splitlines()]
        return [text for entry in entries for text in entry.values() if isinstance(text, str)]
