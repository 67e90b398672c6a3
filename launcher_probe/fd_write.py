"""Writing a whole buffer to a file descriptor: ``os.write`` may write less than it is
given (a pipe, a terminal, a signal), so every writer of raw bytes loops through here."""

from __future__ import annotations

import os


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write every byte of ``data``; on a non-blocking fd that is full (a host may hand one
    on), wait for room as a blocking one would. OSError as ``os.write`` raises it."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            import select  # a non-blocking fd only

            room = select.poll()
            room.register(fd, select.POLLOUT)
            room.poll()
