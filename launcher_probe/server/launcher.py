"""The server side's check of a launcher named in ``_meta``: never taken on trust.

A launcher is used only when it is plausibly the Codex CLI and verified, in this order:

1. the path rules (``check_launcher_path``), on every call;
2. it is named ``codex`` or ``codex-<this host's target triple>``, as given and after
   symlinks (``not_codex`` otherwise);
3. it is a native executable for this host, never a ``#!`` script (``wrong_platform``);
4. the resolver verifies it: ``resolve_launcher(codex=path)`` answers from the per-host
   verdict cache the host side writes (same record, same lock, same probe), or runs the
   probe once, under the lock, and stores the verdict.

A verified launcher is remembered in this process for ``VERIFIED_TTL`` seconds, bound to
its fingerprint (every hop's ``lstat``): within that time a call costs the path rules and
one fingerprint, and a changed binary is verified afresh before it is used.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from launcher_probe.contract import Reason
from launcher_probe.host.native.host_format import native_executable_problem
from launcher_probe.host.native.shims import host_target
from launcher_probe.host.paths.fingerprint import Fingerprint
from launcher_probe.host.paths.rules import PASSED, PathVerdict, check_launcher_path
from launcher_probe.json_output import printable

__all__ = ["VERIFIED_TTL", "verify_launcher"]

logger = logging.getLogger(__name__)

#: Seconds a verified launcher is trusted in-process before the resolver is asked again
#: (the resolver's own memory front keeps verdicts as long).
VERIFIED_TTL = 60.0

_verified: dict[str, tuple[Fingerprint, float]] = {}
_verified_lock = threading.Lock()


def verify_launcher(path: str) -> PathVerdict:
    """Whether ``path`` may be run as the launcher now; when not, the reason and why."""
    return _verify(path)[0]


def open_verified_launcher(path: str) -> tuple[int | None, PathVerdict]:
    """An ``O_PATH`` descriptor (Linux) of the file ``path`` leads to, opened before
    ``path`` was verified and checked to be the very file verified (device, inode, size,
    mtime, ctime), so that executing it runs what was verified whatever happens to the
    path afterwards; or None and why not."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as error:
        return None, PathVerdict(False, Reason.NOT_FOUND, f"{path}: {error.strerror}")
    verdict, fingerprint = _verify(path)
    if verdict.ok and (fingerprint is None or not _is_native_of(fd, fingerprint)):
        detail = f"{path} changed while it was being verified"
        verdict = PathVerdict(False, Reason.BINARY_CHANGED, detail)
    if not verdict.ok:
        os.close(fd)
        return None, verdict
    return fd, verdict


def _is_native_of(fd: int, fingerprint: Fingerprint) -> bool:
    """Whether ``fd`` is the file ``fingerprint`` ends at, unchanged."""
    st = os.fstat(fd)
    return any(
        component.path == fingerprint.native
        and (component.dev, component.ino, component.size) == (st.st_dev, st.st_ino, st.st_size)
        and (component.mtime_ns, component.ctime_ns) == (st.st_mtime_ns, st.st_ctime_ns)
        for component in fingerprint.components
    )


def _verify(path: str) -> tuple[PathVerdict, Fingerprint | None]:
    """``verify_launcher``'s verdict, and the fingerprint it was judged on."""
    try:  # a lone surrogate ("\ud800") is not even a file system name
        path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        shown = path.encode("utf-8", "backslashreplace").decode("utf-8")
        return PathVerdict(False, Reason.NOT_UTF8, f"{shown} is not valid UTF-8"), None
    verdict = check_launcher_path(path)
    if not verdict.ok:
        return verdict, None
    try:
        fingerprint = Fingerprint.of(path, os.path.realpath(path))
    except (OSError, ValueError) as error:
        return PathVerdict(False, Reason.NOT_FOUND, f"{path}: {error}"), None
    with _verified_lock:
        known = _verified.get(path)
    if known is not None and known[0] == fingerprint and time.monotonic() < known[1]:
        return PASSED, fingerprint
    verdict = _implausible(path, fingerprint.native) or _resolved(path, fingerprint)
    if verdict.ok:
        with _verified_lock:
            _verified[path] = (fingerprint, time.monotonic() + VERIFIED_TTL)
    return verdict, fingerprint


def _implausible(path: str, native: str) -> PathVerdict | None:
    """Why ``path`` cannot be the Codex CLI judged by its name and format, or None."""
    target = host_target()
    names = {"codex", f"codex-{target.triple}"} if target else {"codex"}
    for named in dict.fromkeys((path, native)):
        if os.path.basename(named) not in names:
            detail = f"{printable(named)} is not named {' or '.join(sorted(names))}"
            return PathVerdict(False, Reason.NOT_CODEX, detail)
    problem = native_executable_problem(native)
    return PathVerdict(False, Reason.WRONG_PLATFORM, problem) if problem else None


def _resolved(path: str, fingerprint: Fingerprint) -> PathVerdict:
    """The resolver's verdict on ``path`` (cached per host, or probed now)."""
    from launcher_probe.host.decision import Published
    from launcher_probe.host.resolver import resolve_launcher

    decision = resolve_launcher(path)
    for warning in decision.warnings:
        logger.warning("verifying the launcher: %s", warning)
    if not isinstance(decision, Published):
        return PathVerdict(False, decision.reason, decision.detail)
    if decision.fingerprint != fingerprint:  # name and format were judged on another file
        detail = f"{path} changed while it was being verified"
        return PathVerdict(False, Reason.BINARY_CHANGED, detail)
    return PASSED
