"""The ``serve`` helper: is one running for this user, on which socket, for how long."""

from __future__ import annotations

from typing import Any

#: How long doctor waits for a helper's ``status`` answer (a live one answers at once).
STATUS_WAIT = 1.0


def collect() -> dict[str, Any]:
    """``{"running", "socket", "pid", "version", "uptime", "detail"}``; ``detail`` says why
    no helper answered (none is needed: every command works without one)."""
    from launcher_probe.client import HelperUnavailable, request
    from launcher_probe.json_output import printable
    from launcher_probe.service.location import default_socket

    socket = default_socket()
    part: dict[str, Any] = {
        "running": False,
        "socket": printable(socket),
        "pid": None,
        "version": None,
        "uptime": None,
        "detail": "",
    }
    try:
        status = request("status", wait=STATUS_WAIT, socket_path=socket)
    except HelperUnavailable as error:
        return {**part, "detail": str(error)}
    return {
        **part,
        "running": True,
        "pid": status.get("pid"),
        "version": status.get("version"),
        "uptime": status.get("uptime"),
    }
