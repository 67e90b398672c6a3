"""One client connection of the helper: its buffers, and writing its answers without
blocking (a client that does not read is dropped, never waited for). While one of its
requests is being answered the connection is not read at all: what the client sends
meanwhile waits in the socket (whose own buffer then stops the client), not in the helper.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import time

from launcher_probe.service.protocol import CLOSING, ErrorReason, error_line

log = logging.getLogger("launcher_probe.service")
#: A client that does not read its answers is dropped past this many pending bytes.
MAX_PENDING_OUTPUT = 8 << 20


class Connection:
    """A non-blocking client socket, registered with ``selector`` and in ``registry`` (the
    open connections) until :meth:`close`."""

    __slots__ = (
        "active",
        "busy",
        "closing",
        "ended",
        "inbuf",
        "open",
        "outbuf",
        "registry",
        "watched",
        "selector",
        "sock",
    )

    def __init__(
        self, sock: socket.socket, selector: selectors.BaseSelector, registry: set[Connection]
    ) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.selector = selector
        self.registry = registry
        self.active = time.monotonic()  # accepted, or its last request taken or answered
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.busy = False  # a request is with the workers
        self.closing = False  # close once the output is written
        self.ended = False  # the client sent end of input
        self.open = True
        self.watched = selectors.EVENT_READ  # the events the selector waits for (0: none)
        selector.register(sock, selectors.EVENT_READ, self)
        registry.add(self)

    def fail(self, reason: ErrorReason, detail: str, request_id: object = None) -> None:
        """Send an error line; after the reasons in CLOSING the connection closes."""
        self.closing = self.closing or reason in CLOSING
        self.send(error_line(reason, detail, request_id))

    def send(self, line: bytes) -> None:
        """Queue ``line`` and write what the socket takes now."""
        self.outbuf += line
        if len(self.outbuf) > MAX_PENDING_OUTPUT:
            log.warning("dropped a client that does not read its answers")
            self.close()
            return
        self.flush()

    def flush(self) -> None:
        """Write what the socket takes; wait for it to be writable when it took less."""
        try:
            sent = self.sock.send(self.outbuf)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self.close()
            return
        del self.outbuf[:sent]
        if not self.outbuf and self.closing and not self.busy:
            self._end()
            return
        self.update()

    def update(self) -> None:
        """Wait for what the connection needs now: input unless a request is being
        answered, and writability while output is pending."""
        if self.open:
            reading = 0 if self.busy else selectors.EVENT_READ
            self._watch(reading | (selectors.EVENT_WRITE if self.outbuf else 0))

    def _end(self) -> None:
        """Everything is written: close, or first let the client read it all (closing on
        unread input would reset the connection and lose the last line)."""
        if self.ended:
            self.close()
            return
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)
        self._watch(selectors.EVENT_READ)

    def _watch(self, events: int) -> None:
        if events == self.watched:
            return
        if not events:
            self.selector.unregister(self.sock)
        elif not self.watched:
            self.selector.register(self.sock, events, self)
        else:
            self.selector.modify(self.sock, events, self)
        self.watched = events

    def close(self) -> None:
        """Unregister and close (once)."""
        if self.open:
            self.open = False
            self.registry.discard(self)
            if self.watched:
                self.selector.unregister(self.sock)
            self.sock.close()
