"""docs/hosts.md: every host's snippet parses as that host reads it (JSON, TOML, YAML, a
command line, Python), names the same command, and that command works as an MCP server."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.proxy.claude_code import ClaudeCode
from tests.proxy.client import ProxyClient

DOC = ROOT / "docs" / "hosts.md"
INSPECTOR = "@modelcontextprotocol/inspector"


def inspector_pin() -> str:
    """The Inspector version the tests run (``scripts/hosts/inspector``'s pin)."""
    manifest = json.loads((ROOT / "scripts/hosts/inspector/package.json").read_text())
    version: str = manifest["dependencies"][INSPECTOR]
    return version


SNIPPET = re.compile(
    r"<!-- snippet: (?P<name>[\w-]+) -->\n```(?P<language>\w+)\n(?P<body>.*?)```", re.S
)
CODEX, PROJECT = "/abs/path/to/codex", "/abs/path/to/project"
#: The command every snippet configures.
EXPECTED = [
    "launcher-probe", "proxy", "--codex", CODEX, "--sandbox", "workspace-write",
    "--cwd", PROJECT, "--", "python", "-m", "launcher_probe.examples.shell_server",
]  # fmt: skip
HOSTS = (
    "claude-code", "claude-mcp-add", "cursor", "vscode", "goose", "zed", "codex",
    "python-sdk", "inspector",
)  # fmt: skip


def snippets() -> dict[str, tuple[str, str]]:
    found = {m["name"]: (m["language"], m["body"]) for m in SNIPPET.finditer(DOC.read_text())}
    assert sorted(found) == sorted(HOSTS)
    return found


def _command(entry: dict[str, Any], command: str = "command") -> list[str]:
    words = [entry[command], *entry["args"]]
    assert all(isinstance(word, str) for word in words)
    return words


def configured_argv(name: str, language: str, body: str) -> list[str]:
    """The argv the host named ``name`` runs for the snippet ``body``, read as it reads it."""
    if name in ("claude-code", "cursor"):
        entry = json.loads(body)["mcpServers"]["shell"]
        assert entry.get("type", "stdio") == "stdio"
        return _command(entry)
    if name == "vscode":
        entry = json.loads(body)["servers"]["shell"]
        assert entry["type"] == "stdio"
        return _command(entry)
    if name == "zed":
        entry = json.loads(body)["context_servers"]["shell"]
        assert entry["source"] == "custom"
        return _command(entry)
    if name == "goose":
        entry = yaml.safe_load(body)["extensions"]["shell"]
        assert entry["type"] == "stdio" and entry["enabled"] is True
        return _command(entry, "cmd")
    if name == "codex":
        entry = tomllib.loads(body)["mcp_servers"]["shell"]
        assert entry["env"] == {"LAUNCHER_PROBE_CODEX": CODEX}
        words = _command(entry)
        words.remove("--trust-host-state")  # Codex's own state stands: the others' lack it
        return words
    if name == "python-sdk":
        namespace: dict[str, Any] = {}
        exec(body, namespace)  # the project's own documentation
        parameters = namespace["parameters"]
        return [parameters.command, *parameters.args]
    words = shlex.split(body)
    if name == "claude-mcp-add":
        assert words[:4] == ["claude", "mcp", "add", "shell"] and words[4] == "--"
        return words[5:]
    assert language == "sh" and words[:3] == ["npx", f"{INSPECTOR}@{inspector_pin()}", "--cli"]
    return words[3 : words.index("--method")]


def run_here(words: list[str], codex: Path, project: Path) -> list[str]:
    """A snippet's command as it runs here: this interpreter for ``launcher-probe`` and
    ``python``, the real paths for the placeholders."""
    here = {"launcher-probe": [sys.executable, "-m", "launcher_probe"], "python": [sys.executable]}
    places = {CODEX: str(codex), PROJECT: str(project)}
    return [part for word in words for part in here.get(word, [places.get(word, word)])]


@pytest.mark.parametrize("name", HOSTS)
def test_each_snippet_configures_the_proxy(name: str) -> None:
    language, body = snippets()[name]
    assert configured_argv(name, language, body) == EXPECTED


@pytest.mark.real_codex
def test_the_configured_command_serves_and_sandboxes(
    env: dict[str, str], workspace: Path, tmp_path: Path, real_codex: Path
) -> None:
    """The command of every snippet (all equal, above), run as the host runs it."""
    argv = run_here(EXPECTED, real_codex, workspace)
    client = ProxyClient(argv, env=env, errlog=tmp_path / "proxy.err")
    try:
        client.initialize()
        tools = client.answer(client.request("tools/list", {}))["result"]["tools"]
        assert [tool["name"] for tool in tools] == ["run"]
        command = ["sh", "-c", "echo made > inside.txt"]
        answer = client.answer(client.call("run", {"command": command}))
        assert answer["result"]["structuredContent"]["exit_status"] == 0, answer
        assert (workspace / "inside.txt").read_text() == "made\n"
        assert client.finish() == 0
    finally:
        client.close()


@pytest.mark.real_codex
def test_the_mcp_inspector_cli_runs_a_sandboxed_command(
    env: dict[str, str], workspace: Path, real_codex: Path, mcp_inspector: Path
) -> None:
    """A client no one here wrote: the MCP Inspector's CLI (the ``mcp_inspector``
    fixture: ``$MCP_INSPECTOR``, else ``scripts/fetch-host inspector``'s), run with the
    documented command line. It drops the ``--`` before the server's command. Its text
    beyond ASCII (the TypeScript SDK writes UTF-8 as it is) reaches the command as sent."""
    _, body = snippets()["inspector"]
    words = shlex.split(body)[3:]
    text = "é—日本😀"
    words[words.index("--tool-arg") + 1] = f'command=["sh","-c","printf %s {text} > inside.txt"]'
    argv = run_here(words, real_codex, workspace)
    path = f"{os.path.dirname(shutil.which('node') or '/usr/bin/node')}:{env['PATH']}"
    done = subprocess.run(
        [str(mcp_inspector), "--cli", *argv], env={**env, "PATH": path},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["structuredContent"]["exit_status"] == 0
    assert (workspace / "inside.txt").read_text(encoding="utf-8") == text


@pytest.mark.real_codex
def test_claude_code_connects_to_the_documented_server(
    env: dict[str, str], workspace: Path, real_codex: Path, claude_code: Path
) -> None:
    """A host no one here wrote: Claude Code itself (the ``claude_code`` fixture). The
    documented ``claude mcp add`` line run as printed (its default scope: this project),
    and the ``.mcp.json`` entry given to ``claude mcp add-json`` (a project's own file waits
    for the user's approval); Claude Code starts each and it answers."""
    host = ClaudeCode(claude_code, env, workspace)
    words = shlex.split(snippets()["claude-mcp-add"][1])
    host.run(*words[1:5], *run_here(words[5:], real_codex, workspace))  # mcp add shell --
    entry = json.loads(snippets()["claude-code"][1])["mcpServers"]["shell"]
    command, *args = run_here(_command(entry), real_codex, workspace)
    host.run(
        "mcp", "add-json", "shell-json", json.dumps({**entry, "command": command, "args": args})
    )
    assert host.status("shell") == "✔ Connected"
    assert host.status("shell-json") == "✔ Connected"
