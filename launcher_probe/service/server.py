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
from dataclasses import dataclass

from launcher_probe.service.connection import Connection
from launcher_probe.service.handlers import Handlers
from launcher_probe.service.peer import peer_uid
from launcher_probe.service.protocol import (
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
DEFAULT_IDLE_TIMEOUT = 30.0
#: Idle connections are looked for this often (seconds; more often for short idle times).
IDLE_SWEEP = 0.25
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass(frozen=True, slots=True)
class Limits:
    """How many connections at once, and how long one may stay silent (seconds)."""

    max_connections: int = 256
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    workers: int = 8


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
        self.done: deque[tuple[Connection, bytes]] = deque()
        self.connections: set[Connection] = set()  # the open ones
        self.stopping: str | None = None  # the signal that asked for the stop
        self.uid = os.geteuid()
        self.idle_check = 0.0  # when idle connections are looked for next

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
                    connection.flush()
                if mask & selectors.EVENT_READ and connection.open:
                    self._read(connection)
        now = time.monotonic()
        if now >= self.idle_check:  # a sweep over every connection: a few times a second
            self.idle_check = now + min(IDLE_SWEEP, self.limits.idle_timeout / 4)
            self._expire_idle(now)

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
            connection = Connection(sock, self.selector, self.connections)
            uid = peer_uid(sock)
            if uid != self.uid:
                log.warning("refused a connection from uid %s", uid)
                detail = f"this helper serves uid {self.uid} only"
                connection.fail(ErrorReason.PEER_REFUSED, detail)
            elif len(self.connections) > self.limits.max_connections:
                detail = f"{self.limits.max_connections} connections are open; try again later"
                connection.fail(ErrorReason.BUSY, detail)

    def _read(self, connection: Connection) -> None:
        try:
            data = connection.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            if connection.inbuf and not connection.busy and not connection.closing:
                detail = "the request line was not finished (no newline before end of input)"
                connection.fail(ErrorReason.MALFORMED_REQUEST, detail)
            connection.inbuf.clear()
            connection.closing = connection.ended = True
            if not connection.busy and not connection.outbuf:
                connection.close()
            return
        if not connection.closing:  # else: discarded while the last answer drains
            connection.active = time.monotonic()
            connection.inbuf += data
            self._process(connection)

    def _process(self, connection: Connection) -> None:
        buffer = connection.inbuf
        while not connection.busy and not connection.closing:
            end = buffer.find(b"\n", 0, MAX_REQUEST_BYTES)
            if end < 0:
                if len(buffer) >= MAX_REQUEST_BYTES:
                    detail = f"a request line may hold at most {MAX_REQUEST_BYTES} bytes"
                    buffer.clear()
                    connection.fail(ErrorReason.REQUEST_TOO_LARGE, detail)
                return
            line = bytes(buffer[:end]).rstrip(b"\r")
            del buffer[: end + 1]
            if not line.strip():
                continue
            if self.stopping:
                detail = "the helper is stopping"
                connection.fail(ErrorReason.SHUTTING_DOWN, detail)
                return
            try:
                request = parse_request(line)
            except ProtocolError as error:
                connection.fail(error.reason, error.detail, error.request_id)
                continue
            try:
                answer = self.handlers.answer_now(request)
            except Exception as error:  # a bug must cost one answer, not the helper
                log.exception("internal error answering %s", request.op)
                answer = error_line(ErrorReason.INTERNAL_ERROR, repr(error), request.id)
            if answer is None:
                connection.busy = True
                self.workers.submit(functools.partial(self._later, connection, request))
            else:
                connection.send(answer)

    def _later(self, connection: Connection, request: Request) -> None:
        try:
            answer = self.handlers.answer_later(request)
        except Exception as error:  # a bug must cost one answer, not the connection
            log.exception("internal error answering %s", request.op)
            answer = error_line(ErrorReason.INTERNAL_ERROR, repr(error), request.id)
        self.done.append((connection, answer))
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
            if connection.open:
                connection.active = time.monotonic()
                connection.send(answer)
                self._process(connection)

    def _expire_idle(self, now: float) -> None:
        limit = self.limits.idle_timeout
        for connection in list(self.connections):
            if connection.busy or now - connection.active < limit:
                continue
            if connection.outbuf or connection.closing:
                connection.close()  # not reading its answers
                continue
            detail = f"no complete request for {limit:g} s"
            connection.fail(ErrorReason.IDLE_TIMEOUT, detail)

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
                    connection.close()

    def _close_all(self) -> None:
        for connection in list(self.connections):
            if connection.busy:
                detail = f"the helper stopped before this request finished ({GRACE:g} s grace)"
                connection.outbuf += error_line(ErrorReason.SHUTTING_DOWN, detail)
                with contextlib.suppress(OSError):
                    connection.sock.send(connection.outbuf)
            connection.close()
        if self.workers.busy:
            _kill_children()


def _kill_children() -> None:
    """Kill the probes still running (their workers are daemon threads): nothing is left."""
    import psutil

    from launcher_probe.host.probe.tree_kill import kill_tree

    for child in psutil.Process().children():
        kill_tree(child.pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child.pid, os.WNOHANG)
