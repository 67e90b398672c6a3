"""Socket activation the systemd way: ``LISTEN_PID``/``LISTEN_FDS``, the socket on fd 3."""

from __future__ import annotations

import os
import socket

from launcher_probe.service.listener import ServiceRefused

#: The first inherited descriptor (``SD_LISTEN_FDS_START``).
FIRST_FD = 3
_VARIABLES = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


def inherited_listener() -> socket.socket | None:
    """The listening Unix socket a service manager passed to this process, or None when
    none was. The variables are removed so that no child inherits them.

    ServiceRefused when they name this process but not exactly one listening Unix stream
    socket.
    """
    pid, count = os.environ.get("LISTEN_PID"), os.environ.get("LISTEN_FDS")
    for name in _VARIABLES:
        os.environ.pop(name, None)
    if pid is None or count is None or pid != str(os.getpid()):
        return None
    if count != "1":
        raise ServiceRefused(f"LISTEN_FDS={count}: expected exactly one socket")
    try:
        listener = socket.socket(fileno=FIRST_FD)
    except OSError as error:
        raise ServiceRefused(f"LISTEN_FDS=1 but fd {FIRST_FD} is no socket: {error}") from error
    listening = listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
    if listener.family != socket.AF_UNIX or listener.type != socket.SOCK_STREAM or not listening:
        listener.detach()
        raise ServiceRefused(f"fd {FIRST_FD} is not a listening Unix stream socket")
    listener.set_inheritable(False)
    return listener
