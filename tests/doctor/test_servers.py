"""``doctor --check-servers`` against real server processes listed in a Codex config.toml."""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from launcher_probe.contract import SANDBOX_CAPABILITIES
from tests.conftest import HostEnv, run_cli
from tests.server.mcp_client import EXAMPLE_SERVER

HERE = Path(__file__).resolve().parent
#: Generous: the example server imports the MCP SDK, seconds on a loaded machine.
SERVER_TIMEOUT = 20


def toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


def write_config(codex_home: Path, marker: str) -> Path:
    """(a) the example server, (b) one advertising nothing, (c) an HTTP one, (d) one whose
    command does not exist, (e) one that never answers initialize; ``marker`` is in every
    stdio server's arguments."""
    python = toml_string(sys.executable)
    codex_home.mkdir(exist_ok=True)
    config = codex_home / "config.toml"
    config.write_text(
        f"""
[mcp_servers.example]
command = {python}
args = [{", ".join(map(toml_string, EXAMPLE_SERVER))}, "--timeout", "5"]
env = {{ LAUNCHER_PROBE_TEST_MARKER = "{marker}" }}

[mcp_servers.silent]
command = {python}
args = [{toml_string(str(HERE / "silent_server.py"))}, "{marker}"]

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"

[mcp_servers.missing]
command = "/nonexistent/launcher-probe-test-server"
args = ["{marker}"]

[mcp_servers.hanging]
command = {python}
args = [{toml_string(str(HERE / "hanging_server.py"))}, "{marker}"]
"""
    )
    return config


