"""The proxy end to end: the host's stdin to the server through the rewriter, the server's
stdout to the host's stdout, the server's stderr straight to the host's stderr.

Two threads with blocking I/O, one per direction, each holding at most one message; the
main thread waits for the server, forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to its group
and after stdin's end (or one of them) gives it a grace period before killing its tree;
SIGUSR1, SIGUSR2 and SIGALRM go to its group too, and the relay goes on (the server's exit,
should one end it, ends the proxy). SIGKILL cannot be caught: the server's supervisor
(``child.py``) sees the proxy die and kills the server's tree.
"""

from __future__ import annotations

import gc
import os
import signal
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress

from launcher_probe.fd_io import write_all
from launcher_probe.proxy.capabilities import INSPECT_LIMIT, ServerCapabilities
from launcher_probe.proxy.child import Child, exit_status
from launcher_probe.proxy.framing import pump
from launcher_probe.proxy.rewrite import MAX_HOST_MESSAGE, Rewriter

#: Forwarded to the server's group; then it has the grace period to exit.
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
#: Forwarded to the server's group alone (by default each would end the proxy, not the
#: server, and leave the server running).
PASSED_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM)
#: How long the server's output may still flow after everything of it was killed.
_DRAIN_TIMEOUT = 5.0
_STDIN, _STDOUT = 0, 1
#: The host's stdout has two writers: the server-to-host relay, and the proxy answering a
#: request it refuses (``answer_host``); each writes whole messages, one at a time.
_HOST_OUT = threading.Lock()
#: The most bytes of the proxy's own answers that wait for a host that reads nothing (some
#: 800 refusals); an answer past them is dropped.
MAX_PENDING_ANSWERS = 1 << 20


class _Answers:
    """The proxy's own answers to the host, written by a thread of their own between two of
    the server's messages: the host-to-server relay only hands them on, so a host that has
    stopped reading never holds it up (the end of its stdin still reaches the server)."""

    def __init__(self) -> None:
        self._pending: deque[bytes] = deque()
        self._size = 0  # of what is pending or being written
        self._changed = threading.Condition()
        self._writer: threading.Thread | None = None

    def put(self, message: bytes) -> bool:
        """Hand ``message`` (whole lines) on; False when it is dropped: more than
        ``MAX_PENDING_ANSWERS`` bytes would wait."""
        with self._changed:
            if self._size + len(message) > MAX_PENDING_ANSWERS:
                return False
            self._pending.append(message)
            self._size += len(message)
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._write, name="answers-to-host", daemon=True
                )
                self._writer.start()
            self._changed.notify_all()
        return True

    def settle(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for what is pending to be written."""
        with self._changed:
            self._changed.wait_for(lambda: not self._size, timeout)

    def _write(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._pending)
                message = self._pending.popleft()
            with _HOST_OUT, suppress(OSError):  # a host that stopped reading drops it
                write_all(_STDOUT, message)
            with self._changed:
                self._size -= len(message)
                self._changed.notify_all()


_ANSWERS = _Answers()


def answer_host(message: bytes) -> bool:
    """Send ``message`` (whole lines) to the host between the server's messages, without
    waiting for it to be written; False when it is dropped (the host has read none of the
    proxy's last ``MAX_PENDING_ANSWERS`` bytes)."""
    return _ANSWERS.put(message)


def _close_stdout() -> None:
    """Close the host's stdout (it sees the end), keeping fd 1 taken (by /dev/null), after
    the proxy's own answers still pending (for ``_DRAIN_TIMEOUT`` at most)."""
    _ANSWERS.settle(_DRAIN_TIMEOUT)
    null = os.open(os.devnull, os.O_WRONLY)
    with _HOST_OUT:
        os.dup2(null, _STDOUT)
    os.close(null)


@contextmanager
def _forwarding(child: Child) -> Iterator[None]:
    """While inside, those signals go to the server's group (main thread only), but for
    one the host ignores (``nohup``): the server ignores it too, as it inherited."""

    def ending(number: int, _: object) -> None:
        child.forward(number)

    def passed(number: int, _: object) -> None:
        child.forward(number, grace=False)

    previous = {}
    for number in (*ENDING_SIGNALS, *PASSED_SIGNALS):
        if signal.getsignal(number) != signal.SIG_IGN:
            forward = ending if number in ENDING_SIGNALS else passed
            previous[number] = signal.signal(number, forward)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_proxy(
    argv: Sequence[str], rewriter: Rewriter, server: ServerCapabilities, grace: float
) -> int:
    """Run ``argv`` behind the relay until it exits; its exit status (128+N for signal N).
    Nothing it started is left running when this returns, or raises."""
    child = Child(argv)
    # What start-up made lives as long as the proxy: out of the collector's sight, so that
    # a collection while a message passes walks only what the relay itself allocated.
    gc.freeze()

    def from_host() -> None:
        pump(
            _STDIN,
            child.stdin,
            rewriter.from_host,
            limit=MAX_HOST_MESSAGE,
            long_messages=rewriter,
        )
        child.close_stdin()

    def from_server() -> None:
        pump(  # a longer message than the proxy ever reads goes on as it comes
            child.stdout,
            _STDOUT,
            server.observe,
            limit=INSPECT_LIMIT,
            long_messages=server,
            lock=_HOST_OUT,
        )
        _close_stdout()

    outbound = threading.Thread(target=from_server, name="server-to-host", daemon=True)
    try:
        with _forwarding(child):
            try:
                threading.Thread(target=from_host, name="host-to-server", daemon=True).start()
                outbound.start()
                returncode = child.wait_for_exit(grace)
            finally:  # a signal meanwhile is forwarded, not an unwind halfway through it
                child.clean_up_tree()
    finally:  # also when a signal unwinds before the forwarding is in place
        child.clean_up_tree()
        if outbound.is_alive():
            outbound.join(_DRAIN_TIMEOUT)
        if not outbound.is_alive():  # else the host stopped reading: leave its fds be
            child.close()
    return exit_status(returncode)
