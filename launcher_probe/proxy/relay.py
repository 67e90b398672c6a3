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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress

from launcher_probe.fd_io import write_all
from launcher_probe.proxy.capabilities import ServerCapabilities
from launcher_probe.proxy.child import Child, exit_status
from launcher_probe.proxy.framing import pump
from launcher_probe.proxy.rewrite import Rewriter

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


def answer_host(message: bytes) -> None:
    """Write ``message`` (whole lines) to the host between the server's messages; dropped
    when the host has stopped reading."""
    with _HOST_OUT, suppress(OSError):
        write_all(_STDOUT, message)


def _close_stdout() -> None:
    """Close the host's stdout (it sees the end), keeping fd 1 taken (by /dev/null), between
    two of the proxy's own answers."""
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
        pump(_STDIN, child.stdin, rewriter.from_host, on_sink_error=lambda: None)
        child.close_stdin()

    def from_server() -> None:
        pump(child.stdout, _STDOUT, server.observe, on_sink_error=lambda: None, lock=_HOST_OUT)
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
