"""JSON-RPC over stdio: one message per line. Boundaries are found by newline alone; at most
one partial message is held, and it is handed on without a copy once its line ends."""

from __future__ import annotations

from _thread import LockType
from collections.abc import Callable

from launcher_probe.fd_io import read_some, write_all

#: Bytes asked of the kernel per read.
READ_SIZE = 1 << 16

#: Given one message (its newline included, or the unterminated rest at end of input):
#: what to send on, the same object when nothing changes.
Handler = Callable[[bytes | bytearray], bytes | bytearray]


def pump(
    source: int,
    sink: int,
    handle: Handler,
    *,
    on_sink_error: Callable[[], None],
    lock: LockType | None = None,
) -> None:
    """Copy ``source`` to ``sink`` message by message through ``handle`` until end of input
    (or a read that fails, which ends it the same way).

    The messages that end in one read are written with one ``write`` (holding ``lock``, when
    another thread writes whole messages to ``sink`` too). When ``sink`` fails (the reader
    left), ``on_sink_error`` runs once and the rest is read and dropped, so that the writer
    on ``source`` is never blocked by a reader that is gone.
    """
    partial = bytearray()
    sink_ok = True
    while chunk := _read(source):
        out: list[bytes | bytearray] = []
        start, end = 0, chunk.find(b"\n")
        if end >= 0 and partial:
            partial += chunk[: end + 1]
            out.append(handle(partial))
            partial = bytearray()
            start, end = end + 1, chunk.find(b"\n", end + 1)
        while end >= 0:
            out.append(handle(chunk[start : end + 1]))
            start, end = end + 1, chunk.find(b"\n", end + 1)
        if start < len(chunk):
            partial += chunk[start:] if start else chunk
        if out and sink_ok:
            data = out[0] if len(out) == 1 else b"".join(out)
            sink_ok = _send(sink, data, on_sink_error, lock)
    if partial and sink_ok:
        _send(sink, handle(partial), on_sink_error, lock)


def _read(source: int) -> bytes:
    """The next bytes of ``source``; b"" at its end, and when reading it fails (a host that
    reset the connection, say): nothing more will come from it either way."""
    try:
        return read_some(source, READ_SIZE)
    except OSError:
        return b""


def _send(
    sink: int, data: bytes | bytearray, on_sink_error: Callable[[], None], lock: LockType | None
) -> bool:
    try:
        if lock is None:
            write_all(sink, data)
        else:
            with lock:
                write_all(sink, data)
    except OSError:
        on_sink_error()
        return False
    return True
