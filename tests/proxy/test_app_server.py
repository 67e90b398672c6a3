"""The real ``codex app-server`` → ``proxy`` → the example server, on every version: with
``--trust-host-state`` Codex's own state is the host's authority, and the line it sends
passes the proxy byte for byte; without it the proxy refuses the call, and nothing runs.

The proxy runs inside ``recording_server`` (as the module ``launcher_probe``), and the
example server inside another: what Codex sent and what the server read are both recorded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from launcher_probe.host.decision import Published
from launcher_probe.host.resolver import resolve_launcher
from tests.appserver.harness import HERE, app_server, marked_processes, recorded_example
from tests.appserver.test_app_server import assert_meta_is_injectors
from tests.conftest import HostEnv
from tests.processes import dies_soon

pytestmark = pytest.mark.real_codex


def tools_call(records: Path) -> bytes:
    (record,) = records.glob("*.in")
    (line,) = [line for line in record.read_bytes().splitlines() if b'"tools/call"' in line]
    return line


def initialize_result(records: Path) -> dict[str, object]:
    (record,) = records.glob("*.out")
    answers = [json.loads(line) for line in record.read_bytes().splitlines()]
    (result,) = [a["result"] for a in answers if "capabilities" in a.get("result", {})]
    assert isinstance(result, dict)
    return result


def test_codexs_state_wins_and_passes_byte_for_byte(
    host_env: HostEnv, real_codex: Path, tmp_path: Path
) -> None:
    host_env.codex_home.mkdir()
    published = resolve_launcher(str(real_codex))
    assert isinstance(published, Published), published
    tmp = tmp_path / "app-server"
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    outer.mkdir()
    inner.mkdir()
    workspace = tmp / "workspace"  # the harness's
    proxy = ["launcher_probe", "proxy", "--codex", str(real_codex), "--cwd", str(workspace)]
    proxy += ["--sandbox", "workspace-write", "--trust-host-state", "--"]
    argv = [sys.executable, str(HERE / "recording_server.py"), str(outer), *proxy]
    argv += recorded_example(inner)
    with app_server(real_codex, tmp, argv) as server:
        thread = server.start_thread("read-only")
        server.call_run(thread, ["sh", "-c", "echo reached; echo x > inside.txt"])
        sent, read = tools_call(outer), tools_call(inner)
        (record,) = inner.glob("*.out")
        (answer,) = [
            json.loads(line)
            for line in record.read_bytes().splitlines()
            if json.loads(line).get("id") == json.loads(read)["id"]
        ]
        started = marked_processes(server.mark)
    outcome = answer["result"]["structuredContent"]
    assert outcome["stdout"] == "reached\n"
    assert outcome["exit_status"] != 0 and "Read-only file system" in outcome["stderr"]
    assert not (workspace / "inside.txt").exists()  # the thread's read-only, not the policy
    assert read == sent
    assert_meta_is_injectors(read, initialize_result(inner), published)
    assert all(dies_soon(pid) for pid in started)
    assert marked_processes(server.mark) == []


def test_without_trusting_the_host_codexs_call_is_refused_and_nothing_runs(
    host_env: HostEnv, real_codex: Path, tmp_path: Path
) -> None:
    host_env.codex_home.mkdir()
    tmp = tmp_path / "app-server"
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    outer.mkdir()
    inner.mkdir()
    workspace = tmp / "workspace"
    proxy = ["launcher_probe", "proxy", "--codex", str(real_codex), "--cwd", str(workspace)]
    proxy += ["--sandbox", "workspace-write", "--"]
    argv = [sys.executable, str(HERE / "recording_server.py"), str(outer), *proxy]
    argv += recorded_example(inner)
    with app_server(real_codex, tmp, argv) as server:
        thread = server.start_thread("read-only")
        server.call_run(thread, ["sh", "-c", "echo x > inside.txt"])
        sent = tools_call(outer)
        (record,) = outer.glob("*.out")
        (answer,) = [
            json.loads(line)
            for line in record.read_bytes().splitlines()
            if json.loads(line).get("id") == json.loads(sent)["id"]
        ]
        started = marked_processes(server.mark)
    assert answer["error"]["code"] == -32602
    assert "codex/sandbox-state" in answer["error"]["message"]
    assert "--trust-host-state" in answer["error"]["message"]
    (record,) = inner.glob("*.in")
    assert b'"tools/call"' not in record.read_bytes()  # the server never got it
    assert not (workspace / "inside.txt").exists()
    assert all(dies_soon(pid) for pid in started)
