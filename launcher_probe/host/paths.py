"""Path rules: the only paths that may ever be published as a launcher."""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from dataclasses import dataclass
from typing import BinaryIO

from launcher_probe.contract import Reason
from launcher_probe.errors import InputRejected

#: As many symlinks as Linux follows before it gives up with ELOOP.
MAX_SYMLINKS = 40


@dataclass(frozen=True, slots=True)
class PathVerdict:
    """Whether a path passes every rule; when not, the first failing rule and why."""

    ok: bool
    reason: Reason | None = None
    detail: str = ""


PASSED = PathVerdict(True)


class PathRejected(InputRejected):
    """A path failed the path rules; ``verdict`` says which rule and why."""

    def __init__(self, verdict: PathVerdict) -> None:
        super().__init__(f"{verdict.reason}: {verdict.detail}")
        self.verdict = verdict


def printable(path: str | bytes) -> str:
    """``path`` as text safe to print or put in JSON (undecodable bytes as ``\\xNN``)."""
    raw = path if isinstance(path, bytes) else os.fsencode(path)
    return raw.decode("utf-8", "backslashreplace")


def open_regular_file(path: str) -> BinaryIO:
    """Open ``path`` for reading when it is a regular file; OSError otherwise.

    A FIFO or device is never opened (checked before) nor blocked on (non-blocking open,
    checked again on the descriptor), so an untrusted path cannot hang the reader.
    """
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(errno.EINVAL, "not a regular file", path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", path)
    return os.fdopen(fd, "rb")


def _as_text(path: str | bytes) -> str | PathVerdict:
    """The path as a UTF-8-clean ``str``, or the verdict that rejects it."""
    absolute = path.startswith(b"/") if isinstance(path, bytes) else path.startswith("/")
    if not absolute:
        return PathVerdict(False, Reason.NOT_ABSOLUTE, f"{printable(path)!r} is not absolute")
    try:
        text = path.decode("utf-8") if isinstance(path, bytes) else path
        text.encode("utf-8")
    except UnicodeError:
        return PathVerdict(False, Reason.NOT_UTF8, f"{printable(path)} is not valid UTF-8")
    if "\0" in text:
        return PathVerdict(False, Reason.NOT_FOUND, f"{printable(path)!r} contains a NUL byte")
    return text


def check_launcher_path(path: str | bytes) -> PathVerdict:
    """Apply every path rule to ``path`` (absolute, UTF-8, regular, executable, safe)."""
    text = _as_text(path)
    if isinstance(text, PathVerdict):
        return text
    try:
        target = os.stat(text)
    except OSError as error:
        return PathVerdict(False, Reason.NOT_FOUND, _missing_detail(text, error))
    if not stat.S_ISREG(target.st_mode):
        real = os.path.realpath(text)
        shown = text if real == text else f"{text} (resolving to {real})"
        return PathVerdict(False, Reason.NOT_REGULAR_FILE, f"{shown} is not a regular file")
    if not os.access(text, os.X_OK):
        return PathVerdict(False, Reason.NOT_EXECUTABLE, f"{text} is not executable by this user")
    unsafe = unsafe_chain(text)
    if unsafe:
        return PathVerdict(False, Reason.UNSAFE_PERMISSIONS, unsafe)
    return PASSED


def require_launcher_path(path: str | bytes) -> str:
    """``path`` as ``str`` when it passes every rule; raise PathRejected otherwise."""
    verdict = check_launcher_path(path)
    if not verdict.ok:
        raise PathRejected(verdict)
    return path.decode("utf-8") if isinstance(path, bytes) else path


def _missing_detail(path: str, error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return f"{path}: too many levels of symbolic links"
    if os.path.islink(path):
        return f"{path} is a dangling symlink to {os.path.realpath(path)}"
    return f"{path}: {error.strerror or error}"


def _unsafe_owner(path: str, info: os.stat_result) -> str | None:
    if info.st_uid in (0, os.geteuid()):
        return None
    return f"{path} is owned by uid {info.st_uid}, not by root or the current user"


def _unsafe_mode(path: str, info: os.stat_result) -> str | None:
    mode = stat.S_IMODE(info.st_mode)
    if not mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    if stat.S_ISDIR(info.st_mode) and mode & stat.S_ISVTX:
        return None
    who = "others" if mode & stat.S_IWOTH else "its group"
    kind = "directory" if stat.S_ISDIR(info.st_mode) else "file"
    sticky = " without the sticky bit" if kind == "directory" else ""
    return f"{kind} {path} is writable by {who}{sticky} (mode {mode:04o})"


def _is_shared_sticky(info: os.stat_result) -> bool:
    return bool(info.st_mode & stat.S_ISVTX and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def unsafe_chain(path: str) -> str | None:
    """Why ``path`` could be swapped by another user, or None when it cannot.

    Walks ``path`` component by component from ``/``, following every symlink the way the
    kernel does, so both the symlinks' own directories and their targets' directories are
    checked: each directory and the final file must be owned by root or the current user
    and not writable by group or others (a sticky directory may be shared, but then a
    symlink inside it must be ours or root's too). ``path`` must be absolute.
    """
    pending = deque(part for part in path.split("/") if part)
    current = "/"
    hops = 0
    try:
        info = os.lstat(current)
        problem = _unsafe_owner(current, info) or _unsafe_mode(current, info)
        while pending and not problem:
            part = pending.popleft()
            if part == ".":
                continue
            if part == "..":
                current = os.path.dirname(current)
                info = os.lstat(current)
                continue
            parent = info
            candidate = os.path.join(current, part)
            info = os.lstat(candidate)
            if stat.S_ISLNK(info.st_mode):
                hops += 1
                if hops > MAX_SYMLINKS:
                    return f"{path}: too many levels of symbolic links"
                owner = _unsafe_owner(candidate, info)
                if owner and _is_shared_sticky(parent):
                    return f"symlink {owner}, inside a shared sticky directory"
                link = os.readlink(candidate)
                pending.extendleft(reversed([p for p in link.split("/") if p]))
                if link.startswith("/"):
                    current = "/"
                info = os.lstat(current)
                continue
            problem = _unsafe_owner(candidate, info) or _unsafe_mode(candidate, info)
            current = candidate
    except OSError as error:
        return f"cannot check {path}: {error}"
    return problem
