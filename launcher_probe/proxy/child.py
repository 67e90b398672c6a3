"""The server the proxy runs: its own session and process group, stdin and stdout piped,
stderr inherited; signals forwarded to its group; nothing of it left running at the end,
even when the proxy itself is SIGKILLed.

On Linux the server runs below the probe's supervisor (``host/probe/supervisor_client.py``):
a child subreaper that watches the proxy on a pidfd, so whatever the server started, even
a daemon that double-forked and left the session, is killed and reaped when the server
ends, when the proxy ends it, or when the proxy dies of a signal no process can catch.
Where the supervisor cannot run (not Linux, no pidfd, no interpreter to start), the server
is the proxy's own child and the proxy makes itself the subreaper of what it starts; a
SIGKILL of the proxy then leaves the server running.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from launcher_probe.errors import InputRejected
from launcher_probe.host.probe.supervisor_client import HANG_GUARD, NotReady, Supervisor
from launcher_probe.host.probe.tree_kill import kill_group, kill_tree, open_pidfd
from launcher_probe.proxy.program import find_program

#: How long the server has to exit after its stdin closed or a signal was forwarded.
DEFAULT_GRACE = 5.0
_PR_SET_CHILD_SUBREAPER = 36
#: Without a pidfd, how often the wait looks at the server.
_POLL = 0.05
_STDERR = 2


def _become_subreaper() -> bool:
    """Make this process the child subreaper of what it starts (Linux); False elsewhere."""
    if sys.platform != "linux":
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def exit_status(returncode: int) -> int:
    """The status to exit with: the server's own, 128+N when signal N ended it."""
    return 128 - returncode if returncode < 0 else returncode


class _Supervised:
    """The server below the supervisor, which reports its exit and kills what is left."""

    def __init__(
        self, supervisor: Supervisor, argv: Sequence[str], cwd: str, stdio: Sequence[int]
    ) -> None:
        self._supervisor = supervisor
        supervisor.spawn(argv, dict(os.environ), cwd, stdio, program=find_program(argv[0]))
        self.returncode: int | None = None

    def signal(self, number: int) -> None:
        """``number`` to its group, unless it has been reaped."""
        self._supervisor.signal(number)

    def watched(self) -> list[int]:
        return [self._supervisor.fileno()]

    def poll(self) -> int | None:
        """Its return code once it exited (everything it left is reaped by then)."""
        if self.returncode is None:
            reply = self._supervisor.next_event(time.monotonic())
            if reply == b"":  # the supervisor died: it killed the server as it went
                self._supervisor.lost()
                self.returncode = -signal.SIGKILL
            elif reply is not None and reply.startswith(b"exit "):
                self.returncode = int(reply.split()[1])
        return self.returncode

    def kill(self) -> None:
        """Kill it and all it started; reaped on return (its own status when it exited
        first)."""
        if self.returncode is None:
            crossed = self._supervisor.kill()
            self.returncode = -signal.SIGKILL if crossed is None else crossed

    def clean_up(self) -> None:
        self.kill()
        self._supervisor.close()

    def close(self) -> None:
        self._supervisor.close()


class _Direct:
    """The server as the proxy's own child, in a session of its own."""

    def __init__(self, argv: Sequence[str], stdio: Sequence[int]) -> None:
        _become_subreaper()
        stdin, stdout, stderr = stdio
        self.process = subprocess.Popen(
            list(argv), stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True
        )
        self.pid = self.process.pid
        self._pidfd = open_pidfd(self.pid)

    def signal(self, number: int) -> None:
        if self.process.returncode is None:  # not reaped: its group id is still its own
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, number)

    def watched(self) -> list[int]:
        return [] if self._pidfd is None else [self._pidfd]

    def poll(self) -> int | None:
        return self.process.poll()

    def kill(self) -> None:
        if self.process.poll() is None:
            kill_tree(self.pid)
            self.process.wait()

    def clean_up(self) -> None:
        """Kill it if it still runs, and what it left: its process group, and every process
        re-parented to this one (with what it started); reap them."""
        import psutil

        self.kill()
        kill_group(self.pid)
        with contextlib.suppress(psutil.Error):
            for orphan in psutil.Process().children():
                kill_tree(orphan.pid)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(orphan.pid, 0)

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)


def _started(argv: Sequence[str], stdio: Sequence[int]) -> _Supervised | _Direct:
    """The server started below a supervisor, or directly where none can run (nor where
    this process's working directory has no name to give it: removed); OSError when it
    cannot be started."""
    supervisor = Supervisor()
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    try:
        if cwd is not None and supervisor.start(time.monotonic() + HANG_GUARD):
            return _Supervised(supervisor, argv, cwd, stdio)
    except NotReady:
        pass
    except BaseException:
        supervisor.close()
        raise
    supervisor.close()
    return _Direct(argv, stdio)


class Child:
    """The started server; ``wake`` interrupts ``wait_for_exit`` (from a thread or a signal
    handler) to begin the grace period."""

    def __init__(self, argv: Sequence[str]) -> None:
        stdin, self.stdin = os.pipe()
        self.stdout, stdout = os.pipe()
        try:  # its stderr is the proxy's (``cli.main`` made /dev/null one the host closed)
            self._server = _started(argv, (stdin, stdout, _STDERR))
        except BaseException as error:
            os.close(self.stdin)
            os.close(self.stdout)
            if isinstance(error, OSError):
                raise InputRejected(f"cannot execute {argv[0]!r}: {error.strerror}") from error
            raise
        finally:
            for fd in (stdin, stdout):
                os.close(fd)
        self._stdin_open = True
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)

    def forward(self, number: int, *, grace: bool = True) -> None:
        """Send signal ``number`` to the server's process group, and (``grace``) start the
        grace period."""
        self._server.signal(number)
        if grace:
            self.wake()

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_write, b"!")

    def close_stdin(self) -> None:
        """End the server's input (the host's ended), and start the grace period."""
        if self._stdin_open:
            self._stdin_open = False
            os.close(self.stdin)
        self.wake()

    def wait_for_exit(self, grace: float) -> int:
        """Wait until the server exits; once woken, give it ``grace`` seconds, then kill its
        tree. Returns its return code (it is reaped)."""
        deadline: float | None = None
        watched = [self._wake_read, *self._server.watched()]
        while (returncode := self._server.poll()) is None:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                self._server.kill()
                continue
            timeout = None if deadline is None else deadline - now
            if len(watched) == 1:  # nothing tells of its exit: look again now and then
                timeout = _POLL if timeout is None else min(timeout, _POLL)
            ready = select.select(watched, [], [], timeout)[0]
            if self._wake_read in ready:
                os.read(self._wake_read, 64)
                if deadline is None:
                    deadline = time.monotonic() + grace
        return returncode

    def clean_up_tree(self) -> None:
        """Kill the server if it still runs, and everything it started; reap them."""
        self._server.clean_up()

    def close(self) -> None:
        """Close the proxy's ends (after the relay threads are done with them)."""
        self._server.close()
        for fd in (self._wake_read, self._wake_write, self.stdout):
            os.close(fd)
