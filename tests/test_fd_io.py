"""``write_all``: every byte, also through a non-blocking fd that fills up (a host may hand
one on), as through a blocking one; ``read_some``: a non-blocking fd with nothing to read
yet is waited on, as a blocking one."""

from __future__ import annotations

import fcntl
import os
import select
import termios
import threading
import time

import pytest

from launcher_probe.fd_io import read_some, write_all

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


#: The syscall ``select.poll().poll()`` waits in, by machine.
_POLL_SYSCALL = {"x86_64": 7, "aarch64": 73}  # poll; ppoll (aarch64 has no poll)


def _waits_in(thread: threading.Thread, number: int) -> bool:
    """Whether ``thread`` is in syscall ``number`` (Linux's /proc/<tid>/syscall)."""
    with open(f"/proc/self/task/{thread.native_id}/syscall") as status:
        return status.read().split(" ", 1)[0] == str(number)


def test_a_non_blocking_pipe_with_nothing_yet_is_waited_on() -> None:
    number = _POLL_SYSCALL.get(os.uname().machine)
    if number is None or not os.path.exists("/proc/self/task"):
        pytest.skip("needs Linux's /proc/<tid>/syscall on x86_64 or aarch64")
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(read_some(read_end, 64)))
    reader.start()
    deadline = time.monotonic() + 30  # a hang guard, never a synchronisation
    while True:  # until its read found nothing and it waits for input
        assert reader.is_alive(), read
        if _waits_in(reader, number):
            break
        assert time.monotonic() < deadline
    os.write(write_end, b"data")
    reader.join(30)
    os.close(write_end)
    assert read == [b"data"]
    assert read_some(read_end, 64) == b""  # the end of input, as a blocking read gives it
    os.close(read_end)
