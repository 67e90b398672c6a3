"""Running ``launcher-probe serve`` as a real process, and talking to it over a plain
socket (nothing from launcher_probe on the client side)."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.processes import wait_until as wait_until  # the service tests' name for it

#: A hang guard only: every wait below ends as soon as its condition holds.
DEADLINE = 30.0


@contextmanager
def short_directory() -> Iterator[Path]:
    """A fresh directory with a short path (a Unix socket path holds ~100 bytes)."""
    directory = Path(tempfile.mkdtemp(prefix="lps-", dir="/tmp"))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def connect(path: Path | str) -> socket.socket:
    """A connection to the socket at ``path`` (answers are awaited up to DEADLINE)."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(DEADLINE)
    try:
        client.connect(str(path))
    except OSError:
        client.close()
        raise
    return client


def read_line(client: socket.socket) -> bytes:
    """One line from ``client`` (b"" at end of input)."""
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = client.recv(1)
        if not chunk:
            break
        data += chunk
    return bytes(data)


def ask(client: socket.socket, request: dict[str, Any] | bytes) -> dict[str, Any]:
    """Send one request (an object gets ``"v": 1``; bytes go as they are) and read one answer."""
    line = request if isinstance(request, bytes) else json.dumps({"v": 1, **request}).encode()
    client.sendall(line if line.endswith(b"\n") else line + b"\n")
    answer = read_line(client)
    assert answer.endswith(b"\n"), answer
    parsed: dict[str, Any] = json.loads(answer)
    return parsed


class Helper:
    """A running ``launcher-probe serve``; its stderr lines are collected as they come."""

    def __init__(self, process: subprocess.Popen[bytes], socket_path: Path) -> None:
        self.process = process
        self.socket = socket_path
        self.lines: queue.Queue[str | None] = queue.Queue()  # None: stderr closed
        self.log: list[str] = []
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            self.lines.put(raw.decode(errors="replace"))
        self.lines.put(None)

    def wait_for_log(self, text: str, deadline: float = DEADLINE) -> str:
        """The first log line (since the last one returned) containing ``text``."""
        give_up = time.monotonic() + deadline
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, give_up - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no log line with {text!r}; saw {self.log}") from None
            if line is None:
                self.lines.put(None)
                raise AssertionError(f"the helper exited without logging {text!r}: {self.log}")
            self.log.append(line)
            if text in line:
                return line

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request on a fresh connection."""
        with connect(self.socket) as client:
            return ask(client, request)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send ``sig`` and wait for the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=DEADLINE)


def serve_command(socket_path: Path | None, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "launcher_probe", "serve", *extra]
    return command if socket_path is None else [*command, "--socket", str(socket_path)]


@contextmanager
def running_helper(
    env: dict[str, str],
    socket_path: Path,
    *extra: str,
    pass_fds: Sequence[int] = (),
    command: list[str] | None = None,
) -> Iterator[Helper]:
    """Start the helper, wait until it logs that it listens, and stop (SIGKILL if need be)
    and reap it afterwards."""
    process = subprocess.Popen(
        command or serve_command(socket_path, *extra),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=pass_fds,
    )
    helper = Helper(process, socket_path)
    try:
        helper.wait_for_log("listening on")
        yield helper
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=DEADLINE)


def fresh_socket(directory: Path) -> Path:
    """``<directory>/run/launcher-probe/launcher-probe.sock`` (nothing created)."""
    return directory / "run" / "launcher-probe" / "launcher-probe.sock"


def is_socket_gone(path: Path) -> bool:
    return not os.path.lexists(path)
