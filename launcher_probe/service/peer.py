"""Who is at the other end of a Unix socket: checked by the helper and by its clients.

Uses the ``_socket`` core so that a CLI client does not pay for ``socket``'s enums.
"""

from __future__ import annotations

import _socket
import struct


def peer_uid(connection: _socket.socket) -> int | None:
    """The uid of the process at the other end (SO_PEERCRED, else getpeereid), or None."""
    return peer(connection)[1]


def peer(connection: _socket.socket) -> tuple[int | None, int | None]:
    """``(pid, uid)`` of the process at the other end; the pid is None where the system
    does not tell it (getpeereid), both are None when neither can be read."""
    if hasattr(_socket, "SO_PEERCRED"):
        size = struct.calcsize("3i")
        try:
            creds = connection.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, size)
        except OSError:
            return None, None
        pid, uid, _ = struct.unpack("3i", creds)
        return int(pid), int(uid)
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    c_uid, c_gid = ctypes.c_uint32(), ctypes.c_uint32()
    if libc.getpeereid(connection.fileno(), ctypes.byref(c_uid), ctypes.byref(c_gid)) != 0:
        return None, None
    return None, int(c_uid.value)
