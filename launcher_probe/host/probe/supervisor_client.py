"""The parent's side of the probe's supervisor (``launcher_probe.host.probe.supervisor_process``).

A ``Supervisor`` is started on first use (or launched earlier, so that its start-up runs
on another core while the caller works: ``launch``), serves the steps of one probe one at
a time, and is ended when its context is left: closing its socket makes it kill and reap everything
still below it, and leaving waits for that. Where it cannot run (not Linux, no interpreter
to start, no pidfd or ``PR_SET_CHILD_SUBREAPER``) ``start`` returns False and the caller
runs its steps as direct children instead. Nothing here changes the calling process: it
is not made a subreaper, and no signal disposition is touched.

The process is started on a thread of its own, where no signal handler runs: a handler that
raises (the CLI's unwind on SIGTERM, SIGINT or SIGHUP) can land at any moment of the launch
without losing the process, and leaving the context waits for that thread first.
"""

from __future__ import annotations

import _socket
import contextlib
import errno
import os
import select
import signal
import subprocess
import sys
import time
from _thread import allocate_lock, start_new_thread  # threading's, without it
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType

from launcher_probe.host.probe.tree_kill import await_exit, kill_pipe_writers, kill_tree
from launcher_probe.interpreter_name import is_python

#: How long the supervisor may take to start, to answer a spawn, or to kill and reap a
#: tree, before it is presumed wedged and killed with what psutil can still find.
HANG_GUARD = 10.0
#: How long the launching thread waits for its go-ahead (``launch``) before it gives up,
#: starting nothing: a signal that unwound the launch before it was on record keeps the
#: go-ahead from coming (the wait is two statements long otherwise; a process stopped
#: that long, SIGSTOP in between, loses its supervisor: the probe runs as direct children).
GO_AHEAD_WAIT = HANG_GUARD
#: How the supervisor runs (``python ARGV... SOCKET_FD PARENT_PID``): no site-packages, no
#: environment, its module imported from this directory by name, so from its cached
#: bytecode (a script is compiled on every run), and no package ``__init__`` of this one.
SUPERVISOR_ARGV = (
    "-S",
    "-I",
    "-c",
    f"import sys; sys.path.append({os.path.dirname(os.path.abspath(__file__))!r}); "
    "import supervisor_process; supervisor_process.main()",
)


class _Launch:
    """One launch under way: the thread's go-ahead, its end, and whether the end came
    (set before ``ended`` is released, so that nobody waits for an end already taken)."""

    __slots__ = ("ended", "go_ahead", "over")

    def __init__(self) -> None:
        self.go_ahead, self.ended = allocate_lock(), allocate_lock()
        self.go_ahead.acquire()
        self.ended.acquire()
        self.over = False


#: What a caller says when the supervisor was not ready by its deadline (``NotReady``).
SUPERVISOR_LATE = "the process supervisor did not start before the deadline"


class NotReady(Exception):
    """The supervisor did not start before the step's deadline."""


