"""JSON-RPC over stdio: one message per line. Boundaries are found by newline alone; at most
one partial message is held, up to a bound, and it is handed on without a copy once its
line ends. A message past the bound is passed on as it comes, unread, or dropped."""

from __future__ import annotations

from _thread import LockType
from collections.abc import Callable
from typing import Protocol

from launcher_probe.fd_io import read_some, write_all

#: Bytes asked of the kernel per read.
READ_SIZE = 1 << 16

#: Given one message (its newline included, or the unterminated rest at end of input):
#: what to send on, the same object when nothing changes.
Handler = Callable[[bytes | bytearray], bytes | bytearray]


class LongMessages(Protocol):
    """What becomes of a message that grows past a pump's ``limit`` before its newline."""

    def passes(self) -> bool:
        """Whether it goes on as it comes, unread; else it is dropped."""

    def dropped(self, head: bytes, tail: bytes) -> bytes:
        """What to send in place of one dropped: ``head`` is its first ``READ_SIZE`` bytes,
        ``tail`` its last ``READ_SIZE`` (to its newline)."""


class _Sink:
    """Where a pump writes: each write whole under ``lock`` (when another thread writes
    whole messages to the same fd), or one long message piece by piece with ``lock`` held
    from its first piece to its last. After a write fails (the reader left), nothing more
    is written."""

    def __init__(self, fd: int, lock: LockType | None) -> None:
        self.fd = fd
        self.lock = lock
        self.ok = True
        self.holding = False

    def send(self, data: bytes | bytearray, *, more: bool = False) -> None:
        """Write ``data``; ``more``: the message goes on in the next ``send``, and no other
        writer may come between (the lock stays held)."""
        if self.lock is not None and not self.holding:
            self.lock.acquire()
            self.holding = True
        try:
            if self.ok:
                write_all(self.fd, data)
        except OSError:
            self.ok = False
        finally:
            if self.holding and (not more or not self.ok):
                self.holding = False
                assert self.lock is not None
                self.lock.release()


def pump(
    source: int,
    sink: int,
    handle: Handler,
    *,
    limit: int,
    long_messages: LongMessages,
    lock: LockType | None = None,
) -> None:
    """Copy ``source`` to ``sink`` message by message through ``handle`` until end of input
    (or a read that fails, which ends it the same way).

    The messages that end in one read are written with one ``write`` (holding ``lock``, when
    another thread writes whole messages to ``sink`` too). A message that grows past
    ``limit`` bytes is never handled: ``long_messages`` says whether it goes on as it comes
    (under ``lock`` to its end), or is read to its end and dropped, and what to send in its
    place. With ``lock``, a message that the end of input leaves unended is ended
    with a newline, so that the other writer's next message is not read as part of it.
    When ``sink`` fails (the reader left), the rest is read and dropped, so that the writer
    on ``source`` is never blocked by a reader that is gone.
    """
    out = _Sink(sink, lock)
    partial = bytearray()
    passing = dropping = False  # in a message past ``limit``
    head = tail = b""  # of the one dropped
    while chunk := _read(source):
        start = 0
        if passing or dropping:
            end = chunk.find(b"\n")
            piece = chunk if end < 0 else chunk[: end + 1]
            if passing:
                out.send(piece, more=end < 0)
            else:
                tail = (tail + piece)[-READ_SIZE:]
            if end < 0:
                continue
            if dropping:
                out.send(long_messages.dropped(head, tail))
            passing = dropping = False
            start = end + 1
        messages: list[bytes | bytearray] = []
        end = chunk.find(b"\n", start)
        if end >= 0 and partial:
            partial += chunk[start : end + 1]
            messages.append(handle(partial))
            partial = bytearray()
            start, end = end + 1, chunk.find(b"\n", end + 1)
        while end >= 0:
            messages.append(handle(chunk[start : end + 1]))
            start, end = end + 1, chunk.find(b"\n", end + 1)
        if start < len(chunk):
            partial += chunk[start:] if start else chunk
        if messages:
            out.send(messages[0] if len(messages) == 1 else b"".join(messages))
        if len(partial) > limit:
            passing = long_messages.passes()
            if passing:
                out.send(partial, more=True)
            else:
                dropping = True
                head, tail = bytes(partial[:READ_SIZE]), bytes(partial[-READ_SIZE:])
            partial = bytearray()
    last = handle(partial) if partial else b""
    if lock is not None and (passing or last) and not last.endswith(b"\n"):
        last = bytes(last) + b"\n"  # what the other writer sends next stays a line of its own
    if last or passing:
        out.send(last)  # (ending a long message: the lock goes)


def _read(source: int) -> bytes:
    """The next bytes of ``source``; b"" at its end, and when reading it fails (a host that
    reset the connection, say): nothing more will come from it either way."""
    try:
        return read_some(source, READ_SIZE)
    except OSError:
        return b""
