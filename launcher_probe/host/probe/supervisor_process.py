"""The probe's supervisor process (Linux): the child subreaper every probe step runs under.

``supervisor_client.py`` starts it once per probe as a top-level module of this directory
(``python -S -I -c "...; import supervisor_process; supervisor_process.main()" SOCKET_FD
PARENT_PID``: its cached bytecode, no package ``__init__`` imported). It imports only C
modules of the standard library (``posix``, ``_ctypes``, ``_signal``, ``_socket``,
``select``: ``os``, ``ctypes``, ``signal`` and ``socket`` would cost several milliseconds
more on every probe, and a script is compiled anew on every run), so it costs about one
bare interpreter start-up.

- It makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): whatever a step starts
  stays below it. A daemon that double-forks, leaves the session and closes its stdio is
  re-parented to the supervisor, not to init, so the whole tree can be found and killed.
- It is two processes, both subreapers: a keeper (the caller's child) and the server
  below it, so that one SIGKILL (the OOM killer, an admin) still leaves nothing running:
  the keeper kills what a killed server left to it, and the server kills all below it
  when the keeper dies.
- When a step exits, everything it left behind is killed and reaped before its exit status
  is reported: nothing a step starts outlives it.
- When its parent dies (watched on a pidfd, so it does not depend on which thread started
  it, unlike ``PR_SET_PDEATHSIG``) or closes the socket, it kills everything below it,
  reaps it and exits. It ignores SIGTERM, SIGINT, SIGHUP and SIGQUIT (a step gets back
  at its default each one the caller did not ignore): sent to the caller's whole tree at
  once, they are the caller's to act on, and this process must outlive the caller to end
  what it leaves.

The protocol: one message per SOCK_SEQPACKET packet.

- parent to supervisor: ``spawn`` then NUL-separated cwd, program, argv count, argv and
  environment, with the step's stdout and stderr (or stdin, stdout and stderr) as
  SCM_RIGHTS; ``signal N`` (signal N to the running step's process group, no answer);
  ``kill``; the end of the stream.
- supervisor to parent: ``ready`` (or ``unsupported ERRNO``) first; ``started PID`` or
  ``error ERRNO`` after a spawn; ``exit STATUS`` (as ``os.waitstatus_to_exitcode``) once the
  step exited and all it left is reaped; ``killed`` after a kill, once all is reaped.
"""

import _ctypes
import _signal  # type: ignore[import-not-found]  # (typeshed has no stub for it)
import _socket
import posix  # os without its Python layer (os imports _collections_abc, posixpath)
import select
import sys

# typing.TYPE_CHECKING without importing typing; no __future__ import either (one more
# module to load): the one annotation naming NoReturn is quoted.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

_PR_SET_CHILD_SUBREAPER = 36
#: Room for one spawn message (argv and environment); a larger one is refused with EMSGSIZE.
MESSAGE_LIMIT = 1 << 20
_FD_SPACE = _socket.CMSG_SPACE(3 * 4)
#: Ignored here: a signal sent to every process of the caller's tree at once (a host that
#: SIGTERMs each descendant) is the caller's to act on, and it must find this process
#: alive to end what runs below it; it ends when its caller does.
_IGNORED_SIGNALS = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGQUIT)
#: What the interpreter ignores at start-up and a step must get back at their defaults
#: (``exec_signals.INTERPRETER_IGNORES``, which this module may not import).
_INTERPRETER_IGNORES = (_signal.SIGPIPE, _signal.SIGXFSZ)


def main() -> None:
    """``SOCKET_FD PARENT_PID``: serve one probe's steps, then leave nothing behind."""
    # A step gets back at their defaults those this process ignores, but not one the
    # caller ignored already (``nohup``): that it inherits, as from a plain exec.
    defaults = list(_INTERPRETER_IGNORES)
    for number in _IGNORED_SIGNALS:
        if _signal.signal(number, _signal.SIG_IGN) != _signal.SIG_IGN:
            defaults.append(number)
    channel = _socket.socket(fileno=int(sys.argv[1]))
    posix.set_inheritable(channel.fileno(), False)
    try:
        parent = posix.pidfd_open(int(sys.argv[2]))
        if posix.getppid() != int(sys.argv[2]):
            return  # the parent died before its pidfd was opened
        _become_subreaper()
        keeper = _split()
        if keeper is None:
            channel.close()  # the caller sees the server's death as the end of the socket
            _keep()
        _become_subreaper()
    except OSError as error:
        channel.send(b"unsupported %d" % (error.errno or 0))
        return
    try:
        channel.send(b"ready")
        _serve(channel, parent, keeper, tuple(defaults))
    finally:
        _kill_all()
    posix._exit(0)  # nothing to flush or finalize: the parent waits for this exit


