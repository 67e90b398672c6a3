"""``write_all``: every byte, also through a non-blocking fd that fills up (a host may hand
one on), as through a blocking one."""

from __future__ import annotations

import fcntl
import os
import select
import termios
import threading

from launcher_probe.fd_io import write_all

_F_GETPIPE_SZ = 1032  # fcntl.F_GETPIPE_SZ, Linux (Python 3.10+ on Linux only)


def test_a_full_non_blocking_pipe_is_waited_for() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    capacity = fcntl.fcntl(write_end, _F_GETPIPE_SZ)
    data = os.urandom(4 * capacity)
    received = bytearray()

    def read_once_full() -> None:
        """Drain the pipe only once the writer has filled it (it cannot write more)."""
        queued = bytearray(4)
        while True:
            select.select([read_end], [], [])
            fcntl.ioctl(read_end, termios.FIONREAD, queued)
            if int.from_bytes(queued, "little") == capacity:
                break
        while len(received) < len(data):
            received.extend(os.read(read_end, 4096))

    reader = threading.Thread(target=read_once_full, daemon=True)
    reader.start()
    write_all(write_end, data)
    reader.join()
    os.close(read_end)
    os.close(write_end)
    assert bytes(received) == data
