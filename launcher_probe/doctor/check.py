"""``--check-servers``: start a stdio server exactly as configured, exchange MCP
``initialize`` with it, read ``capabilities.experimental``, then shut it down.

The exchange is JSON-RPC 2.0, one message per line, under one deadline. Shutting down
follows MCP's stdio rules: stdin closed, then SIGTERM, then SIGKILL, each to the server's
own process group (it runs in a session of its own), and the server is reaped: nothing it
started in that group is left running. Its stderr goes to an unlinked file; an excerpt
is kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from typing import IO, Any

from launcher_probe import __version__
from launcher_probe.doctor.fixes import (
    INITIALIZE_FAILED,
    INITIALIZE_TIMEOUT,
    SERVER_NOT_STARTED,
)
from launcher_probe.doctor.servers import ServerConfig

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
    with tempfile.TemporaryFile() as stderr:
        try:
            process = subprocess.Popen(
                [server.command, *server.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=server.cwd,
                env={**os.environ, **server.env},
                start_new_session=True,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            detail = f"cannot start {server.command}: {getattr(error, 'strerror', None) or error}"
            return {**result, "problem": SERVER_NOT_STARTED, "detail": detail}
        try:
            answer = _initialize(process, started + timeout)
            result.update(_read_answer(answer))
        except _Failed as failed:
            result.update(problem=failed.problem, detail=failed.detail)
        except OSError as error:  # reading its stdout failed
            result.update(problem=INITIALIZE_FAILED, detail=f"cannot read its stdout: {error}")
        finally:
            result["exit_status"] = _shut_down(process)
        result["stderr_excerpt"] = _tail(stderr)
    result["duration"] = round(time.monotonic() - started, 3)
    return result


def _message(value: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **value}).encode() + b"\n"


def _initialize(process: subprocess.Popen[bytes], deadline: float) -> dict[str, Any]:
    """Send ``initialize``, wait for its answer, send ``notifications/initialized``."""
    assert process.stdin is not None and process.stdout is not None
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
        process.stdin.write(_message(request))
        process.stdin.flush()
    except OSError as error:
        raise _Failed(INITIALIZE_FAILED, f"it closed its stdin: {error.strerror}") from error
    answer = _answer(process.stdout, deadline)
    with contextlib.suppress(OSError):
        process.stdin.write(_message({"method": "notifications/initialized"}))
        process.stdin.flush()
    return answer


def _answer(stdout: IO[bytes], deadline: float) -> dict[str, Any]:
    """The JSON-RPC message answering id 1 (others, a log notification say, are skipped)."""
    fd = stdout.fileno()
    os.set_blocking(fd, False)
    buffered = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                message = _parsed(line)
                if message is not None and message.get("id") == 1:
                    return message
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise _Failed(INITIALIZE_TIMEOUT, "no answer to initialize before the deadline")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise _Failed(INITIALIZE_FAILED, "it closed stdout without answering initialize")
            buffered += chunk
            if len(buffered) > MAX_STDOUT:
                raise _Failed(INITIALIZE_FAILED, f"over {MAX_STDOUT} bytes without an answer")


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


def _shut_down(process: subprocess.Popen[bytes]) -> int | None:
    """Close stdin; then SIGTERM, then SIGKILL to its process group; reap it. The group is
    signalled while the server is still unreaped, so its id cannot have been reused."""
    for stream in (process.stdin, process.stdout):
        with contextlib.suppress(OSError):
            stream.close()  # type: ignore[union-attr]
    exited = _exits_within(process, GRACE)
    for number in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, number)
        if number == signal.SIGTERM and not exited:
            exited = _exits_within(process, GRACE)
    return process.wait()


def _exits_within(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether ``process`` has exited within ``seconds``, without reaping it."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfd (not Linux): reap, and lose the group id
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(pidfd, selectors.EVENT_READ)
            return bool(selector.select(seconds))
    finally:
        os.close(pidfd)


def _tail(stream: IO[bytes]) -> str:
    size = stream.seek(0, os.SEEK_END)
    stream.seek(max(0, size - STDERR_EXCERPT * 4))
    text = stream.read().decode("utf-8", errors="replace")
    if size <= STDERR_EXCERPT and len(text) <= STDERR_EXCERPT:
        return text
    return f"[{size} bytes in all] ...{text[-STDERR_EXCERPT:]}"
