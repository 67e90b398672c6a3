"""Run one child process bounded in time, output and process tree.

The child gets stdin on /dev/null, the given environment and its own session. Both pipes
are drained concurrently; at most ``limit`` bytes of each are kept and the rest is read and
discarded, so a flood cannot exhaust memory.

On Linux the child runs below the probe's supervisor (``supervisor_client.py``),
a child subreaper: when the child exits, everything it started is killed and reaped before
its exit status is known, even a daemon that double-forked, left the session and closed
its stdio; at the deadline the same happens to the whole tree. Elsewhere, or where the
supervisor cannot run, the child is a direct child and its tree is killed as far as it can
be found (``launcher_probe.host.probe.tree_kill``). Either way a process still holding a pipe
after the child exited is killed (Linux), and the pipes are read to their end.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence

from launcher_probe.host.probe.supervisor_client import SupervisedStep, Supervisor
from launcher_probe.host.probe.tree_kill import kill_group, kill_pipe_writers, kill_tree, open_pidfd
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # a structural type for mypy only: nothing checks it at run time

#: Bytes kept per stream.
OUTPUT_LIMIT = 64 * 1024
_READ_SIZE = 64 * 1024
#: Without a pidfd, how often the loop checks whether the child exited.
_POLL_INTERVAL = 0.05
#: The longest single wait: select() overflows on timeouts of weeks (epoll counts in
#: int milliseconds), so a far deadline is reached in steps.
_MAX_WAIT = 3600.0
#: Past the deadline, how long what the pipes hold already is read still.
_LAST_LOOK = 0.05


class Captured(Value):
    """The first ``OUTPUT_LIMIT`` bytes of one stream and how many bytes it carried."""

    __slots__ = ("data", "total")
    data: bytes
    total: int

    def __init__(self, data: bytes, total: int) -> None:
        super().__init__(data=data, total=total)


class Finished(Value):
    """How a bounded run ended. ``exit_status`` is None when it was killed at the deadline;
    negative (``-N``) when the child died of signal N."""

    __slots__ = ("exit_status", "stdout", "stderr")
    exit_status: int | None
    stdout: Captured
    stderr: Captured

    def __init__(self, exit_status: int | None, stdout: Captured, stderr: Captured) -> None:
        super().__init__(exit_status=exit_status, stdout=stdout, stderr=stderr)

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


class Step(Protocol):
    """A started child as ``run_bounded`` (or doctor's server check) drives it."""

    pid: int
    #: The read ends of its stdout and stderr.
    pipes: tuple[int, int]
    #: The write end of its stdin, when it was started with a stdin pipe.
    stdin: int | None
    #: Readable when it may have exited (None: poll ``exited``).
    exit_fd: int | None

    def exited(self) -> bool: ...
    def after_exit(self, open_pipes: Iterable[int]) -> None: ...
    def wait(self, deadline: float) -> None: ...
    def terminate(self) -> None: ...
    def stop(self) -> int | None: ...
    def close_stdin(self) -> None: ...
    def close(self) -> None: ...


class _DirectStep:
    """A direct child in its own session: what is left without a supervisor."""

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str, *, stdin: bool = False
    ) -> None:
        self.child = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
        assert self.child.stdout is not None and self.child.stderr is not None
        self.pid = self.child.pid
        self.pipes = (self.child.stdout.fileno(), self.child.stderr.fileno())
        self.stdin = None if self.child.stdin is None else self.child.stdin.fileno()
        self.exit_fd = open_pidfd(self.child.pid)

    def exited(self) -> bool:
        """Whether the child exited, without reaping it (so its pid and group stay ours)."""
        return os.waitid(os.P_PID, self.child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None

    def after_exit(self, open_pipes: Iterable[int]) -> None:
        """Kill the stragglers that may hold a pipe, in its group or not."""
        kill_group(self.child.pid)
        kill_pipe_writers(open_pipes)

    def wait(self, deadline: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.child.wait(max(deadline - time.monotonic(), 0))

    def terminate(self) -> None:
        """SIGTERM its process group while it is unreaped (its id cannot be reused)."""
        if self.child.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.child.pid, signal.SIGTERM)

    def stop(self) -> int | None:
        if self.child.returncode is not None:
            return self.child.returncode
        kill_tree(self.child.pid)
        self.child.wait()
        return None

    def close_stdin(self) -> None:
        if self.child.stdin is not None:
            with contextlib.suppress(OSError):
                self.child.stdin.close()
            self.stdin = None

    def close(self) -> None:
        self.close_stdin()
        if self.exit_fd is not None:
            os.close(self.exit_fd)
        for stream in (self.child.stdout, self.child.stderr):
            assert stream is not None
            stream.close()


def run_bounded(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    deadline: float,
    limit: int = OUTPUT_LIMIT,
    supervisor: Supervisor | None = None,
) -> Finished:
    """Run ``argv`` until it exits or ``time.monotonic()`` reaches ``deadline``, below
    ``supervisor`` (without one, below a supervisor of its own).

    Raises OSError when the child cannot be spawned; NotReady when the supervisor is not
    ready by ``deadline`` (the child never ran).
    """
    with contextlib.nullcontext(supervisor) if supervisor else Supervisor() as chosen:
        supervised = chosen.start(deadline)
        return _drive(start_step(chosen, supervised, argv, env, cwd), deadline, limit)


def start_step(
    supervisor: Supervisor,
    supervised: bool,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    *,
    stdin: bool = False,
) -> Step:
    """Start ``argv`` below ``supervisor`` when it is ``supervised`` (started), else as a
    direct child in its own session; with ``stdin``, on a pipe the caller writes."""
    if supervised:
        return SupervisedStep(supervisor, argv, env, cwd, stdin=stdin)
    return _DirectStep(argv, env, cwd, stdin=stdin)


def _drive(step: Step, deadline: float, limit: int) -> Finished:
    """Drain the step's pipes until both end or the deadline passes; leave nothing running."""
    sinks = {fd: _Sink(limit) for fd in step.pipes}
    open_pipes = set(sinks)
    try:
        with selectors.DefaultSelector() as selector:
            for fd in sinks:
                os.set_blocking(fd, False)
                selector.register(fd, selectors.EVENT_READ)
            if step.exit_fd is not None:
                selector.register(step.exit_fd, selectors.EVENT_READ)
            watching_exit = True
            while open_pipes and time.monotonic() < deadline:
                remaining = deadline - time.monotonic()
                wait = min(remaining, _MAX_WAIT if step.exit_fd is not None else _POLL_INTERVAL)
                for key, _ in selector.select(wait):
                    if key.fd in open_pipes and not _drain(key.fd, sinks[key.fd], deadline):
                        selector.unregister(key.fd)
                        open_pipes.discard(key.fd)
                if open_pipes and watching_exit and step.exited():
                    # Something else may still hold a pipe: kill it and read on to the end.
                    step.after_exit(open_pipes)
                    watching_exit = False
                    if step.exit_fd is not None:
                        selector.unregister(step.exit_fd)
            if open_pipes:
                # Past the deadline: what is there already is read still (a step that ended
                # while this process was not running, stopped or descheduled, has ended in
                # time), for a moment only (one that writes on is cut short).
                last_look = time.monotonic() + _LAST_LOOK
                for key, _ in selector.select(0):
                    if key.fd in open_pipes and not _drain(key.fd, sinks[key.fd], last_look):
                        open_pipes.discard(key.fd)
        step.wait(deadline)
    finally:
        status = step.stop()
        if open_pipes:
            kill_pipe_writers(open_pipes)
        step.close()
    stdout, stderr = (sink.captured() for sink in sinks.values())
    return Finished(None if open_pipes else status, stdout, stderr)


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
