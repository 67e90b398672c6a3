"""``codex app-server`` offline: the Responses mock, a private CODEX_HOME, the example server.

``app_server(codex, tmp)`` starts the mock (in a fresh network namespace with only
loopback, where ``unshare -n`` is permitted), writes a ``config.toml`` that points the
model provider at it and configures the example server (wrapped by ``recording_server``)
as the stdio MCP server ``shell``, starts the app-server in the mock's namespace and
initializes it. Every process it starts carries ``RUN_MARK=<token>`` in its environment,
so ``marked_processes`` finds whatever is left of them.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tests.appserver.client import AppServerClient, Message
from tests.server.mcp_client import EXAMPLE_MODULE

HERE = Path(__file__).resolve().parent
SERVER_NAME = "shell"
NAMESPACE = f"mcp__{SERVER_NAME}"
TOOL = "run"
RUN_MARK = "LAUNCHER_PROBE_APPSERVER_RUN"
API_KEY_VARIABLE = "LAUNCHER_PROBE_MOCK_API_KEY"
#: Bounds on each wait; a guard against a hang, never a synchronisation.
STEP_TIMEOUT = 30.0


@cache
def isolation() -> tuple[bool, str]:
    """Whether a process can get a network namespace of its own (``unshare -n``) and another
    can join it (``nsenter --net``); if not, why."""
    probe = ["unshare", "-n", "--", "nsenter", "--net=/proc/self/ns/net", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=10)
    except OSError as error:
        return False, f"cannot run {error.filename}: {error.strerror}"
    if done.returncode != 0:
        return False, f"{' '.join(probe)} failed: {done.stderr.strip()}"
    return True, ""


@dataclass
class AppServer:
    """A running app-server with its records: the model's requests, the server's stdio."""

    client: AppServerClient
    mock_pid: int
    mark: str
    workspace: Path
    model_log: Path
    records: Path

    def start_thread(self, sandbox: str) -> str:
        """A thread in ``sandbox`` mode; returns once its MCP server is ready."""
        started = self.client.request(
            "thread/start",
            {"cwd": str(self.workspace), "sandbox": sandbox, "approvalPolicy": "never"},
        )
        thread_id: str = started["thread"]["id"]
        ready = self.client.wait_for(
            lambda m: (
                m["method"] == "mcpServer/startupStatus/updated"
                and m["params"]["name"] == SERVER_NAME
                and m["params"]["threadId"] == thread_id
                and m["params"]["status"] in {"ready", "failed", "cancelled"}
            ),
            timeout=STEP_TIMEOUT,
        )
        assert ready["params"]["status"] == "ready", ready
        return thread_id

    def call_run(self, thread_id: str, command: list[str]) -> Message:
        """One turn in which the model calls ``run`` with ``command``; its completion."""
        self.client.request(
            "turn/start",
            {
                "threadId": thread_id,
                "input": [{"type": "text", "text": json.dumps({"command": command})}],
            },
        )
        return self.client.wait_for(
            lambda m: m["method"] == "turn/completed" and m["params"]["threadId"] == thread_id,
            timeout=STEP_TIMEOUT,
        )

    def model_requests(self) -> list[dict[str, Any]]:
        """Every request the model received, in order."""
        return [json.loads(line) for line in self.model_log.read_text().splitlines()]

    def mcp_server(self) -> tuple[int, list[bytes], list[bytes]]:
        """The one MCP server started so far: its pid, the raw lines it read, those it wrote."""
        (record,) = self.records.glob("*.in")
        return (
            int(record.stem),
            record.read_bytes().splitlines(),
            record.with_suffix(".out").read_bytes().splitlines(),
        )


def recorded_example(records: Path) -> list[str]:
    """The argv of the example server, its stdio recorded in ``records``."""
    return [sys.executable, str(HERE / "recording_server.py"), str(records), EXAMPLE_MODULE]


def _config(port: int, mark: str, server_argv: list[str], runtime: Path) -> str:
    command, *server_args = server_argv
    return f"""\
model = "mock-model"
model_provider = "mock"
approval_policy = "never"

[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:{port}/v1"
wire_api = "responses"
env_key = "{API_KEY_VARIABLE}"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.{SERVER_NAME}]
command = {json.dumps(command)}
args = {json.dumps(server_args)}
default_tools_approval_mode = "approve"
env = {{ {RUN_MARK} = "{mark}", XDG_RUNTIME_DIR = {json.dumps(str(runtime))} }}
"""


@contextmanager
def app_server(
    codex: Path, tmp: Path, server_argv: list[str] | None = None, runtime: Path | None = None
) -> Iterator[AppServer]:
    """The mock and an initialized app-server; both ended and reaped on exit. The MCP
    server is ``server_argv`` (default: the recorded example server, ``recorded_example``);
    its ``XDG_RUNTIME_DIR`` is ``runtime`` (default: a private one, removed on exit), as
    Codex passes a server a few variables only: without one, a ``launcher-probe`` there
    would ask the helper of the user's own."""
    with ExitStack() as stack:
        if runtime is None:
            runtime = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lp-run-")))
        yield stack.enter_context(_app_server(codex, tmp, server_argv, runtime))


@contextmanager
def _app_server(
    codex: Path, tmp: Path, server_argv: list[str] | None, runtime: Path
) -> Iterator[AppServer]:
    isolated, why_not = isolation()
    if not isolated:
        warnings.warn(f"codex app-server runs WITHOUT network isolation: {why_not}", stacklevel=3)
    mark = secrets.token_hex(8)
    home, workspace, records = tmp / "home", tmp / "workspace", tmp / "records"
    codex_home = home / ".codex"
    for directory in (codex_home, workspace, records):
        directory.mkdir(parents=True)
    env = {
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        API_KEY_VARIABLE: "offline",
        RUN_MARK: mark,
    }
    model_log = tmp / "model-requests.jsonl"
    mock_argv = [sys.executable, str(HERE / "responses_mock.py"), "--log", str(model_log)]
    mock_argv += ["--namespace", NAMESPACE, "--tool", TOOL]
    if isolated:
        mock_argv = ["unshare", "-n", "--", *mock_argv, "--loopback-up"]
    mock = subprocess.Popen(mock_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        assert mock.stdout is not None
        ready, _, _ = select.select([mock.stdout], [], [], STEP_TIMEOUT)
        assert ready, f"the Responses mock did not start within {STEP_TIMEOUT:g} s"
        port = json.loads(mock.stdout.readline())["port"]
        argv = recorded_example(records) if server_argv is None else server_argv
        (codex_home / "config.toml").write_text(_config(port, mark, argv, runtime))
        join = ["nsenter", f"--net=/proc/{mock.pid}/ns/net", "--"] if isolated else []
        client = AppServerClient(
            [*join, str(codex), "app-server"], env=env, cwd=workspace, errlog=tmp / "app-server.err"
        )
        try:
            client.request(
                "initialize",
                {"clientInfo": {"name": "launcher-probe-tests", "version": "0"},
                 "capabilities": {"experimentalApi": True}},
            )  # fmt: skip
            client.notify("initialized")
            yield AppServer(client, mock.pid, mark, workspace, model_log, records)
        finally:
            client.close()
    finally:
        if mock.stdin is not None:
            mock.stdin.close()
        try:
            mock.wait(10)
        except subprocess.TimeoutExpired:
            mock.kill()
            mock.wait()
        if mock.stdout is not None:
            mock.stdout.close()


def marked_processes(mark: str) -> list[int]:
    """Every live (not zombie) process whose environment holds ``RUN_MARK=mark``."""
    needle = f"{RUN_MARK}={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.append(int(name))
    return found
