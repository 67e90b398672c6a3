"""A stderr nobody reads (a terminal paused with Ctrl-S, a pipe never drained) stops the
helper's log, never the helper: its threads only queue their lines."""

from __future__ import annotations

import logging
import os
import queue
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from launcher_probe.service.log_writer import _Dropping
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


@contextmanager
def _helper_on_a_full_fifo(
    env: dict[str, str], socket: Path, directory: Path
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The helper, its stderr a FIFO whose buffer is full (blocking, as a terminal's is),
    and the FIFO's read end, unread; both gone afterwards (the helper killed if need be)."""
    reader = _full_fifo(directory / "stderr")
    stderr = os.open(directory / "stderr", os.O_WRONLY)
    process = subprocess.Popen(
        serve_command(socket), env=env, stdin=subprocess.DEVNULL, stderr=stderr
    )
    os.close(stderr)
    try:
        wait_until(lambda: socket.exists() or process.poll() is not None)
        yield process, reader
    finally:
        os.close(reader)
        if process.poll() is None:
            process.kill()
        process.wait()


def _resolved(socket: Path, fake: FakeCodex) -> None:
    with connect(socket) as client:
        client.settimeout(20)  # a resolution logs its decision: it must not wait on that
        answer = ask(client, {"op": "resolve", "codex": str(fake.path)})
    assert answer["result"]["decision"] == "published"


def test_the_helper_answers_and_stops_while_its_stderr_is_not_read(
    host_env: HostEnv, fake_codex: FakeCodex, socket_path: Path, tmp_path: Path
) -> None:
    with _helper_on_a_full_fifo(host_env.env, socket_path, tmp_path) as (process, _):
        _resolved(socket_path, fake_codex)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0  # stderr still unread: its lines are lost


def test_the_helpers_lines_come_once_its_stderr_is_read_again(
    host_env: HostEnv, fake_codex: FakeCodex, socket_path: Path, tmp_path: Path
) -> None:
    with _helper_on_a_full_fifo(host_env.env, socket_path, tmp_path) as (process, reader):
        _resolved(socket_path, fake_codex)
        os.set_blocking(reader, True)
        logged = b""
        while b"decision for" not in logged:
            chunk = os.read(reader, 1 << 16)  # blocks until the writer writes
            assert chunk, f"stderr ended without the decision: {logged[-500:]!r}"
            logged += chunk
        process.send_signal(signal.SIGTERM)
        logged += b"".join(iter(lambda: os.read(reader, 1 << 16), b""))  # to the end
        assert process.wait(timeout=20) == 0
        assert b"serve: INFO stopped" in logged  # the last line, written as the helper ends


def test_the_line_after_lines_dropped_says_how_many() -> None:
    """When the queue is full a line is dropped and counted; the next line queued says so."""
    lines: queue.Queue[logging.LogRecord | None] = queue.Queue(1)
    handler = _Dropping(lines)
    log = logging.getLogger("launcher_probe.tests.log_writer")
    log.propagate, log.level = False, logging.INFO
    log.addHandler(handler)
    try:
        for number in range(4):
            log.info("line %d", number)
        first = lines.get_nowait()
        log.info("line %d", 4)
        after = lines.get_nowait()
    finally:
        log.removeHandler(handler)
    assert first is not None and first.getMessage() == "line 0"
    assert after is not None
    assert after.getMessage() == "line 4 (3 lines before it dropped: stderr was not read)"
