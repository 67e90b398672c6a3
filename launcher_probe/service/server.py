"""The helper's event loop: one thread multiplexing every connection with ``selectors``.

Warm answers are written from the loop itself; requests that need a resolution go to the
worker threads, and their answers come back through a wake-up socket (which also carries
the signals). Per connection, requests are answered in order, one at a time.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import selectors
import signal
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from launcher_probe.service.handlers import Handlers
from launcher_probe.service.peer import peer_uid
from launcher_probe.service.protocol import (
    CLOSING,
    MAX_REQUEST_BYTES,
    ErrorReason,
    ProtocolError,
    Request,
    error_line,
    parse_request,
)
from launcher_probe.service.workers import Workers

log = logging.getLogger("launcher_probe.service")
#: In-flight requests get this long to finish once a stop is asked for, in seconds.
GRACE = 2.0
#: A client that does not read its answers is dropped past this many pending bytes.
MAX_PENDING_OUTPUT = 8 << 20
DEFAULT_IDLE_TIMEOUT = 30.0
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass(frozen=True, slots=True)
class Limits:
    """How many connections at once, and how long one may stay silent (seconds)."""

    max_connections: int = 256
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    workers: int = 8


@dataclass(eq=False, slots=True)
class _Connection:
    sock: socket.socket
    active: float
    inbuf: bytearray = field(default_factory=bytearray)
    outbuf: bytearray = field(default_factory=bytearray)
    busy: bool = False  # a request is with the workers
    closing: bool = False  # close once the output is written
    ended: bool = False  # the client sent end of input


class Server:
    """Serves ``handlers`` on ``listener`` until SIGTERM or SIGINT; ``remove`` is the socket
    path to unlink on stop (None under socket activation: the manager owns it)."""

    def __init__(
        self,
        listener: socket.socket,
        handlers: Handlers,
        *,
        remove: str | None,
        limits: Limits,
        on_reload: Callable[[], None] | None = None,
    ) -> None:
        self.listener = listener
        self.handlers = handlers
        self.remove = remove
        self.limits = limits
        self.on_reload = on_reload
        self.workers = Workers(limits.workers)
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.done: deque[tuple[_Connection, bytes]] = deque()
        self.connections: set[_Connection] = set()
        self.stopping: str | None = None  # the signal that asked for the stop
        self.uid = os.geteuid()

    def wake(self) -> None:
        """Make the loop look at finished work (from any thread)."""
        with contextlib.suppress(BlockingIOError):  # a wake-up is pending already
            self.wake_w.send(b"\0")

    def submit(self, job: Callable[[], None]) -> None:
        """Run a background job (the watcher's) in a worker."""
        self.workers.submit(job)

    def serve_forever(self) -> int:
        """Serve until stopped; exit status 0."""
        for end in (self.listener, self.wake_r, self.wake_w):
            end.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        previous_wakeup = signal.set_wakeup_fd(self.wake_w.fileno(), warn_on_full_buffer=False)
        for number in (*_STOP_SIGNALS, signal.SIGHUP):
            signal.signal(number, lambda *_: None)  # the wake-up byte does the work
        stop_by = None
        try:
            while True:
                self._turn(stop_by)
                if self.stopping and stop_by is None:
                    stop_by = time.monotonic() + GRACE
                    self._stop_accepting()
                if stop_by is not None and (self._settled() or time.monotonic() >= stop_by):
                    break
        finally:
            signal.set_wakeup_fd(previous_wakeup)
            self._close_all()
        log.info("stopped")
        return 0

    def _turn(self, stop_by: float | None) -> None:
        now = time.monotonic()
        timeout = 1.0 if stop_by is None else max(0.0, min(stop_by - now, 0.1))
        for key, mask in self.selector.select(timeout):
            if key.fileobj is self.listener:
                self._accept()
            elif key.fileobj is self.wake_r:
                self._woken()
            else:
                connection = key.data
                if mask & selectors.EVENT_WRITE:
                    self._flush(connection)
                if mask & selectors.EVENT_READ and connection in self.connections:
                    self._read(connection)
        self._expire_idle(time.monotonic())

    def _settled(self) -> bool:
        return all(not c.busy and not c.outbuf for c in self.connections)

    # --- connections ---------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(64):
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # EMFILE and friends: try again on the next turn
                log.warning("accept failed: %s", error)
                return
            sock.setblocking(False)
            connection = _Connection(sock, time.monotonic())
            self.connections.add(connection)
            self.selector.register(sock, selectors.EVENT_READ, connection)
            uid = peer_uid(sock)
            if uid != self.uid:
                log.warning("refused a connection from uid %s", uid)
                detail = f"this helper serves uid {self.uid} only"
                self._fail(connection, ErrorReason.PEER_REFUSED, detail)
            elif len(self.connections) > self.limits.max_connections:
                detail = f"{self.limits.max_connections} connections are open; try again later"
                self._fail(connection, ErrorReason.BUSY, detail)

    def _read(self, connection: _Connection) -> None:
        try:
            data = connection.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            if connection.inbuf and not connection.busy and not connection.closing:
                detail = "the request line was not finished (no newline before end of input)"
                self._fail(connection, ErrorReason.MALFORMED_REQUEST, detail)
            connection.inbuf.clear()
            connection.closing = connection.ended = True
            if not connection.busy and not connection.outbuf:
                self._close(connection)
            return
        if not connection.closing:  # else: discarded while the last answer drains
            connection.active = time.monotonic()
            connection.inbuf += data
            self._process(connection)

    def _process(self, connection: _Connection) -> None:
        buffer = connection.inbuf
        while not connection.busy and not connection.closing:
            end = buffer.find(b"\n", 0, MAX_REQUEST_BYTES)
            if end < 0:
                if len(buffer) >= MAX_REQUEST_BYTES:
                    detail = f"a request line may hold at most {MAX_REQUEST_BYTES} bytes"
                    buffer.clear()
                    self._fail(connection, ErrorReason.REQUEST_TOO_LARGE, detail)
                return
            line = bytes(buffer[:end]).rstrip(b"\r")
            del buffer[: end + 1]
            if not line.strip():
                continue
            if self.stopping:
                detail = "the helper is stopping"
                self._fail(connection, ErrorReason.SHUTTING_DOWN, detail)
                return
            try:
                request = parse_request(line)
            except ProtocolError as error:
                self._fail(connection, error.reason, error.detail, error.request_id)
                continue
            answer = self.handlers.answer_now(request)
            if answer is None:
                connection.busy = True
                self.workers.submit(functools.partial(self._later, connection, request))
            else:
                self._send(connection, answer)

    def _later(self, connection: _Connection, request: Request) -> None:
        self.done.append((connection, self.handlers.answer_later(request)))
        self.wake()

    def _woken(self) -> None:
        try:
            signals = self.wake_r.recv(4096)
        except BlockingIOError:
            signals = b""
        for number in set(signals) & set(_STOP_SIGNALS):
            self.stopping = signal.Signals(number).name
        if signal.SIGHUP in signals and self.on_reload is not None:
            self.on_reload()
        while self.done:
            connection, answer = self.done.popleft()
            connection.busy = False
            if connection in self.connections:
                connection.active = time.monotonic()
                self._send(connection, answer)
                self._process(connection)

    def _fail(
        self, connection: _Connection, reason: ErrorReason, detail: str, request_id: object = None
    ) -> None:
        """Send an error line; after the reasons in CLOSING the connection closes."""
        connection.closing = connection.closing or reason in CLOSING
        self._send(connection, error_line(reason, detail, request_id))

    def _send(self, connection: _Connection, line: bytes) -> None:
        connection.outbuf += line
        if len(connection.outbuf) > MAX_PENDING_OUTPUT:
            log.warning("dropped a client that does not read its answers")
            self._close(connection)
            return
        self._flush(connection)

    def _flush(self, connection: _Connection) -> None:
        try:
            sent = connection.sock.send(connection.outbuf)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._close(connection)
            return
        del connection.outbuf[:sent]
        if not connection.outbuf and connection.closing and not connection.busy:
            self._end(connection)
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if connection.outbuf else 0)
        if self.selector.get_key(connection.sock).events != events:
            self.selector.modify(connection.sock, events, connection)

    def _end(self, connection: _Connection) -> None:
        """Everything is written: close, or first let the client read it all (closing on
        unread input would reset the connection and lose the last line)."""
        if connection.ended:
            self._close(connection)
            return
        with contextlib.suppress(OSError):
            connection.sock.shutdown(socket.SHUT_WR)
        if self.selector.get_key(connection.sock).events != selectors.EVENT_READ:
            self.selector.modify(connection.sock, selectors.EVENT_READ, connection)

    def _close(self, connection: _Connection) -> None:
        if connection in self.connections:
            self.connections.discard(connection)
            self.selector.unregister(connection.sock)
            connection.sock.close()

    def _expire_idle(self, now: float) -> None:
        limit = self.limits.idle_timeout
        for connection in list(self.connections):
            if connection.busy or now - connection.active < limit:
                continue
            if connection.outbuf or connection.closing:
                self._close(connection)  # not reading its answers
                continue
            detail = f"no complete request for {limit:g} s"
            self._fail(connection, ErrorReason.IDLE_TIMEOUT, detail)

    # --- stopping ------------------------------------------------------------------

    def _stop_accepting(self) -> None:
        self.selector.unregister(self.listener)
        self.listener.close()
        if self.remove is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.remove)
        log.info(
            "stopping (%s): no new connections; %g s for those in flight", self.stopping, GRACE
        )
        for connection in list(self.connections):
            if not connection.busy:
                connection.closing = True
                if not connection.outbuf:
                    self._close(connection)

    def _close_all(self) -> None:
        for connection in list(self.connections):
            if connection.busy:
                detail = f"the helper stopped before this request finished ({GRACE:g} s grace)"
                connection.outbuf += error_line(ErrorReason.SHUTTING_DOWN, detail)
                with contextlib.suppress(OSError):
                    connection.sock.send(connection.outbuf)
            self._close(connection)
        if self.workers.busy:
            _kill_children()


def _kill_children() -> None:
    """Kill the probes still running (their workers are daemon threads): nothing is left."""
    import psutil

    from launcher_probe.host.process import kill_tree

    for child in psutil.Process().children():
        kill_tree(child.pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child.pid, os.WNOHANG)
