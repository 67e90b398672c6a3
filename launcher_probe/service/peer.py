"""Who is at the other end of a Unix socket: checked by the helper and by its clients.

Uses the ``_socket`` core so that a CLI client does not pay for ``socket``'s enums.
"""

from __future__ import annotations

import _socket
import struct


def peer_uid(connection: _socket.socket) -> int | None:
    """The uid of the process at the other end (SO_PEERCRED, else getpeereid), or None."""
    if hasattr(_socket, "SO_PEERCRED"):
        size = struct.calcsize("3i")
        try:
            creds = connection.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, size)
        except OSError:
            return None
        return int(struct.unpack("3i", creds)[1])
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    uid, gid = ctypes.c_uint32(), ctypes.c_uint32()
    if libc.getpeereid(connection.fileno(), ctypes.byref(uid), ctypes.byref(gid)) != 0:
        return None
    return int(uid.value)
