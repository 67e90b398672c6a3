"""Where this host's verdicts live: the cache root, this host's identity (so a home
directory shared by many hosts never mixes their verdicts) and the SHA-256 of the names.

SHA-256 without loading OpenSSL: ``hashlib`` loads OpenSSL's ``libcrypto`` at import, which
costs a warm CLI ``resolve`` about a quarter of Python's own start-up; CPython's built-in
SHA-256 (the module hashlib itself falls back to) gives the same digest without it. The
tests check they agree.
"""

from __future__ import annotations

import functools
import os
import sys

from launcher_probe.errors import InputRejected
from launcher_probe.xdg_dirs import xdg_user_dir

__all__ = ["CACHE_DIR_ENV", "CacheUnavailable", "cache_root", "host_id", "user_cache_dir"]


class CacheUnavailable(InputRejected):
    """The cache directory cannot be created or is not trustworthy; resolve without it."""

    reason = "cache_unavailable"


#: Environment variable that overrides the cache root.
CACHE_DIR_ENV = "LAUNCHER_PROBE_CACHE_DIR"
APP_NAME = "launcher-probe"
# hashlib's C core: hashlib itself loads OpenSSL's bindings. A name that is not there
# costs a search of every sys.path entry, so the one of this version is tried first.
try:
    if sys.version_info >= (3, 12):
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
    else:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # another implementation: hashlib's
    from hashlib import sha256


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 hex digits."""
    digest: str = sha256(data).hexdigest()
    return digest


def cache_root() -> str:
    """``$LAUNCHER_PROBE_CACHE_DIR``, else platformdirs' user cache dir for launcher-probe
    (see :func:`user_cache_dir`).

    CacheUnavailable when the variable names a relative path, or one through a procfs
    magic link (``/proc/self/cwd``, ``/proc/self/root``...): either would follow the
    process, not name a place.
    """
    given = os.environ.get(CACHE_DIR_ENV)
    if given:
        if not os.path.isabs(given):
            raise CacheUnavailable(
                f"{CACHE_DIR_ENV}={given!r} is not an absolute path; cache not used"
            )
        if _through_magic_link(given):
            raise CacheUnavailable(
                f"{CACHE_DIR_ENV}={given!r} leads through a procfs magic link (it would "
                "follow the process); cache not used"
            )
        return given
    return user_cache_dir()


def _through_magic_link(path: str) -> bool:
    """Whether walking ``path`` meets a procfs magic link (where it ends, if missing, is
    for the directory checks to say)."""
    import errno

    from launcher_probe.host.paths.walk import walk

    try:
        walk(path)
    except OSError as error:
        return error.errno == errno.EINVAL
    return False


def user_cache_dir() -> str:
    """``platformdirs.user_cache_dir("launcher-probe", appauthor=False)``: the XDG rule
    computed without it where that is the answer (``xdg_dirs.xdg_user_dir``)."""
    found = xdg_user_dir("XDG_CACHE_HOME", ".cache", APP_NAME)
    if found is not None:
        return found
    import platformdirs

    return platformdirs.user_cache_dir(APP_NAME, appauthor=False)


#: Where systemd and D-Bus keep the machine id (the first readable one wins).
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def _machine_id() -> str:
    for candidate in MACHINE_ID_FILES:
        try:
            with open(candidate, "rb") as stream:  # bytes: no codec module to import
                value = stream.read(256).decode("ascii", "replace").strip()
        except OSError:
            continue
        if value:
            return value
    return ""


@functools.cache
def host_id() -> str:
    """16 hex digits derived from the host name and the machine id.

    Without a machine id the host name alone is used (still stable for the host); without
    either, a constant, so the cache still works on a host that names itself nothing.
    """
    material = f"{os.uname().nodename}\0{_machine_id()}"
    return sha256_hex(material.encode("utf-8", "surrogateescape"))[:16]
