"""Watching real processes from tests."""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable


def dies_soon(pid: int, seconds: float = 5.0) -> bool:
    """Whether ``pid`` has exited or exits within ``seconds`` (a zombie left to init counts).
    A leaked grandchild sleeps forever, so it fails this."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([pidfd], [], [], seconds)[0])
    finally:
        os.close(pidfd)


def wait_until(condition: Callable[[], bool], deadline: float = 30.0) -> None:
    """Return once ``condition()`` holds, checking every 10 ms; fail after ``deadline``
    (``condition`` may itself fail the test, when what it watches has ended, say)."""
    give_up = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > give_up:
            raise AssertionError(f"still not true after {deadline} s: {condition}")
        time.sleep(0.01)  # a polling interval, not a guess at how long anything takes
