"""A JSON-RPC client for ``codex app-server`` over stdio (one JSON object per line).

Requests the app-server sends us are answered with a JSON-RPC error (this client
approves nothing); notifications are kept, in order, for ``wait_for``.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

Message = dict[str, Any]


class AppServerError(Exception):
    """The app-server answered with an error, ended, or said nothing in time."""


class AppServerClient:
    """A running ``codex app-server``; ``close()`` ends and reaps it."""

    def __init__(self, argv: list[str], *, env: Mapping[str, str], cwd: Path, errlog: Path):
        self._errlog = errlog.open("wb")
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errlog,
            env=dict(env),
            cwd=cwd,
        )
        self._incoming: queue.Queue[Message | None] = queue.Queue()
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,))
        self._reader.start()
        self._next_id = 0
        self.notifications: list[Message] = []

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            self._incoming.put(json.loads(line))
        self._incoming.put(None)

    def _send(self, message: Message) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    def notify(self, method: str, params: Message | None = None) -> None:
        self._send({"method": method, **({} if params is None else {"params": params})})

    def request(self, method: str, params: Message, *, timeout: float = 30.0) -> Message:
        """Send a request and return its result; notifications meanwhile are kept."""
        self._next_id += 1
        ident = self._next_id
        self._send({"id": ident, "method": method, "params": params})
        answer = self._receive(lambda m: m.get("id") == ident and "method" not in m, timeout)
        if "error" in answer:
            raise AppServerError(f"{method}: {answer['error']}")
        result: Message = answer["result"]
        return result

    def wait_for(self, predicate: Callable[[Message], bool], *, timeout: float = 30.0) -> Message:
        """The first notification (kept or still to come) for which ``predicate`` holds."""
        for seen in self.notifications:
            if predicate(seen):
                return seen
        return self._receive(lambda m: "id" not in m and predicate(m), timeout)

    def _receive(self, wanted: Callable[[Message], bool], timeout: float) -> Message:
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self._incoming.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AppServerError(f"nothing wanted within {timeout:g} s") from None
            if message is None:
                raise AppServerError(f"the app-server ended: {self.stderr_tail()}")
            if wanted(message):
                return message
            if "id" in message and "method" in message:  # a request to us: refuse it
                error = {"code": -32601, "message": "not supported by this test client"}
                self._send({"id": message["id"], "error": error})
            elif "method" in message:
                self.notifications.append(message)

    def stderr_tail(self) -> str:
        self._errlog.flush()
        return Path(self._errlog.name).read_bytes()[-4000:].decode(errors="replace")

    def close(self, timeout: float = 15.0) -> int:
        """Close stdin (the app-server's cue to exit), wait, kill if it lingers; reap it."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            try:
                status = self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                status = self.process.wait()
        finally:
            self._reader.join(timeout)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self._errlog.close()
        return status
