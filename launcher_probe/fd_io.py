"""Reading and writing raw bytes on a file descriptor a host may have handed on: ``os.write``
may write less than it is given (a pipe, a terminal, a signal), and a host may hand on a
non-blocking fd, on which either call fails rather than waits. Every raw writer loops
through here, and so does the proxy's relay as it reads (wrap's copiers poll their two fds
at once instead)."""

from __future__ import annotations

import os


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """Write every byte of ``data``; on a non-blocking fd that is full, wait for room as a
    blocking one would. OSError as ``os.write`` raises it."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            _wait(fd, writing=True)


def read_some(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes, b"" at end of input; on a non-blocking fd with nothing to read,
    wait for input as a blocking one would. OSError as ``os.read`` raises it."""
    while True:
        try:
            return os.read(fd, size)
        except BlockingIOError:
            _wait(fd, writing=False)


def _wait(fd: int, *, writing: bool) -> None:
    """Until ``fd`` is ready (or fails, which the next call reports)."""
    import select  # a non-blocking fd only

    ready = select.poll()
    ready.register(fd, select.POLLOUT if writing else select.POLLIN)
    ready.poll()
