"""A raw JSON-RPC client of ``launcher-probe proxy``: the proxy as a real process, lines in,
lines out, every wait bounded."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tests.proxy.conftest import PROXY

SCRIPTED = Path(__file__).with_name("scripted_server.py")
#: A guard against a hang, never a synchronisation.
WAIT = 30.0


def proxy_argv(options: list[str], server_args: list[str]) -> list[str]:
    """``proxy OPTIONS -- python scripted_server.py SERVER_ARGS``."""
    return [*PROXY, *options, "--", sys.executable, str(SCRIPTED), *server_args]


class ProxyClient:
    """The proxy started as ``argv`` (see ``proxy_argv``), its stderr to ``errlog`` (a file,
    or a file descriptor); with
    ``non_blocking``, its stdin and stdout are pipes whose ends it holds are non-blocking (a
    host may hand such fds on)."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        errlog: Path | int,
        non_blocking: bool = False,
    ) -> None:
        (their_in, ours_in), (ours_out, their_out) = os.pipe(), os.pipe()
        os.set_blocking(their_in, not non_blocking)
        os.set_blocking(their_out, not non_blocking)
        try:
            with ExitStack() as opened:
                stderr = (
                    errlog if isinstance(errlog, int) else opened.enter_context(errlog.open("wb"))
                )
                self.process = subprocess.Popen(
                    argv, stdin=their_in, stdout=their_out, stderr=stderr, env=env
                )
        finally:
            os.close(their_in)
            os.close(their_out)
        self.stdin, self.stdout = os.fdopen(ours_in, "wb"), os.fdopen(ours_out, "rb")
        self.buffer = b""
        self.next_id = 0

    def send_raw(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.next_id

    def read_line(self, timeout: float = WAIT) -> bytes:
        """The next line from the proxy (b"" at its end)."""
        fd = self.stdout.fileno()
        pieces = [self.buffer]  # joined once: a long line costs no quadratic copying
        while b"\n" not in pieces[-1]:
            assert select.select([fd], [], [], timeout)[0], "no answer from the proxy"
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self.buffer = b""
                return b"".join(pieces)
            pieces.append(chunk)
        line, _, self.buffer = b"".join(pieces).partition(b"\n")
        return line + b"\n"

    def read(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.read_line())
        return message

    def answer(self, request_id: int) -> dict[str, Any]:
        """The response to ``request_id`` (what comes before it is dropped)."""
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    def initialize(self) -> dict[str, Any]:
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        result = self.answer(self.request("initialize", params))
        self.send({"method": "notifications/initialized"})
        return result

    def call(self, name: str, arguments: dict[str, Any] | None = None, **params: Any) -> int:
        return self.request("tools/call", {"name": name, "arguments": arguments or {}, **params})

    def finish(self, timeout: float = WAIT) -> int:
        """Close the proxy's stdin; its exit status."""
        self.stdin.close()
        return self.process.wait(timeout)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.stdout.close()
        if not self.stdin.closed:
            self.stdin.close()
