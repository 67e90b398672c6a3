"""``--check-servers``: start a stdio server exactly as configured, exchange MCP
``initialize`` with it, read ``capabilities.experimental``, then shut it down.

The exchange is JSON-RPC 2.0, one message per line, under one deadline. The server runs
as the probe's steps do (``process.start_step``): on Linux below the probe's supervisor, a
child subreaper, in a session of its own. Shutting down follows MCP's stdio rules: stdin
closed, then SIGTERM to its process group, then SIGKILL to everything it started, and it
is reaped: nothing it started is left running, not a child in a group of its own nor a
double-forked daemon (elsewhere: what its group and psutil reach). Its stderr is drained
through a pipe; only its last bytes are kept, for the excerpt.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from typing import Any

from launcher_probe import __version__
from launcher_probe.doctor.fixes import (
    INITIALIZE_FAILED,
    INITIALIZE_TIMEOUT,
    SERVER_NOT_STARTED,
)
from launcher_probe.doctor.servers import ServerConfig
from launcher_probe.fd_io import write_all
from launcher_probe.host.probe.bounded_run import Step, start_step
from launcher_probe.host.probe.supervisor_client import SUPERVISOR_LATE, NotReady, Supervisor

#: The MCP revision doctor speaks; a server answers with the one it picks.
PROTOCOL_VERSION = "2025-06-18"
#: Default deadline of one server's start and ``initialize``.
CHECK_TIMEOUT = 10.0
#: How long a server may take to exit after stdin closes, and after SIGTERM.
GRACE = 1.0
#: Characters of stderr kept (its end, where an error usually is).
STDERR_EXCERPT = 2048
#: Bytes of stdout read before the answer at most.
MAX_STDOUT = 1 << 20
#: Without a pidfd, how often a shutting-down server is checked.
_POLL_INTERVAL = 0.05


class _Failed(Exception):
    def __init__(self, problem: str, detail: str) -> None:
        super().__init__(detail)
        self.problem = problem
        self.detail = detail


def check_server(server: ServerConfig, *, timeout: float = CHECK_TIMEOUT) -> dict[str, Any]:
    """``{"ok", "problem", "detail", "capabilities", "server_info", "protocol_version",
    "exit_status", "duration", "stderr_excerpt"}`` for the stdio ``server``; ``problem`` is
    one of ``fixes.CHECK_PROBLEMS`` or null. Never raises for what the server does."""
    assert server.command is not None
    started = time.monotonic()
    result: dict[str, Any] = {
        "ok": False,
        "problem": None,
        "detail": "",
        "capabilities": None,
        "server_info": None,
        "protocol_version": None,
        "exit_status": None,
        "duration": 0.0,
        "stderr_excerpt": "",
    }
    env = {**os.environ, **server.env}
    argv = [_found(server.command, env), *server.args]
    stderr = _Tail(STDERR_EXCERPT * 4)
    with Supervisor() as supervisor:
        try:
            supervised = supervisor.start(started + timeout)
            cwd = os.path.join(os.getcwd(), server.cwd or "")  # as it is, if absolute
            step = start_step(supervisor, supervised, argv, env, cwd, stdin=True)
        except NotReady:
            return {**result, "problem": SERVER_NOT_STARTED, "detail": SUPERVISOR_LATE}
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            detail = f"cannot start {server.command}: {getattr(error, 'strerror', None) or error}"
            return {**result, "problem": SERVER_NOT_STARTED, "detail": detail}
        try:
            answer = _initialize(step, started + timeout, stderr)
            result.update(_read_answer(answer))
        except _Failed as failed:
            result.update(problem=failed.problem, detail=failed.detail)
        except OSError as error:  # reading its stdout failed
            result.update(problem=INITIALIZE_FAILED, detail=f"cannot read its stdout: {error}")
        finally:
            result["exit_status"] = _shut_down(step, stderr)
            step.close()
    result["stderr_excerpt"] = stderr.excerpt()
    result["duration"] = round(time.monotonic() - started, 3)
    return result


def _found(command: str, env: dict[str, str]) -> str:
    """``command`` as the server's ``PATH`` finds it (as exec would), when it has no slash."""
    if "/" in command:
        return command
    import shutil

    return shutil.which(command, path=env.get("PATH", os.defpath)) or command


