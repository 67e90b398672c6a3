"""The real ``codex app-server`` → ``proxy`` → the example server, on every version: with
``--trust-host-state`` Codex's own state is the host's authority, and the line it sends
passes the proxy byte for byte; without it the proxy refuses the call, and nothing runs.

The proxy runs inside ``recording_server`` (as the module ``launcher_probe``), and the
example server inside another: what Codex sent and what the server read are both recorded.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from launcher_probe.host.decision import Published
from launcher_probe.host.resolver import resolve_launcher
from tests.appserver.harness import HERE, app_server, marked_processes, recorded_example
from tests.appserver.test_app_server import assert_meta_is_injectors
from tests.conftest import HostEnv
from tests.processes import dies_soon
from tests.service.helper import running_helper

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


class Run(NamedTuple):
    """One turn of Codex's through the proxy: what Codex sent, the proxy's answer to it
    (``answered``: as the proxy wrote it, or as the server did when it got the call), the
    directories recorded, the workspace, and the processes the turn started."""

    sent: bytes
    answered: dict[str, Any]
    outer: Path
    inner: Path
    workspace: Path
    started: list[int]


def _through_proxy(
    real_codex: Path,
    tmp_path: Path,
    command: list[str],
    *options: str,
    runtime: Path | None = None,
) -> tuple[Run, list[int]]:
    """A read-only thread's turn running ``command`` through ``proxy OPTIONS`` (the
    workspace-write policy) to the example server (its runtime directory ``runtime``, see
    ``app_server``); also what is left marked after it."""
    tmp = tmp_path / "app-server"
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    outer.mkdir()
    inner.mkdir()
    workspace = tmp / "workspace"  # the harness's
    proxy = ["launcher_probe", "proxy", "--codex", str(real_codex), "--cwd", str(workspace)]
    proxy += ["--sandbox", "workspace-write", *options, "--"]
    argv = [sys.executable, str(HERE / "recording_server.py"), str(outer), *proxy]
    argv += recorded_example(inner)
    with app_server(real_codex, tmp, argv, runtime) as server:
        thread = server.start_thread("read-only")
        server.call_run(thread, command)
        sent = tools_call(outer)
        (record,) = outer.glob("*.out")
        (answered,) = [
            json.loads(line)
            for line in record.read_bytes().splitlines()
            if json.loads(line).get("id") == json.loads(sent)["id"]
        ]
        started = marked_processes(server.mark)
    return Run(sent, answered, outer, inner, workspace, started), marked_processes(server.mark)


def test_codexs_state_wins_and_passes_byte_for_byte(
    host_env: HostEnv, real_codex: Path, tmp_path: Path
) -> None:
    host_env.codex_home.mkdir()
    published = resolve_launcher(str(real_codex))
    assert isinstance(published, Published), published
    command = ["sh", "-c", "echo reached; echo x > inside.txt"]
    run, left = _through_proxy(real_codex, tmp_path, command, "--trust-host-state")
    read = tools_call(run.inner)
    outcome = run.answered["result"]["structuredContent"]
    assert outcome["stdout"] == "reached\n"
    assert outcome["exit_status"] != 0 and "Read-only file system" in outcome["stderr"]
    assert not (run.workspace / "inside.txt").exists()  # the thread's read-only, not the policy
    assert read == run.sent
    assert_meta_is_injectors(read, initialize_result(run.inner), published)
    assert all(dies_soon(pid) for pid in run.started)
    assert left == []


def test_without_trusting_the_host_codexs_call_is_refused_and_nothing_runs(
    host_env: HostEnv, real_codex: Path, tmp_path: Path
) -> None:
    host_env.codex_home.mkdir()
    run, _ = _through_proxy(real_codex, tmp_path, ["sh", "-c", "echo x > inside.txt"])
    error = run.answered["error"]
    assert error["code"] == -32602
    assert "codex/sandbox-state" in error["message"] and "--trust-host-state" in error["message"]
    (record,) = run.inner.glob("*.in")
    assert b'"tools/call"' not in record.read_bytes()  # the server never got it
    assert not (run.workspace / "inside.txt").exists()
    assert all(dies_soon(pid) for pid in run.started)


def test_the_proxy_asks_the_helper_of_the_servers_runtime_dir_not_the_users(
    host_env: HostEnv, real_codex: Path, tmp_path: Path
) -> None:
    """The harness names the MCP server's runtime directory, so a proxy under Codex asks
    the helper there (``--via auto``), and ``scripts/test`` never reaches a helper of the
    user's own (the default runtime directory's), nor writes to its verdict cache."""
    with tempfile.TemporaryDirectory(prefix="lp-run-") as made:  # short: a socket's path
        runtime = Path(made)
        socket = runtime / "launcher-probe" / "launcher-probe.sock"
        with running_helper(host_env.env, socket) as helper:
            _through_proxy(real_codex, tmp_path, ["true"], "--trust-host-state", runtime=runtime)
            counters = helper.ask({"v": 1, "op": "status"})["result"]["counters"]
    assert counters["resolutions"] == 1, counters
