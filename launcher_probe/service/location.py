"""Where the helper's socket lives; light enough for every CLI ``resolve`` to import."""

from __future__ import annotations

import os
import sys

#: Overrides the socket path, for the helper and its clients alike (absolute).
SOCKET_ENV = "LAUNCHER_PROBE_SOCKET"
APP_NAME = "launcher-probe"
SOCKET_NAME = "launcher-probe.sock"


def runtime_dir() -> str:
    """platformdirs' ``user_runtime_dir("launcher-probe")``.

    On Linux with ``XDG_RUNTIME_DIR`` set (the usual case) it is computed without importing
    platformdirs, which would cost a warm CLI resolve more than the whole round trip.
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if sys.platform == "linux" and os.path.isabs(xdg):
        return os.path.join(xdg, APP_NAME)
    import warnings

    import platformdirs

    with warnings.catch_warnings():  # the /tmp fallback warns; it is still per-user
        warnings.simplefilter("ignore")
        return str(platformdirs.user_runtime_dir(APP_NAME, appauthor=False))


def default_socket() -> str:
    """``$LAUNCHER_PROBE_SOCKET``, else ``<user runtime dir>/launcher-probe.sock``."""
    given = os.environ.get(SOCKET_ENV)
    if given:
        return given
    return os.path.join(runtime_dir(), SOCKET_NAME)
