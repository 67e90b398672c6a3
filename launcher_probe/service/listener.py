"""The helper's listening socket: a private directory, one helper per socket, a stale
socket replaced, peers checked by uid; or the socket a service manager hands over."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import socket
import stat

from launcher_probe.errors import InputRejected
from launcher_probe.host.paths.rules import unsafe_chain
from launcher_probe.json_output import printable

log = logging.getLogger("launcher_probe.service")
__all__ = ["ServiceRefused", "bind_listener", "take_lock"]

BACKLOG = 128


class ServiceRefused(InputRejected):
    """The helper cannot serve on this socket (unsafe directory, another helper, ...)."""

    reason = "service_refused"


def _private_directory(directory: str) -> None:
    """Create ``directory`` 0700 (and missing parents 0700); refuse it unless it is ours,
    0700, and no other user can replace it."""
    os.makedirs(os.path.dirname(directory), mode=0o700, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise ServiceRefused(f"socket directory {printable(directory)} is not a directory")
    if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) != 0o700:
        raise ServiceRefused(
            f"socket directory {printable(directory)} must be ours and mode 0700 "
            f"(it is uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o})"
        )
    unsafe = unsafe_chain(directory)
    if unsafe:
        raise ServiceRefused(f"socket directory {printable(directory)} is not safe: {unsafe}")


def _answers(path: str) -> bool:
    """Whether something accepts connections on the socket ``path``."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(path)
        return True
    except OSError as error:
        if error.errno in (errno.ECONNREFUSED, errno.ENOENT):
            return False
        raise
    finally:
        probe.close()


def take_lock(path: str) -> int:
    """Hold ``<socket>.lock`` for the helper's life; ServiceRefused when another holds it."""
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ServiceRefused(
            f"another launcher-probe helper is already serving on {printable(path)}"
        ) from None
    return fd


def bind_listener(path: str) -> tuple[socket.socket, int]:
    """Listen on the Unix socket ``path`` (0600, in a private 0700 directory), replacing a
    stale socket of a dead helper; the listener and the lock it holds (a file descriptor)."""
    if not os.path.isabs(path):
        raise ServiceRefused(f"the socket path must be absolute: {printable(path)}")
    try:
        _private_directory(os.path.dirname(path))
        lock = take_lock(path)
    except OSError as error:
        raise ServiceRefused(f"cannot prepare {printable(path)}: {error}") from error
    try:
        return _bind(path), lock
    except BaseException:
        os.close(lock)
        raise


def _bind(path: str) -> socket.socket:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(st.st_mode):
            raise ServiceRefused(f"{printable(path)} exists and is not a socket; not replacing it")
        if _answers(path):
            raise ServiceRefused(f"another helper is already serving on {printable(path)}")
        log.info("replacing the stale socket %s", printable(path))
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        os.chmod(path, 0o600)
        listener.listen(BACKLOG)
    except OSError as error:
        listener.close()
        raise ServiceRefused(f"cannot listen on {printable(path)}: {error}") from error
    return listener
