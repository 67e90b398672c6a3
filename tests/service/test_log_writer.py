"""A stderr nobody reads (a terminal paused with Ctrl-S, a pipe never drained) stops the
helper's log, never the helper: its threads only queue their lines."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.conftest import HostEnv
from tests.fakes import FakeCodex
from tests.service.helper import ask, connect, serve_command, wait_until


def _full_fifo(path: Path) -> int:
    """A FIFO at ``path`` whose buffer is full; the read end returned (kept open, unread)."""
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    filler = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # its own description: non-blocking
    try:
        while True:
            os.write(filler, b"#" * 4096)
    except BlockingIOError:
        try:
            while True:
                os.write(filler, b"#")
        except BlockingIOError:
            pass
    finally:
        os.close(filler)
    return reader


def test_the_helper_answers_while_its_stderr_is_not_read(
    host_env: HostEnv, fake_codex: FakeCodex, socket_path: Path, tmp_path: Path
) -> None:
    reader = _full_fifo(tmp_path / "stderr")
    stderr = os.open(tmp_path / "stderr", os.O_WRONLY)  # blocking, as a terminal's is
    process = subprocess.Popen(
        serve_command(socket_path), env=host_env.env, stdin=subprocess.DEVNULL, stderr=stderr
    )
    os.close(stderr)
    try:
        wait_until(lambda: socket_path.exists() or process.poll() is not None)
        with connect(socket_path) as client:
            client.settimeout(20)  # a resolution logs its decision: it must not wait on that
            answer = ask(client, {"op": "resolve", "codex": str(fake_codex.path)})
        assert answer["result"]["decision"] == "published"
        process.send_signal(signal.SIGTERM)
        os.set_blocking(reader, True)  # read again now: to its end, when the helper exits
        logged = b"".join(iter(lambda: os.read(reader, 1 << 16), b""))
        assert process.wait(timeout=30) == 0
        assert b"decision for" in logged  # written once stderr was read again
    finally:
        os.close(reader)
        if process.poll() is None:
            process.kill()
        process.wait()
