"""Pipes in place of the sockets a host gave as stdio, for a command ``wrap`` sandboxes.

Node and Electron hosts start a stdio server with socket pairs as its fds 0 to 2 (libuv's
pipes). With the network restricted, Codex's sandbox denies every socket call but reading
and writing, on a socket pair too, and a Node server asks ``getsockname`` of its stdio
before it reads a byte: it dies at start-up. So each of fds 0, 1 and 2 that is a socket
becomes a pipe, and a copier process outside the sandbox moves the bytes between that
socket and the pipe, unchanged and in order. A copier holds those two fds alone; it ends
when its source ends (passing the end on) or its sink's reader is gone, and ignores the
signals a host sends a whole process group to stop it (its server's last words still
reach the host; a SIGKILL ends it as any process). It is forked twice, so that it is
nobody's child to reap (init's, or a subreaper's).
"""

from __future__ import annotations

import os
import select
import signal
import stat

from launcher_probe.fd_write import write_all

#: The host's stdin, stdout and stderr.
STDIO = (0, 1, 2)
#: What a host sends a process group to stop it: the server's exit ends its copiers.
_OUTLIVED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
_READ_SIZE = 1 << 16
#: A sink whose reader is gone (a pipe's read end closed, a socket's peer gone).
_GONE = select.POLLERR | select.POLLHUP


def pipes_for_sockets() -> None:
    """Make each of fds 0 to 2 that is a socket a pipe to or from a copier of that socket;
    OSError when a pipe or a process cannot be made (nothing is then started)."""
    for fd in STDIO:
        if _is_socket(fd):
            _copied(fd, inbound=fd == 0)


def _is_socket(fd: int) -> bool:
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:  # closed: the command gets /dev/null there (cli._standard_streams)
        return False


def _copied(fd: int, *, inbound: bool) -> None:
    """Replace ``fd`` by a pipe end; its copier moves the socket's bytes into the pipe
    (``inbound``) or the pipe's into the socket."""
    read_end, write_end = os.pipe()
    source, sink, kept = (fd, write_end, read_end) if inbound else (read_end, fd, write_end)
    try:
        child = os.fork()
        if child == 0:  # the child forks the copier and exits at once
            try:
                if os.fork() == 0:
                    _copy(source, sink)
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        os.dup2(kept, fd)
    finally:
        os.close(read_end)
        os.close(write_end)


def _copy(source: int, sink: int) -> None:
    """The copier: ``source`` to ``sink`` until either ends, then exit."""
    for number in _OUTLIVED:
        signal.signal(number, signal.SIG_IGN)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    start = 0
    for kept in sorted((source, sink)):
        if start < kept:  # (an empty range is not nothing to CPython 3.11: it closes all)
            os.closerange(start, kept)
        start = kept + 1
    os.closerange(start, os.sysconf("SC_OPEN_MAX"))
    watched = select.poll()
    watched.register(source, select.POLLIN)
    watched.register(sink, 0)  # reports only that its reader is gone
    try:
        while True:
            events = dict(watched.poll())
            if events.get(sink, 0) & _GONE:
                break
            if events.get(source):
                chunk = os.read(source, _READ_SIZE)
                if not chunk:
                    break
                write_all(sink, chunk)
    except OSError:
        pass
    os._exit(0)
