"""Writing a whole buffer to a file descriptor: ``os.write`` may write less than it is
given (a pipe, a terminal, a signal), so every writer of raw bytes loops through here."""

from __future__ import annotations

import os


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write every byte of ``data`` (OSError as ``os.write`` raises it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
