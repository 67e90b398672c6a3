"""The server the proxy runs: its own session and process group, stdin and stdout piped,
stderr inherited; signals forwarded to its group; nothing of it left running at the end.

The proxy makes itself a child subreaper (Linux), so that a process the server left behind,
even one that double-forked and left the session, is re-parented to the proxy, where the
project's process-tree helpers find and kill it.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from collections.abc import Sequence

from launcher_probe.errors import InputRejected
from launcher_probe.host.probe.tree_kill import kill_group, kill_tree, open_pidfd

#: How long the server has to exit after its stdin closed or a signal was forwarded.
DEFAULT_GRACE = 5.0
_PR_SET_CHILD_SUBREAPER = 36
#: Without a pidfd, how often the wait looks at the server.
_POLL = 0.05


def become_subreaper() -> bool:
    """Make this process the child subreaper of what it starts (Linux); False elsewhere."""
    if sys.platform != "linux":
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def exit_status(returncode: int) -> int:
    """The status to exit with: the server's own, 128+N when signal N ended it."""
    return 128 - returncode if returncode < 0 else returncode


class Child:
    """The started server; ``wake`` interrupts ``wait_for_exit`` (from a thread or a signal
    handler) to begin the grace period."""

    def __init__(self, argv: Sequence[str]) -> None:
        try:
            self.process = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
            )
        except OSError as error:
            raise InputRejected(f"cannot execute {argv[0]!r}: {error.strerror}") from error
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin.fileno()
        self.stdout = self.process.stdout.fileno()
        self._pidfd = open_pidfd(self.process.pid)
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)

    def forward(self, number: int, *, grace: bool = True) -> None:
        """Send signal ``number`` to the server's process group, and (``grace``) start the
        grace period."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, number)
        if grace:
            self.wake()

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_write, b"!")

    def close_stdin(self) -> None:
        """End the server's input (the host's ended), and start the grace period."""
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        self.wake()

    def wait_for_exit(self, grace: float) -> int:
        """Wait until the server exits; once woken, give it ``grace`` seconds, then kill its
        tree. Returns its (reaped) return code."""
        deadline: float | None = None
        watched = [self._wake_read] if self._pidfd is None else [self._wake_read, self._pidfd]
        while self.process.poll() is None:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                kill_tree(self.process.pid)
                break
            timeout = None if deadline is None else deadline - now
            if self._pidfd is None:
                timeout = _POLL if timeout is None else min(timeout, _POLL)
            ready = select.select(watched, [], [], timeout)[0]
            if self._wake_read in ready:
                os.read(self._wake_read, 64)
                if deadline is None:
                    deadline = time.monotonic() + grace
        return self.process.wait()

    def clean_up_tree(self) -> None:
        """Kill the server if it still runs, and what it left: its process group, and every
        process re-parented to this one (with what it started); reap them."""
        import psutil

        if self.process.poll() is None:  # unwinding: the server itself still runs
            kill_tree(self.process.pid)
            self.process.wait()
        kill_group(self.process.pid)
        with contextlib.suppress(psutil.Error):
            for orphan in psutil.Process().children():
                kill_tree(orphan.pid)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(orphan.pid, 0)

    def close(self) -> None:
        """Close the proxy's ends (after the relay threads are done with them)."""
        for fd in (self._wake_read, self._wake_write, *([self._pidfd] if self._pidfd else [])):
            os.close(fd)
        if self.process.stdout is not None:
            self.process.stdout.close()
