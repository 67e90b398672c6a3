"""The supervisor's reports as its client reads them, with a real supervisor: its death
with a request of ours unread is its end (never an error of the client's), and a step's
exit that crossed a kill is that step's own status."""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Iterator

import psutil
import pytest

from launcher_probe.host.probe.supervisor_client import HANG_GUARD, Supervisor
from tests.processes import dies_soon, wait_until


@pytest.fixture
def supervisor() -> Iterator[Supervisor]:
    started = Supervisor()
    assert started.start(time.monotonic() + HANG_GUARD)
    yield started
    started.close()


def spawned(supervisor: Supervisor, *argv: str) -> int:
    null = os.open(os.devnull, os.O_RDWR)
    try:
        return supervisor.spawn(list(argv), {}, "/", (null, null))
    finally:
        os.close(null)


def serving_process(step: int) -> psutil.Process:
    """The supervisor's process that holds the socket: the step's parent (the keeper is
    that one's parent, the client's child)."""
    server = psutil.Process(step).parent()
    assert server is not None and server.ppid() != os.getpid()
    return server


def test_a_supervisor_dead_with_a_request_unread_is_its_end(supervisor: Supervisor) -> None:
    step = spawned(supervisor, "/bin/sleep", "600")
    server = serving_process(step)
    server.suspend()
    wait_until(lambda: server.status() == psutil.STATUS_STOPPED)
    supervisor.signal(signal.SIGUSR1)  # queued: a stopped process reads nothing
    server.kill()
    assert supervisor.next_event(time.monotonic() + HANG_GUARD) == b""
    assert dies_soon(step)  # the keeper killed what its server left


def test_a_kill_that_crosses_the_steps_exit_gives_its_status(supervisor: Supervisor) -> None:
    spawned(supervisor, "/bin/sh", "-c", "exit 5")
    # its exit report is waiting, unread, when the kill is asked for
    assert select.select([supervisor.fileno()], [], [], HANG_GUARD)[0]
    assert supervisor.kill() == 5
    step = spawned(supervisor, "/bin/sleep", "600")
    assert supervisor.kill() is None  # killed: no status of its own
    assert dies_soon(step)
