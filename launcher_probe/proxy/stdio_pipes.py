"""Pipes in place of the sockets a host gave as stdio, for a command ``wrap`` sandboxes.

Node and Electron hosts start a stdio server with socket pairs as its fds 0 to 2 (libuv's
pipes). With the network restricted, Codex's sandbox denies every socket call but reading
and writing, on a socket pair too, and a Node server asks ``getsockname`` of its stdio
before it reads a byte: it dies at start-up. So each of fds 0, 1 and 2 that is a connected
stream socket becomes a pipe, and a copier process outside the sandbox moves the bytes
between that socket and the pipe, unchanged and in order (fds 1 and 2 on one socket share
one pipe and one copier, so that their order holds too). Any other socket (listening,
datagram) is handed on as it is.

A copier holds those two fds alone; it ends when its source ends (passing the end on) or
its sink's reader is gone, waits when a non-blocking socket is full, and ignores the
signals a host sends a whole process group to stop it, so that it ends with the server,
after the last of its output. It is forked twice, so that it is nobody's child: init's,
or the nearest subreaper's, which reaps it when it ends.
"""

from __future__ import annotations

import os
import select
import signal
import stat
from collections.abc import Callable
from contextlib import suppress

from launcher_probe.fd_io import write_all

#: The host's stdin, stdout and stderr.
_STDIO = (0, 1, 2)
#: What a host sends a process group to stop it: the server's exit ends its copiers.
_OUTLIVED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
_READ_SIZE = 1 << 16
#: A sink whose reader is gone (a pipe's read end closed, a socket's peer gone).
_GONE = select.POLLERR | select.POLLHUP


def pipes_for_sockets() -> Callable[[], None]:
    """Make each of fds 0 to 2 that is a connected stream socket a pipe to or from a copier
    of that socket; what puts the sockets back (should the exec fail: the copiers then
    end, the other end of their pipe gone). OSError when a pipe or a copier cannot be
    made: then no fd is changed, and the copiers already started end. SIGCHLD must not be
    ignored (the kernel would reap the forked child before it is waited for)."""
    made: list[tuple[list[int], int]] = []
    try:
        for fds in _stream_sockets():
            made.append((fds, _copier(fds[0], inbound=fds[0] == 0)))
    except BaseException:
        for _, kept in made:
            os.close(kept)
        raise
    originals = {fd: os.dup(fd) for fds, _ in made for fd in fds}
    for fds, kept in made:
        for fd in fds:
            os.dup2(kept, fd)
        os.close(kept)

    def put_back() -> None:
        for fd, original in originals.items():
            os.dup2(original, fd)
            os.close(original)

    return put_back


def _stream_sockets() -> list[list[int]]:
    """Fds 0 to 2 that are connected stream sockets: fd 0 alone, fds 1 and 2 together when
    they are one socket."""
    groups: list[list[int]] = []
    outbound: dict[tuple[int, int], list[int]] = {}
    for fd in _STDIO:
        identity = _connected_stream(fd)
        if identity is None:
            continue
        if fd != 0 and identity in outbound:
            outbound[identity].append(fd)
            continue
        groups.append([fd])
        if fd != 0:
            outbound[identity] = groups[-1]
    return groups


def _connected_stream(fd: int) -> tuple[int, int] | None:
    """The socket's identity when ``fd`` is a connected stream socket, else None."""
    try:
        status = os.fstat(fd)
    except OSError:  # closed: the command gets /dev/null there (cli._standard_streams)
        return None
    if not stat.S_ISSOCK(status.st_mode):
        return None
    import socket  # a socket stdio only

    with socket.socket(fileno=os.dup(fd)) as probe:  # closes the duplicate alone
        if probe.type != socket.SOCK_STREAM:
            return None
        if probe.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            return None
        try:
            probe.getpeername()
        except OSError:  # ENOTCONN: never connected
            return None
    return status.st_dev, status.st_ino


def _copier(fd: int, *, inbound: bool) -> int:
    """Start the copier of socket ``fd``: into a pipe (``inbound``) or out of one. The
    pipe's end for the command; OSError when the copier cannot be started."""
    read_end, write_end = os.pipe()
    source, sink, kept = (fd, write_end, read_end) if inbound else (read_end, fd, write_end)
    try:
        child = os.fork()
        if child == 0:  # forks the copier, then exits with the fork's errno or 0
            status = 1
            try:
                if os.fork() == 0:
                    _copy(source, sink)
                status = 0
            except OSError as error:
                status = error.errno or 1
            finally:
                os._exit(status)
        failed = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
        if failed:
            raise OSError(failed, f"cannot start a copier process ({os.strerror(failed)})")
    except BaseException:
        os.close(kept)
        raise
    finally:
        os.close(write_end if inbound else read_end)
    return kept


def _copy(source: int, sink: int) -> None:
    """The copier: ``source`` to ``sink`` until either ends, then exit."""
    for number in _OUTLIVED:
        signal.signal(number, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    _close_all_but({source, sink})
    watched = select.poll()
    watched.register(source, select.POLLIN)
    watched.register(sink, 0)  # reports only that its reader is gone
    with suppress(OSError):
        while True:
            events = dict(watched.poll())
            if events.get(sink, 0) & _GONE:
                break
            if not events.get(source):
                continue
            try:
                chunk = os.read(source, _READ_SIZE)
            except BlockingIOError:  # a non-blocking socket: nothing after all
                continue
            if not chunk:
                break
            write_all(sink, chunk)  # a full non-blocking socket is waited for
    os._exit(0)


def _close_all_but(kept: set[int]) -> None:
    """Close every fd of this process but ``kept``, however high (the soft limit may have
    been lowered below an fd already open)."""
    try:
        open_fds = [int(name) for name in os.listdir("/dev/fd")]
    except OSError:
        open_fds = list(range(os.sysconf("SC_OPEN_MAX")))
    for fd in open_fds:
        if fd not in kept:
            with suppress(OSError):  # the listing's own fd, closed already
                os.close(fd)
