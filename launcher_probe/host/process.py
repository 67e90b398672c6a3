"""Run one child process bounded in time, output and process tree.

The child gets closed stdin, the given environment and its own session. Both
pipes are drained concurrently; at most ``limit`` bytes of each are kept and
the rest is read and discarded, so a flood cannot exhaust memory. When the
deadline passes, the whole tree is killed (the descendants psutil finds plus
the process group) and the child is reaped, even if a grandchild still holds
a pipe open. When the child exits while something else still holds a pipe,
the stragglers in its process group are killed and the pipes read to their end.
"""

from __future__ import annotations

import contextlib
import os
import select
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

#: Bytes kept per stream.
OUTPUT_LIMIT = 64 * 1024
_READ_SIZE = 64 * 1024
#: Without a pidfd, how often the loop checks whether the child exited.
_POLL_INTERVAL = 0.05
#: The longest single wait: select() overflows on timeouts of weeks (epoll counts in
#: int milliseconds), so a far deadline is reached in steps.
_MAX_WAIT = 3600.0
#: How long, and (without a pidfd) how often, to check that SIGKILLed descendants
#: (not our children) died.
_DEATH_TIMEOUT = 2.0
_DEATH_POLL = 0.002


@dataclass(frozen=True, slots=True)
class Captured:
    """The first ``OUTPUT_LIMIT`` bytes of one stream and how many bytes it carried."""

    data: bytes
    total: int


@dataclass(frozen=True, slots=True)
class Finished:
    """How a bounded run ended. ``exit_status`` is None when it was killed at the deadline;
    negative (``-N``) when the child died of signal N."""

    exit_status: int | None
    stdout: Captured
    stderr: Captured

    @property
    def timed_out(self) -> bool:
        return self.exit_status is None


class _Sink:
    """Keeps the first ``limit`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - self.kept
        if room > 0:
            self.chunks.append(chunk[:room])
            self.kept += min(room, len(chunk))

    def captured(self) -> Captured:
        return Captured(b"".join(self.chunks), self.total)


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid``, every descendant psutil finds, and its process group; wait (briefly)
    until the descendants are dead. The caller reaps ``pid`` itself."""
    import psutil  # only a kill needs it; keeps the warm resolve path free of psutil

    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    _kill_group(pid)
    for process in descendants:
        with contextlib.suppress(psutil.Error):
            process.kill()
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + _DEATH_TIMEOUT
    for process in descendants:
        _await_death(process, deadline)


def _await_death(process: psutil.Process, deadline: float) -> None:
    """Wait until a killed descendant is dead (a zombie left to init counts): on its pidfd
    where there is one, else by checking its status now and then."""
    import psutil

    pidfd = _open_pidfd(process.pid) if process.is_running() else None
    if pidfd is not None:
        try:
            select.select([pidfd], [], [], max(deadline - time.monotonic(), 0.0))
        finally:
            os.close(pidfd)
        return
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(_DEATH_POLL)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _kill_pipe_writers(fds: Iterable[int]) -> None:
    """SIGKILL every other process holding the write end of one of these pipes (Linux
    ``/proc``; elsewhere nothing): finds a descendant that left the tree, its own session
    and its parent gone, still holding stdout or stderr."""
    if sys.platform != "linux":
        return
    held = [fd for fd in fds if not _all_writers_closed(fd)]
    if not held:
        return
    pipes = {f"pipe:[{os.fstat(fd).st_ino}]" for fd in held}
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if name.isdigit() and int(name) != os.getpid() and _holds_write_end(name, pipes):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(name), signal.SIGKILL)


def _all_writers_closed(fd: int) -> bool:
    """Whether no process holds the write end of the pipe read through ``fd`` (POLLHUP)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return any(events & select.POLLHUP for _, events in poller.poll(0))


def _holds_write_end(pid: str, pipes: set[str]) -> bool:
    """Whether process ``pid`` has one of ``pipes`` open for writing."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.readlink(f"/proc/{pid}/fd/{fd}") not in pipes:
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                flags = next(line for line in info if line.startswith("flags:"))
            if int(flags.split()[1], 8) & os.O_ACCMODE != os.O_RDONLY:
                return True
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    return False


def _has_exited(pid: int) -> bool:
    """Whether the child exited, without reaping it (so its pid and group stay ours)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _open_pidfd(pid: int) -> int | None:
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


def run_bounded(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    deadline: float,
    limit: int = OUTPUT_LIMIT,
) -> Finished:
    """Run ``argv`` until it exits or ``time.monotonic()`` reaches ``deadline``.

    Raises OSError when the child cannot be spawned.
    """
    child = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )
    assert child.stdout is not None and child.stderr is not None
    sinks = {child.stdout.fileno(): _Sink(limit), child.stderr.fileno(): _Sink(limit)}
    pidfd = _open_pidfd(child.pid)
    open_pipes = set(sinks)
    try:
        with selectors.DefaultSelector() as selector:
            for fd in sinks:
                os.set_blocking(fd, False)
                selector.register(fd, selectors.EVENT_READ)
            if pidfd is not None:
                selector.register(pidfd, selectors.EVENT_READ)
            watching_exit = True
            while open_pipes and time.monotonic() < deadline:
                remaining = deadline - time.monotonic()
                wait = min(remaining, _MAX_WAIT if pidfd is not None else _POLL_INTERVAL)
                for key, _ in selector.select(wait):
                    if key.fd in open_pipes and not _drain(key.fd, sinks[key.fd], deadline):
                        selector.unregister(key.fd)
                        open_pipes.discard(key.fd)
                if open_pipes and watching_exit and _has_exited(child.pid):
                    # The child is gone but something else may hold a pipe: kill those
                    # stragglers, in its group or not, and read on until the ends close.
                    _kill_group(child.pid)
                    _kill_pipe_writers(open_pipes)
                    watching_exit = False
                    if pidfd is not None:
                        selector.unregister(pidfd)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(max(deadline - time.monotonic(), 0))
    finally:
        killed = child.returncode is None
        if killed:
            kill_tree(child.pid)
            child.wait()
        if open_pipes:
            _kill_pipe_writers(open_pipes)
        if pidfd is not None:
            os.close(pidfd)
        child.stdout.close()
        child.stderr.close()
    timed_out = killed or bool(open_pipes)
    stdout, stderr = (sink.captured() for sink in sinks.values())
    return Finished(None if timed_out else child.returncode, stdout, stderr)


def _drain(fd: int, sink: _Sink, deadline: float) -> bool:
    """Read what is available from ``fd`` into ``sink`` (until the deadline); False at EOF."""
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        sink.feed(chunk)
    return True
