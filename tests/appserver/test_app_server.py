"""The real ``codex app-server``, offline, driving the example server, for every version.

The model is the loopback mock (``responses_mock``): it makes the model call ``run`` of the
example server with the command the test puts in the user message. What the server read
on stdin is recorded byte for byte (``recording_server``), so the ``_meta`` Codex built can
be compared with what ``tool_call_meta`` builds for the same server, state, launcher and
host keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY
from launcher_probe.host.decision import Published
from launcher_probe.host.inject import (
    PROGRESS_TOKEN_KEY,
    ServerDescription,
    Transport,
    dumps_meta,
    tool_call_meta,
)
from launcher_probe.host.resolver import resolve_launcher
from tests.appserver.harness import SERVER_NAME, TOOL, AppServer, app_server, marked_processes
from tests.conftest import HostEnv
from tests.processes import dies_soon

pytestmark = pytest.mark.real_codex

#: The keys the injector sets itself; every other key of Codex's ``_meta`` is a host key.
INJECTED_KEYS = {
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    SANDBOX_LAUNCHER_KEY,
    PROGRESS_TOKEN_KEY,
}


@pytest.fixture
def published(host_env: HostEnv, real_codex: Path) -> Published:
    """The launcher decision this host makes for the binary the app-server runs (the
    ``host_env`` fixture makes the memory front forget it afterwards)."""
    host_env.codex_home.mkdir()
    decision = resolve_launcher(str(real_codex))
    assert isinstance(decision, Published), decision
    return decision


@pytest.fixture
def server(real_codex: Path, tmp_path: Path) -> Iterator[AppServer]:
    with app_server(real_codex, tmp_path / "app-server") as running:
        yield running


def tool_call(server: AppServer) -> tuple[bytes, dict[str, Any], dict[str, Any]]:
    """The ``tools/call`` the example server read (raw line, parsed), and its initialize result."""
    _, read, written = server.mcp_server()
    requests = [(line, json.loads(line)) for line in read]
    (call,) = [(raw, parsed) for raw, parsed in requests if parsed.get("method") == "tools/call"]
    (initialize,) = [parsed["id"] for _, parsed in requests if parsed.get("method") == "initialize"]
    answers = {answer.get("id"): answer for answer in map(json.loads, written)}
    return call[0], call[1], answers[initialize]["result"]


def run_outcome(server: AppServer, request: dict[str, Any]) -> dict[str, Any]:
    """What ``run`` answered to ``request``, checking that the model received it too."""
    _, _, written = server.mcp_server()
    (answer,) = [a for a in map(json.loads, written) if a.get("id") == request["id"]]
    outcome: dict[str, Any] = answer["result"]["structuredContent"]
    outputs = [
        item["output"]
        for body in server.model_requests()
        for item in body["input"]
        if item.get("type") == "function_call_output"
    ]
    assert len(outputs) == 1 and json.dumps(outcome["stdout"]) in str(outputs[0])
    return outcome


def raw_meta(line: bytes) -> str:
    """The ``_meta`` object's text exactly as it stands in a request line."""
    text = line.decode("utf-8")
    key = '"_meta":'
    start = text.index(key) + len(key)
    value, end = json.JSONDecoder().raw_decode(text, start)
    assert value == json.loads(text)["params"]["_meta"]
    return text[start:end]


def assert_meta_is_injectors(
    line: bytes, initialized: dict[str, Any], published: Published
) -> None:
    """The received ``_meta`` equals, key for key and byte for byte, ``tool_call_meta``'s."""
    received: dict[str, Any] = json.loads(line)["params"]["_meta"]
    experimental = initialized["capabilities"].get("experimental")
    built = tool_call_meta(
        ServerDescription(SERVER_NAME, Transport.STDIO, experimental),
        sandbox_state=received[SANDBOX_STATE_KEY],
        launcher=published,
        host_meta={key: value for key, value in received.items() if key not in INJECTED_KEYS},
        progress_token=received.get(PROGRESS_TOKEN_KEY),
    )
    assert built.launcher_included, built.explanation()
    assert list(built.meta) == list(received)
    assert built.meta == received
    assert dumps_meta(built) == raw_meta(line)


def test_read_only_thread_blocks_a_write_outside_the_workspace(
    server: AppServer, published: Published, real_codex: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    thread = server.start_thread("read-only")
    server.call_run(thread, ["sh", "-c", f"echo reached; echo x > {outside}"])

    line, request, initialized = tool_call(server)
    assert request["params"]["name"] == TOOL
    outcome = run_outcome(server, request)
    assert outcome["stdout"] == "reached\n"
    assert outcome["argv"][:3] == [str(real_codex), "sandbox", "--sandbox-state-json"]
    assert outcome["sandbox"] == "managed"
    assert outcome["exit_status"] != 0
    assert "Read-only file system" in outcome["stderr"]
    assert not outside.exists()
    assert_meta_is_injectors(line, initialized, published)


def test_workspace_write_thread_lets_a_write_inside_land(
    server: AppServer, published: Published, real_codex: Path
) -> None:
    thread = server.start_thread("workspace-write")
    server.call_run(thread, ["sh", "-c", "echo made > inside.txt"])

    line, request, initialized = tool_call(server)
    outcome = run_outcome(server, request)
    assert outcome["exit_status"] == 0, outcome["stderr"]
    assert outcome["argv"][:3] == [str(real_codex), "sandbox", "--sandbox-state-json"]
    assert outcome["sandbox"] == "managed"
    assert (server.workspace / "inside.txt").read_text() == "made\n"
    assert_meta_is_injectors(line, initialized, published)


def test_every_process_started_is_reaped(real_codex: Path, tmp_path: Path) -> None:
    """The mock, the app-server, the MCP server and the sandboxes, found by the mark every
    one of them carries in its environment; a background process left by the command too."""
    with app_server(real_codex, tmp_path / "app-server") as server:
        thread = server.start_thread("workspace-write")
        server.call_run(thread, ["sh", "-c", "sleep 600 & echo $LAUNCHER_PROBE_APPSERVER_RUN"])
        mcp_pid, _, _ = server.mcp_server()
        _, request, _ = tool_call(server)
        assert run_outcome(server, request)["stdout"] == f"{server.mark}\n"  # sandboxes carry it
        started = {server.mock_pid, server.client.process.pid, mcp_pid}
        assert set(marked_processes(server.mark)) == started
    assert all(dies_soon(pid) for pid in started)
    assert marked_processes(server.mark) == []
