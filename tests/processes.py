"""Watching real processes from tests."""

from __future__ import annotations

import os
import select


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
