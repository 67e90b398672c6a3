"""Where the helper's socket lives; light enough for every CLI ``resolve`` to import.

On Linux and the BSDs the runtime directory follows the XDG rule as platformdirs' applies
it (``user_runtime_dir``), computed without importing platformdirs (which would cost a warm
CLI resolve more than the whole round trip): ``$XDG_RUNTIME_DIR`` when it is absolute, else
``/run/user/<uid>`` when that is this user's private directory, else ``runtime-<uid>`` in
the temporary directory. That last name is predictable: one another user created first is
refused (``UnsafeRuntimeDir``), never used.
"""

from __future__ import annotations

import os
import stat
import sys

from launcher_probe.errors import InputRejected

#: Overrides the socket path, for the helper and its clients alike (absolute).
__all__ = ["SOCKET_ENV", "UnsafeRuntimeDir", "default_socket", "runtime_dir"]

SOCKET_ENV = "LAUNCHER_PROBE_SOCKET"
APP_NAME = "launcher-probe"
SOCKET_NAME = "launcher-probe.sock"
#: Where the temporary directory is named, in the order ``tempfile.gettempdir`` reads them.
_TEMP_ENV = ("TMPDIR", "TEMP", "TMP")
_TEMP_ROOTS = ("/tmp", "/var/tmp", "/usr/tmp")


class UnsafeRuntimeDir(InputRejected):
    """The runtime directory the socket would live in belongs to another user (or is no
    directory): no helper is asked there, and ``serve`` refuses to listen."""

    reason = "unsafe_runtime_dir"


def _system_runtime_dir(uid: int) -> str | None:
    """``/run/user/<uid>`` (``/var/run/user`` on FreeBSD/NetBSD) when it is this user's
    private directory, else None."""
    base = "/var/run/user" if sys.platform.startswith(("freebsd", "netbsd")) else "/run/user"
    path = f"{base}/{uid}"
    try:
        info = os.lstat(path)
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700
    return path if private and info.st_uid == uid else None


def _temp_dir() -> str:
    """The temporary directory as ``tempfile.gettempdir`` finds it (without importing it)."""
    for name in _TEMP_ENV:
        value = os.environ.get(name, "")
        if os.path.isabs(value) and os.access(value, os.W_OK | os.X_OK):
            return os.path.normpath(value)
    for root in _TEMP_ROOTS:
        if os.access(root, os.W_OK | os.X_OK):
            return root
    return os.path.normpath(os.getcwd())


def _temp_runtime_dir(uid: int) -> str:
    """``<temp>/runtime-<uid>``; UnsafeRuntimeDir when it exists and is not this user's
    directory (another user can create that name first)."""
    path = os.path.join(_temp_dir(), f"runtime-{uid}")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path
    except OSError as error:
        raise UnsafeRuntimeDir(f"{path} cannot be checked: {error.strerror}") from error
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        problem = "is a symlink" if stat.S_ISLNK(info.st_mode) else "is not a directory"
    elif info.st_uid != uid:
        problem = f"is owned by uid {info.st_uid}, not {uid}"
    else:
        return path
    raise UnsafeRuntimeDir(
        f"runtime directory {path} {problem}: another user may have made it; not using it "
        "(set XDG_RUNTIME_DIR to a private directory of yours)"
    )


def runtime_dir() -> str:
    """platformdirs' ``user_runtime_dir("launcher-probe")`` (see the module docstring);
    UnsafeRuntimeDir when the only candidate is another user's."""
    if sys.platform == "darwin" or sys.platform == "win32":
        import warnings

        import platformdirs

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return str(platformdirs.user_runtime_dir(APP_NAME, appauthor=False))
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, APP_NAME)
    uid = os.geteuid()
    base = _system_runtime_dir(uid) or _temp_runtime_dir(uid)
    return os.path.join(base, APP_NAME)


def default_socket() -> str:
    """``$LAUNCHER_PROBE_SOCKET``, else ``<user runtime dir>/launcher-probe.sock``;
    UnsafeRuntimeDir as :func:`runtime_dir` raises it."""
    given = os.environ.get(SOCKET_ENV)
    if given:
        return given
    return os.path.join(runtime_dir(), SOCKET_NAME)