class Supervisor:
    """One probe's supervisor process (a context manager); see the module docstring."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: _socket.socket | None = None
        #: The launch under way (see ``launch``).
        self._launching: _Launch | None = None
        self._ready = False
        # Only an interpreter by name: an embedding host's sys.executable may be the host.
        self._usable = sys.platform == "linux" and is_python(os.path.basename(sys.executable))

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def launch(self) -> None:
        """Start the supervisor process unless it runs already, without waiting for it to
        be ready (``start`` waits). It runs nothing until asked; leaving the context (or
        ``close``) ends it, ready or not."""
        if not self._usable or self._launching is not None or self._channel is not None:
            return
        # The thread waits for the go-ahead until this launch is on record, so a signal
        # that unwinds from anywhere in here leaves nothing started (a thread that gives
        # up after GO_AHEAD_WAIT, at most) or a launch that ``_launched`` waits for.
        launching = _Launch()
        try:
            start_new_thread(self._launch, (launching,))
        except RuntimeError:  # no thread to be had: ``start`` finds the supervisor unusable
            return
        self._launching = launching
        launching.go_ahead.release()
        self._launched()

    def _launched(self) -> _socket.socket | None:
        """Wait for the launch under way, if any; the running supervisor's socket."""
        launching = self._launching
        if launching is not None:
            if launching.go_ahead.locked():  # not given (a signal came first), or taken by
                launching.go_ahead.release()  # the thread, which holds it for no purpose
            if not launching.over:  # a wait a signal cut short waits again; one that took
                launching.ended.acquire()  # the end does not
            self._launching = None
        return self._channel

    def start(self, deadline: float) -> bool:
        """Start the supervisor (see ``launch``) and wait until it is ready; False where
        it cannot run.

        Raises NotReady when it is not ready by ``deadline``."""
        self.launch()
        if self._launched() is None:  # it could not start: a direct spawn says why
            self._usable = False
            return False
        if self._ready:
            return True
        reply = self.next_event(deadline)
        if reply is None:
            self._abandon()
            raise NotReady
        if reply != b"ready":  # no pidfd, no subreaper, or no interpreter after all
            self.close()
            self._usable = False
        self._ready = self._usable
        return self._usable

    def _launch(self, launching: _Launch) -> None:
        """The launching thread: once given the go-ahead, start the supervisor process;
        without it in ``GO_AHEAD_WAIT`` seconds, nothing (a signal unwound ``launch``
        before the launch was on record: nobody will wait for it)."""
        try:
            if launching.go_ahead.acquire(timeout=GO_AHEAD_WAIT):
                self._start_process()
        finally:
            launching.over = True
            launching.ended.release()

    def _start_process(self) -> None:
        """Start the supervisor process; keep it and the parent's end of its socket, or
        neither (OSError: gone, not executable, or short of resources)."""
        try:
            # _socket, not socket: its enums and array cost a cold probe a millisecond or two.
            ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
            where = (str(theirs.fileno()), str(os.getpid()))
            try:
                self._process = subprocess.Popen(
                    [sys.executable, *SUPERVISOR_ARGV, *where],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    pass_fds=(theirs.fileno(),),
                    env={},
                    cwd="/",
                    start_new_session=True,
                )
            except BaseException:
                ours.close()
                raise
            finally:
                theirs.close()
            self._channel = ours
        except OSError:
            pass  # no channel: ``start`` finds the supervisor unusable

    def fileno(self) -> int:
        """The socket: readable when the supervisor reports (or dies)."""
        assert self._channel is not None
        return self._channel.fileno()

    def spawn(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        stdio: Sequence[int],
        *,
        program: str | None = None,
    ) -> int:
        """Start ``program`` (by default ``argv[0]``; a path, never looked up on PATH) with
        ``argv`` below the supervisor, ``stdio`` as its stdout and stderr (or stdin, stdout
        and stderr); return its pid. Raises OSError as spawning it directly would."""
        assert self._channel is not None
        words = [os.fsencode(word) for word in argv]
        variables = [os.fsencode(key) + b"=" + os.fsencode(value) for key, value in env.items()]
        start = [os.fsencode(cwd), os.fsencode(argv[0] if program is None else program)]
        if any(b"\0" in word for word in [*start, *words, *variables]):
            raise ValueError("embedded null byte")
        if any(b"=" in os.fsencode(key) or not key for key in env):
            raise ValueError("illegal environment variable name")
        message = b"\0".join([b"spawn", *start, b"%d" % len(words), *words, *variables])
        try:
            fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in stdio)  # C ints
            self._channel.sendmsg([message], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        except (BrokenPipeError, ConnectionResetError):
            raise self.lost() from None
        reply = self.next_event(time.monotonic() + HANG_GUARD) or b""
        if reply.startswith(b"started "):
            return int(reply.split()[1])
        if reply.startswith(b"error "):
            number = int(reply.split()[1])
            raise OSError(number, os.strerror(number), argv[0])
        raise self.lost()

    def next_event(self, deadline: float) -> bytes | None:
        """The next report (b"" once the supervisor is gone), or None if none came by
        ``deadline``."""
        assert self._channel is not None
        remaining = max(deadline - time.monotonic(), 0.0)
        poller = select.poll()  # not select(): any fd number (a helper holds many)
        poller.register(self._channel, select.POLLIN)
        if not poller.poll(min(remaining, HANG_GUARD) * 1000):
            return None
        try:
            return self._channel.recv(64)
        except ConnectionResetError:  # it died with a request of ours unread
            return b""

    def signal(self, number: int) -> None:
        """Send signal ``number`` to the running step's process group (while it is
        unreaped, so that the group id is still its own); no answer."""
        if self._channel is not None:
            with contextlib.suppress(OSError):
                self._channel.send(b"signal %d" % number)

    def terminate(self) -> None:
        """SIGTERM the running step's process group (see ``signal``)."""
        self.signal(signal.SIGTERM)

    def kill(self) -> int | None:
        """Kill the running step and all it left; return once all is reaped: the step's own
        exit status when its report crossed the request (it exited first), else None."""
        if self._channel is None:
            return None  # already abandoned: what could be found was killed then
        give_up = time.monotonic() + HANG_GUARD
        crossed = None
        with contextlib.suppress(OSError):
            self._channel.send(b"kill")
            while (reply := self.next_event(give_up)) not in (b"killed", b"", None):
                if reply.startswith(b"exit "):
                    crossed = int(reply.split()[1])
            if reply == b"killed":
                return crossed
        self._abandon()
        return crossed

    def lost(self) -> OSError:
        """Kill a supervisor that broke off and what psutil still finds below it; the
        error to report (resources ran short: the OOM killer, most likely)."""
        self._abandon()
        return OSError(errno.EAGAIN, "the probe's supervisor process died")

    def end(self) -> None:
        """Close its socket, without waiting: it kills and reaps whatever is left below it,
        then exits (``close`` waits for that)."""
        if self._channel is not None:
            self._channel.close()
            self._channel, self._ready = None, False

    def close(self) -> None:
        """End the supervisor and wait until it has exited (a launch under way first)."""
        self._launched()
        self.end()
        if self._process is None or self._process.returncode is not None:
            return
        give_up = time.monotonic() + HANG_GUARD
        try:
            await_exit(self._process.pid, give_up)  # unreaped: its pid is still its own
            self._process.wait(max(give_up - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            self._abandon()

    def _abandon(self) -> None:
        """Kill the supervisor and what psutil finds below it (every orphan is below it)."""
        assert self._process is not None
        if self._channel is not None:
            self._channel.close()
            self._channel, self._ready = None, False
        kill_tree(self._process.pid)
        self._process.wait()
        self._usable = False


class SupervisedStep:
    """One step run below a ``Supervisor``; the step protocol of ``bounded_run.run_bounded``."""

    def __init__(
        self,
        supervisor: Supervisor,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        *,
        stdin: bool = False,
    ) -> None:
        self.supervisor = supervisor
        fds: list[int] = []
        try:
            fds += os.pipe()
            fds += os.pipe()
            if stdin:
                fds += os.pipe()
            given = (fds[4], fds[1], fds[3]) if stdin else (fds[1], fds[3])
            self.pid = supervisor.spawn(argv, env, cwd, given)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        for fd in given:
            os.close(fd)
        self.pipes = (fds[0], fds[2])
        #: The write end of its stdin pipe (with ``stdin``), the caller's to close.
        self.stdin = fds[5] if stdin else None
        self.exit_fd: int | None = supervisor.fileno()
        self.status: int | None = None
        self.ended = False

    def exited(self) -> bool:
        """Whether the step exited; then everything it started is already dead and reaped."""
        return self._await_exit(time.monotonic())

    def after_exit(self, open_pipes: Iterable[int]) -> None:
        """Nothing below the supervisor is left: only a process outside it that was handed a
        pipe can still hold one."""
        kill_pipe_writers(open_pipes)

    def wait(self, deadline: float) -> None:
        """Wait until the step exited or ``deadline`` passed."""
        while not self._await_exit(deadline) and time.monotonic() < deadline:
            pass

    def _await_exit(self, deadline: float) -> bool:
        if not self.ended:
            reply = self.supervisor.next_event(deadline)
            if reply == b"":
                raise self.supervisor.lost()
            if reply is not None and reply.startswith(b"exit "):
                self.status, self.ended = int(reply.split()[1]), True
        return self.ended

    def terminate(self) -> None:
        """SIGTERM its process group unless it has exited."""
        if not self.ended:
            self.supervisor.terminate()

    def stop(self) -> int | None:
        """The exit status, or None after killing the step and all it started."""
        if not self.ended:
            self.supervisor.kill()
        return self.status

    def close_stdin(self) -> None:
        if self.stdin is not None:
            os.close(self.stdin)
            self.stdin = None

    def close(self) -> None:
        self.close_stdin()
        for fd in self.pipes:
            os.close(fd)