class _Tail:
    """The last ``limit`` bytes of a stream, and how many it carried."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = b""
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data = (self.data + chunk)[-self.limit :]

    def excerpt(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        if self.total <= STDERR_EXCERPT and len(text) <= STDERR_EXCERPT:
            return text
        return f"[{self.total} bytes in all] ...{text[-STDERR_EXCERPT:]}"


def _message(value: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **value}).encode() + b"\n"


def _initialize(step: Step, deadline: float, stderr: _Tail) -> dict[str, Any]:
    """Send ``initialize``, wait for its answer, send ``notifications/initialized``."""
    assert step.stdin is not None
    request = {
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "launcher-probe-doctor", "version": __version__},
        },
    }
    try:
        write_all(step.stdin, _message(request))
    except OSError as error:
        raise _Failed(INITIALIZE_FAILED, f"it closed its stdin: {error.strerror}") from error
    answer = _answer(step, deadline, stderr)
    with contextlib.suppress(OSError):
        write_all(step.stdin, _message({"method": "notifications/initialized"}))
    return answer


def _answer(step: Step, deadline: float, stderr: _Tail) -> dict[str, Any]:
    """The JSON-RPC message answering id 1 (others, a log notification say, are skipped);
    stderr is drained into its tail meanwhile."""
    stdout, errors = step.pipes
    buffered = b""
    with _selector(step) as selector:
        while True:
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                message = _parsed(line)
                if message is not None and message.get("id") == 1:
                    return message
            left = deadline - time.monotonic()
            ready = {key.fd for key, _ in selector.select(left)} if left > 0 else set()
            if not ready:
                raise _Failed(INITIALIZE_TIMEOUT, "no answer to initialize before the deadline")
            if errors in ready:
                _drain(selector, errors, stderr)
            if stdout not in ready:
                continue
            chunk = os.read(stdout, 65536)
            if not chunk:
                raise _Failed(INITIALIZE_FAILED, "it closed stdout without answering initialize")
            buffered += chunk
            if len(buffered) > MAX_STDOUT:
                raise _Failed(INITIALIZE_FAILED, f"over {MAX_STDOUT} bytes without an answer")


def _selector(step: Step) -> selectors.BaseSelector:
    """A selector of the step's stdout and stderr, both made non-blocking."""
    selector = selectors.DefaultSelector()
    for fd in step.pipes:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    return selector


def _drain(selector: selectors.BaseSelector, fd: int, tail: _Tail | None) -> None:
    """Read what ``fd`` has (into ``tail``, or dropped); unregister it at its end."""
    with contextlib.suppress(BlockingIOError):
        chunk = os.read(fd, 65536)
        if not chunk:
            selector.unregister(fd)
        elif tail is not None:
            tail.feed(chunk)


def _parsed(line: bytes) -> dict[str, Any] | None:
    """A JSON-RPC message, read with the project's bounded strict parser; None for a line
    that is not one (an answer with NaN, a repeated key or nesting past the limit counts)."""
    from launcher_probe.json_input import InvalidJSON, loads_strict

    try:
        value = loads_strict(line.decode("utf-8"), "a server's message")
    except (UnicodeDecodeError, InvalidJSON):
        return None
    return value if isinstance(value, dict) else None


def _read_answer(answer: dict[str, Any]) -> dict[str, Any]:
    if "error" in answer:
        raise _Failed(INITIALIZE_FAILED, f"initialize answered an error: {answer['error']}")
    result = answer.get("result")
    capabilities = result.get("capabilities") if isinstance(result, dict) else None
    if not isinstance(result, dict) or not isinstance(capabilities, dict):
        raise _Failed(INITIALIZE_FAILED, "the initialize result has no capabilities object")
    experimental = capabilities.get("experimental") or {}
    if not isinstance(experimental, dict):
        raise _Failed(INITIALIZE_FAILED, "capabilities.experimental is not an object")
    return {
        "ok": True,
        "capabilities": experimental,
        "server_info": result.get("serverInfo"),
        "protocol_version": result.get("protocolVersion"),
    }


def _shut_down(step: Step, stderr: _Tail) -> int:
    """Close stdin; then SIGTERM its process group; then kill it and all it started (below
    the supervisor: everything, a double-forked daemon too; elsewhere, what its group and
    psutil reach). Its exit status (``-9`` when it had to be killed)."""
    step.close_stdin()
    try:
        for finish in (step.terminate, None):
            if _exits_within(step, GRACE, stderr):
                break
            if finish is not None:
                finish()
    except OSError:  # the supervisor died: what it left was killed then
        pass
    status = step.stop()
    return -signal.SIGKILL if status is None else status


def _exits_within(step: Step, seconds: float, stderr: _Tail) -> bool:
    """Whether the step exits within ``seconds``; its output is drained meanwhile."""
    until = time.monotonic() + seconds
    with _selector(step) as selector:
        if step.exit_fd is not None:
            selector.register(step.exit_fd, selectors.EVENT_READ)
        while True:
            if step.exited():
                return True
            left = until - time.monotonic()
            if left <= 0:
                return False
            wait = left if step.exit_fd is not None else min(left, _POLL_INTERVAL)
            for key, _ in selector.select(wait):
                if key.fd in step.pipes:
                    _drain(selector, key.fd, stderr if key.fd == step.pipes[1] else None)