def running_with(marker: str) -> list[int]:
    """Pids of live processes whose command line or environment holds ``marker``."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            environ = process.environ()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        words = [*(process.info["cmdline"] or []), *environ.values()]
        if any(marker in word for word in words):
            found.append(process.info["pid"])
    return found


@pytest.mark.real_codex
def test_each_server_gets_its_verdict_and_fix_and_nothing_is_left_running(
    host_env: HostEnv, real_codex: Path
) -> None:
    marker = f"doctor-test-{secrets.token_hex(8)}"
    write_config(host_env.codex_home, marker)
    done = run_cli(
        "doctor",
        "--codex",
        str(real_codex),
        "--check-servers",
        "--server-timeout",
        str(SERVER_TIMEOUT),
        "--json",
        env=host_env.env,
        timeout=SERVER_TIMEOUT + 60,  # the bound: every check runs at once, under its deadline
    )
    assert running_with(marker) == []
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert report["launcher"]["decision"] == "published"
    servers: dict[str, Any] = {server["name"]: server for server in report["servers"]["servers"]}
    assert list(servers) == ["example", "silent", "remote", "missing", "hanging"]

    example = servers["example"]
    assert example["check"]["ok"] is True
    assert set(SANDBOX_CAPABILITIES) <= set(example["check"]["capabilities"])
    assert (example["launcher"], example["reason"], example["fix"]) == ("sent", None, [])
    assert example["env_keys"] == ["LAUNCHER_PROBE_TEST_MARKER"]

    silent = servers["silent"]
    assert silent["check"]["capabilities"] == {}
    assert (silent["launcher"], silent["reason"]) == ("omitted", "capability_not_advertised")
    assert "codex/sandbox-state" in silent["fix"][0]
    assert "Writing a server that uses the launcher" in silent["fix"][0]

    remote = servers["remote"]
    assert remote["check"] is None and remote["transport"] == "http"
    # Remote: no launcher applies, and nothing to fix (tests/doctor/test_remote_servers.py)
    assert (remote["launcher"], remote["reason"]) == ("not_applicable", "transport_not_stdio")
    assert remote["fix"] == []

    missing = servers["missing"]
    assert (missing["launcher"], missing["reason"]) == ("unknown", "server_not_started")
    assert "/nonexistent/launcher-probe-test-server" in missing["detail"]
    assert "No such file or directory" in missing["fix"][0]

    hanging = servers["hanging"]
    assert (hanging["launcher"], hanging["reason"]) == ("unknown", "initialize_timeout")
    assert "never answering initialize" in hanging["check"]["stderr_excerpt"]
    assert hanging["check"]["exit_status"] == -9  # it ignored SIGTERM: killed with its group


@pytest.mark.real_codex
def test_a_capable_server_alone_exits_0_and_the_report_says_sent(
    host_env: HostEnv, real_codex: Path
) -> None:
    marker = f"doctor-test-{secrets.token_hex(8)}"
    write_config(host_env.codex_home, marker)
    done = run_cli(
        "doctor",
        "--codex",
        str(real_codex),
        "--server",
        "example",
        "--check-servers",
        "--server-timeout",
        str(SERVER_TIMEOUT),
        env=host_env.env,
        timeout=SERVER_TIMEOUT + 60,
    )
    assert running_with(marker) == []
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  example: stdio " in done.stdout
    assert "    launcher: sent\n" in done.stdout
    descriptor = json.dumps({"codexExecutable": str(real_codex)})
    assert done.stdout.splitlines()[-1] == f"result: ok; launcher published: {descriptor}"


def test_unchecked_servers_are_judged_by_transport_and_decision(host_env: HostEnv) -> None:
    write_config(host_env.codex_home, "unchecked")
    done = run_cli("doctor", "--json", env=host_env.env)
    assert done.returncode == 3, done.stderr
    servers = {server["name"]: server for server in json.loads(done.stdout)["servers"]["servers"]}
    assert all(server["check"] is None and server["assumed"] for server in servers.values())
    # No Codex here: a stdio server would get no launcher, for the decision's reason.
    assert (servers["example"]["launcher"], servers["example"]["reason"]) == (
        "omitted",
        "not_found",
    )
    assert "npm i -g @openai/codex" in servers["example"]["fix"][0]
    # Unchecked, the capability is assumed: the transport alone decides.
    assert (servers["remote"]["launcher"], servers["remote"]["reason"]) == (
        "not_applicable",
        "transport_not_stdio",
    )


def test_a_servers_fix_for_a_withheld_launcher_names_the_operators_path(
    host_env: HostEnv,
) -> None:
    """As doctor's launcher part does: the candidate's path, not a placeholder."""
    write_config(host_env.codex_home, "unchecked-path")
    done = run_cli("doctor", "--json", "--codex", "relative/codex", env=host_env.env)
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    servers = {server["name"]: server for server in report["servers"]["servers"]}
    assert servers["example"]["reason"] == "not_absolute"
    fix = 'give an absolute path, e.g. --codex "$(readlink -f relative/codex)"'
    assert servers["example"]["fix"] == report["launcher"]["fix"] == [fix]


def test_an_unknown_server_name_is_a_usage_error(host_env: HostEnv) -> None:
    write_config(host_env.codex_home, "unknown")
    done = run_cli("doctor", "--server", "nope", env=host_env.env)
    assert done.returncode == 2
    assert "lists no server named nope" in done.stderr


def test_a_server_that_exits_or_answers_an_error_is_unknown_with_its_stderr(
    host_env: HostEnv, tmp_path: Path
) -> None:
    exits = "import sys; print('exits: bad flag', file=sys.stderr); sys.exit(3)"
    errors = (
        "import json, sys; sys.stdin.readline(); "
        'print(json.dumps({"jsonrpc": "2.0", "id": 1, '
        '"error": {"code": -32600, "message": "no thanks"}}), flush=True)'
    )
    config = tmp_path / "codex.toml"
    python = toml_string(sys.executable)
    config.write_text(
        f"[mcp_servers.exits]\ncommand = {python}\nargs = ['-c', {toml_string(exits)}]\n"
        f"[mcp_servers.errors]\ncommand = {python}\nargs = ['-c', {toml_string(errors)}]\n"
    )
    done = run_cli(
        "doctor", "--codex-config", str(config), "--check-servers", "--json", env=host_env.env
    )
    assert done.returncode == 3, done.stderr
    servers = {server["name"]: server for server in json.loads(done.stdout)["servers"]["servers"]}
    exited = servers["exits"]
    assert (exited["launcher"], exited["reason"]) == ("unknown", "initialize_failed")
    assert exited["check"]["exit_status"] == 3
    assert "exits: bad flag" in exited["check"]["stderr_excerpt"]
    refused = servers["errors"]
    assert (refused["launcher"], refused["reason"]) == ("unknown", "initialize_failed")
    assert "no thanks" in refused["detail"] and "no thanks" in refused["fix"][0]