def _become_subreaper() -> None:
    """prctl(2) from this process's own symbols (libc); int arguments as C ints."""
    prctl = _ctypes.dlsym(_ctypes.dlopen(None), "prctl")  # type: ignore[arg-type]
    if _ctypes.call_function(prctl, (_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) != 0:
        raise OSError(0, "PR_SET_CHILD_SUBREAPER")


def _split() -> int | None:
    """Fork into a keeper (this process, the caller's child) and the server below it; in
    the server, the keeper's pidfd; None in the keeper.

    Two subreapers, so that one SIGKILL (the OOM killer, an admin) leaves nothing running:
    a killed server's orphans are re-parented to the keeper, which kills them; a killed
    keeper is seen by the server, which kills all below it."""
    keeper = posix.getpid()
    if posix.fork() != 0:
        return None
    watch = posix.pidfd_open(keeper)
    if posix.getppid() != keeper:
        posix._exit(0)  # the keeper died already: nothing was started
    return watch


def _keep() -> "NoReturn":
    """The keeper: wait for the server to end, kill and reap whatever was left, exit."""
    try:
        posix.wait()
    finally:
        _kill_all()
        posix._exit(0)


def _serve(channel: _socket.socket, parent: int, keeper: int, defaults: tuple[int, ...]) -> None:
    """Answer requests until the socket closes or the parent or the keeper dies."""
    step: tuple[int, int] | None = None  # its pid and pidfd
    while True:
        poller = select.poll()  # not select(): it inherits fds of any number from a helper
        watched = [channel.fileno(), parent, keeper] + ([] if step is None else [step[1]])
        for fd in watched:
            poller.register(fd, select.POLLIN)
        ready = [fd for fd, _ in poller.poll()]
        if parent in ready or keeper in ready:
            return
        if step is not None and step[1] in ready:
            _, status = posix.waitpid(step[0], 0)
            _kill_all()
            posix.close(step[1])
            step = None
            channel.send(b"exit %d" % posix.waitstatus_to_exitcode(status))
        if channel.fileno() not in ready:
            continue
        message, ancillary, _, _ = channel.recvmsg(
            MESSAGE_LIMIT, _FD_SPACE, _socket.MSG_CMSG_CLOEXEC
        )
        received = [fd for level, kind, data in ancillary for fd in _fds(level, kind, data)]
        try:
            if not message:
                return
            if message == b"kill":
                _kill_all()
                if step is not None:
                    posix.close(step[1])
                step = None
                channel.send(b"killed")
            elif message.startswith(b"signal "):
                if step is not None:  # not yet reaped: its group id is still its own
                    _signal_group(step[0], int(message[7:]))
            elif message.startswith(b"spawn\0") and len(received) in (2, 3) and step is None:
                step = _spawn(channel, message, received, defaults)
        finally:
            for fd in received:
                posix.close(fd)


def _fds(level: int, kind: int, data: bytes) -> list[int]:
    """The descriptors in one SCM_RIGHTS control message."""
    if level != _socket.SOL_SOCKET or kind != _socket.SCM_RIGHTS:
        return []
    usable = len(data) - len(data) % 4
    return [int.from_bytes(data[i : i + 4], sys.byteorder) for i in range(0, usable, 4)]


def _signal_group(pid: int, number: int) -> None:
    try:  # noqa: SIM105 (contextlib would cost another import)
        posix.killpg(pid, number)
    except OSError:
        pass


def _spawn(
    channel: _socket.socket, message: bytes, stdio: list[int], defaults: tuple[int, ...]
) -> tuple[int, int] | None:
    """Start one step in its own session with ``stdio`` as its stdout and stderr (or stdin,
    stdout and stderr; else stdin is /dev/null, the supervisor's own); report ``started
    PID`` or ``error ERRNO``."""
    fields = message.split(b"\0")[1:]
    cwd, program, argc = fields[0], fields[1], int(fields[2])
    argv, env = fields[3 : 3 + argc], fields[3 + argc :]
    try:
        posix.chdir(cwd)
        pid = posix.posix_spawn(
            program,
            argv,
            {key: value for key, _, value in (item.partition(b"=") for item in env)},
            file_actions=[
                (posix.POSIX_SPAWN_DUP2, fd, number)
                for number, fd in enumerate(stdio, start=3 - len(stdio))
            ],
            setsid=True,
            setsigdef=defaults,
        )
    except OSError as error:
        channel.send(b"error %d" % (error.errno or 0))
        return None
    try:
        pidfd = posix.pidfd_open(pid)
    except OSError as error:
        _kill_all()
        channel.send(b"error %d" % (error.errno or 0))
        return None
    channel.send(b"started %d" % pid)
    return pid, pidfd


def _kill_all() -> None:
    """SIGKILL every process below this one and reap them all. As a subreaper it inherits
    every orphan below it, so once it has no child left nothing it started is alive. A
    process can fork only until its SIGKILL is pending, so the rescan after each reap finds
    whatever was forked meanwhile."""
    while True:
        try:
            if posix.waitpid(-1, posix.WNOHANG)[0]:
                continue  # reaped one that was already dead; look again
        except ChildProcessError:
            return
        for pid in _descendants():
            try:  # noqa: SIM105 (contextlib would cost another import)
                posix.kill(pid, _signal.SIGKILL)
            except OSError:
                pass
        try:
            posix.waitpid(-1, 0)
        except ChildProcessError:
            return


def _descendants() -> list[int]:
    """Every process below this one, from the parent pids in /proc."""
    children: dict[int, list[int]] = {}
    for name in posix.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as stat:
                    parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    pending = [posix.getpid()]
    while pending:
        below = children.get(pending.pop(), [])
        found += below
        pending += below
    return found
