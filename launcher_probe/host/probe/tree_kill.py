"""Killing a process tree without a supervisor: what is left where a subreaper cannot be had
(not Linux, or the supervisor cannot run), and the fallback when a supervisor is wedged.

``kill_tree`` kills what can still be found: the descendants psutil sees and the process
group. A descendant that double-forked and left the session is out of reach here unless it
holds one of the step's pipes (``kill_pipe_writers``, Linux ``/proc``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable

    import psutil

#: How long, and (without a pidfd) how often, to check that SIGKILLed descendants
#: (not our children) died.
_DEATH_TIMEOUT = 2.0
_DEATH_POLL = 0.002


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid``, every descendant psutil finds, and its process group; wait (briefly)
    until the descendants are dead. The caller reaps ``pid`` itself."""
    import psutil  # only a kill needs it; keeps the warm resolve path free of psutil

    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    kill_group(pid)
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

    if process.is_running() and await_exit(process.pid, deadline) is not None:
        return
    while time.monotonic() < deadline:
        try:
            if process.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(_DEATH_POLL)


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_pipe_writers(fds: Iterable[int]) -> None:
    """SIGKILL every other process holding the write end of one of these pipes (Linux
    ``/proc``; elsewhere nothing): finds a process that left the tree, its own session
    and its parent gone, or one that was handed the pipe, still holding stdout or stderr."""
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


def await_exit(pid: int, deadline: float) -> bool | None:
    """Wait on ``pid``'s pidfd until it exits (True) or ``deadline`` passes (False); None
    without a pidfd. Woken at the exit itself, unlike ``Popen.wait(timeout)``, which polls
    with sleeps doubling from 0.5 ms. ``pid`` must not be reused meanwhile: the caller's
    unreaped child, or a process it has just checked."""
    pidfd = open_pidfd(pid)
    if pidfd is None:
        return None
    try:
        poller = select.poll()  # not select(): any fd number
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(max(deadline - time.monotonic(), 0.0) * 1000))
    finally:
        os.close(pidfd)


def open_pidfd(pid: int) -> int | None:
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd
