"""The helper's event loop: one thread multiplexing every connection with ``selectors``.

Warm answers are written from the loop itself; requests that need a resolution go to the
worker threads (a request for a resolution already under way waits on it without one), and
their answers come back through a wake-up socket (which also carries the signals). Per
connection, requests are answered in order, one at a time.

What a client can make the helper hold is bounded: a request line (1 MiB) per connection,
which is not read while its request is answered; a whole request line within the idle
time; a refused connection (another user, too many) nothing once its one error line is
sent; and when file descriptors run out, accepting pauses instead of spinning.
"""

from __future__ import annotations

import contextlib
import errno
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
from launcher_probe.service.log_budget import LogBudget
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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from concurrent.futures import Future

    from launcher_probe.service.decisions import Held

log = logging.getLogger("launcher_probe.service")
#: In-flight requests get this long to finish once a stop is asked for, in seconds.
GRACE = 2.0
#: Past the grace, how long the probes killed then may take to unwind, and how often what
#: runs meanwhile is killed again.
UNWIND = 1.0
KILL_AGAIN = 0.05
DEFAULT_IDLE_TIMEOUT = 30.0
#: Idle connections are looked for this often (seconds; more often for short idle times).
IDLE_SWEEP = 0.25
#: When file descriptors run out, the listener rests this long (seconds) before accepting
#: again (what waits meanwhile stays in the listen backlog).
ACCEPT_PAUSE = 0.25
#: accept() failures that mean "out of resources", not "this connection failed".
_SHORTAGE = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
#: Request lines up to this long are parsed once and kept (by their exact bytes).
PARSED_LINE_BYTES = 4096
#: How many parsed request lines are kept.
PARSED_LINES = 256
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass(frozen=True, slots=True)
class Limits:
    """How many connections at once, how long one may go without a complete request
    (seconds), and how many threads do the slow work."""

    max_connections: int = 256
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    #: Threads for requests (resolutions, probes), started as needed.
    workers: int = 32
    #: Threads for the watcher's re-verifications (a pool of their own).
    background_workers: int = 2


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
        self.workers = Workers(limits.workers, "worker")
        self.background = Workers(limits.background_workers, "background")
        self.selector = selectors.DefaultSelector()
        self.wake_r, self.wake_w = socket.socketpair()
        self.done: deque[tuple[Connection, bytes]] = deque()
        self.connections: set[Connection] = set()  # the open ones
        self.stopping: str | None = None  # the signal that asked for the stop
        self.uid = os.geteuid()
        self.idle_check = 0.0  # when idle connections are looked for next
        self.accept_paused_until: float | None = None  # out of fds: not accepting
        self.refusals = LogBudget()
        self.shortages = LogBudget(per_second=0.2, burst=1)
        self.parsed: dict[bytes, Request] = {}  # small request lines, by their bytes

    def wake(self) -> None:
        """Make the loop look at finished work (from any thread)."""
        with contextlib.suppress(BlockingIOError):  # a wake-up is pending already
            self.wake_w.send(b"\0")

    def submit(self, job: Callable[[], None]) -> None:
        """Run a background job (the watcher's) in the background pool."""
        self.background.submit(job)

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
        if self.accept_paused_until is not None:
            if now >= self.accept_paused_until and self.stopping is None:
                self.accept_paused_until = None
                self.selector.register(self.listener, selectors.EVENT_READ)
            else:
                timeout = min(timeout, max(0.0, self.accept_paused_until - now))
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
            except OSError as error:
                if error.errno in _SHORTAGE:  # rest, instead of spinning on a readable listener
                    self._pause_accepting(error)
                    return
                continue  # this connection failed (the peer left, say): the next one
            uid = peer_uid(sock)
            if uid != self.uid:
                self._refuse(
                    sock,
                    ErrorReason.PEER_REFUSED,
                    f"this helper serves uid {self.uid} only",
                    f"refused a connection from uid {uid}",
                )
            elif len(self.connections) >= self.limits.max_connections:
                detail = f"{self.limits.max_connections} connections are open; try again later"
                self._refuse(sock, ErrorReason.BUSY, detail, f"busy: {detail}")
            else:
                Connection(sock, self.selector, self.connections)

    def _refuse(self, sock: socket.socket, reason: ErrorReason, detail: str, logged: str) -> None:
        """Send one error line if the socket takes it now, and close: a refused connection
        holds no slot and no fd. ``logged`` is logged within the refusal budget."""
        suffix = self.refusals.allow()
        if suffix is not None:
            log.warning("%s%s", logged, suffix)
        with contextlib.suppress(OSError):
            sock.setblocking(False)
            sock.send(error_line(reason, detail))
            sock.recv(65536)  # what the client sent already: closing on it would reset
        sock.close()

    def _pause_accepting(self, error: OSError) -> None:
        suffix = self.shortages.allow()
        if suffix is not None:
            log.warning(
                "accept failed: %s; not accepting for %g s%s",
                error,
                ACCEPT_PAUSE,
                suffix,
            )
        self.selector.unregister(self.listener)
        self.accept_paused_until = time.monotonic() + ACCEPT_PAUSE

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
            connection.inbuf += data
            self._process(connection)

    def _process(self, connection: Connection) -> None:
        buffer = connection.inbuf
        while connection.open and not connection.busy and not connection.closing:
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
            connection.active = time.monotonic()
            try:
                request = self._parse(line)
            except ProtocolError as error:
                connection.fail(error.reason, error.detail, error.request_id)
                continue
            try:
                answer = self.handlers.answer_now(request)
            except Exception as error:  # a bug must cost one answer, not the helper
                log.exception("internal error answering %s", request.op)
                answer = error_line(ErrorReason.INTERNAL_ERROR, repr(error), request.id)
            if answer is not None:
                connection.send(answer)
                continue
            connection.busy = True
            connection.update()  # not read while busy
            running = self.handlers.pending(request)
            if running is None:
                self.workers.submit(functools.partial(self._later, connection, request))
            else:
                running.add_done_callback(functools.partial(self._waited, connection, request))

    def _parse(self, line: bytes) -> Request:
        """parse_request, once per distinct small line (a Request is never changed)."""
        request = self.parsed.get(line)
        if request is None:
            request = parse_request(line)
            if len(line) <= PARSED_LINE_BYTES:
                if len(self.parsed) >= PARSED_LINES:
                    del self.parsed[next(iter(self.parsed))]
                self.parsed[line] = request
        return request

    def _waited(self, connection: Connection, request: Request, done: Future[Held]) -> None:
        answer = self.handlers.answer_waited(request, done)
        if answer is None:  # the binary changed since it was decided: decide again
            self.workers.submit(functools.partial(self._later, connection, request))
            return
        self.done.append((connection, answer))
        self.wake()

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
                connection.update()

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
        if self.accept_paused_until is None:
            self.selector.unregister(self.listener)
        self.accept_paused_until = None
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
        # The probes still running are killed and unwind (each removes its private
        # directory); a resolution may go on to its next candidate and probe that one, so
        # whatever runs is killed again, until the pools are idle or UNWIND has passed (a
        # job waiting for another process's lock does not end so soon).
        unwound_by = time.monotonic() + UNWIND
        while (self.workers.busy or self.background.busy) and time.monotonic() < unwound_by:
            _kill_children()
            for pool in (self.workers, self.background):
                pool.wait_idle(min(KILL_AGAIN, max(0.0, unwound_by - time.monotonic())))


def _kill_children() -> None:
    """Kill the probes still running (their workers are daemon threads): nothing is left."""
    import psutil

    from launcher_probe.host.probe.tree_kill import kill_tree

    for child in psutil.Process().children():
        kill_tree(child.pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child.pid, os.WNOHANG)
