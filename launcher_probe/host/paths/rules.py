"""Path rules: the only paths that may ever be published as a launcher."""

from __future__ import annotations

import errno
import os
import stat

from launcher_probe.contract import Reason
from launcher_probe.errors import InputRejected
from launcher_probe.host.paths.walk import Component, walk
from launcher_probe.json_output import printable
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import BinaryIO


__all__ = [
    "PASSED",
    "PathRejected",
    "PathVerdict",
    "check_launcher_path",
    "home_directory",
    "judge",
    "open_regular_file",
    "require_launcher_path",
    "unsafe_chain",
]


class PathVerdict(Value):
    """Whether a path passes every rule; when not, the first failing rule and why."""

    __slots__ = ("ok", "reason", "detail")
    ok: bool
    reason: Reason | None
    detail: str

    def __init__(self, ok: bool, reason: Reason | None = None, detail: str = "") -> None:
        super().__init__(ok=ok, reason=reason, detail=detail)


PASSED = PathVerdict(True)


class PathRejected(InputRejected):
    """A path failed the path rules; ``verdict`` says which rule and why."""

    def __init__(self, verdict: PathVerdict) -> None:
        super().__init__(f"{verdict.reason}: {verdict.detail}")
        self.verdict = verdict
        if verdict.reason is not None:
            self.reason = str(verdict.reason)  # the path rule's own code (docs/json.md)


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


def home_directory() -> str:
    """The home directory every place under HOME is taken in (discovery's places and what
    the discovery memo records of them): ``~`` as ``os.path.expanduser`` expands it
    (``$HOME``; the password database's entry when unset; ``/`` when empty; ``~`` itself
    when neither gives one). A caller uses it only when it is absolute."""
    return os.path.expanduser("~")


def user_name() -> str:
    """The effective user's name (the password database's; the uid as text when it has
    none), as discovery names the user's Nix profile and the discovery memo records it."""
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


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
        walked = walk(text)
    except OSError as error:
        return PathVerdict(False, Reason.NOT_FOUND, _missing_detail(text, error))
    known = {component.path: component for component in walked.components}
    return judge(text, walked.components, walked.end, known)


def require_launcher_path(path: str | bytes) -> str:
    """``path`` as ``str`` when it passes every rule; raise PathRejected otherwise."""
    verdict = check_launcher_path(path)
    if not verdict.ok:
        raise PathRejected(verdict)
    return path.decode("utf-8") if isinstance(path, bytes) else path


def judge(
    path: str, components: Sequence[Component], end: str, known: Mapping[str, Component]
) -> PathVerdict:
    """The rules applied to a recorded walk of ``path`` (see ``walk.walk``), which ended at
    ``end``: a pure function of what the walk saw. ``known`` maps every component path of
    the record (this walk's and any other walked with it) to its component."""
    final = known[end]
    if not stat.S_ISREG(final.mode):
        shown = path if end == path else f"{path} (resolving to {end})"
        return PathVerdict(False, Reason.NOT_REGULAR_FILE, f"{shown} is not a regular file")
    if not _executable(final):
        return PathVerdict(False, Reason.NOT_EXECUTABLE, f"{path} is not executable by this user")
    unsafe = _first_unsafe(components, known)
    if unsafe:
        return PathVerdict(False, Reason.UNSAFE_PERMISSIONS, unsafe)
    return PASSED


def _executable(file: Component) -> bool:
    """Whether the current user may execute ``file``, from its mode and owner alone (as
    ``execve`` decides; root needs any x bit)."""
    euid = os.geteuid()
    if euid == 0:
        return bool(file.mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    if file.uid == euid:
        return bool(file.mode & stat.S_IXUSR)
    if file.gid == os.getegid() or file.gid in os.getgroups():
        return bool(file.mode & stat.S_IXGRP)
    return bool(file.mode & stat.S_IXOTH)


def _missing_detail(path: str, error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return f"{path}: too many levels of symbolic links"
    if error.errno == errno.EINVAL:  # the walk's own refusal (a procfs magic link)
        return f"{path}: {error.filename}: {error.strerror}"
    if os.path.islink(path):
        return f"{path} is a dangling symlink to {os.path.realpath(path)}"
    return f"{path}: {error.strerror or error}"


def _unsafe_owner(component: Component) -> str | None:
    if component.uid in (0, os.geteuid()):
        return None
    return f"{component.path} is owned by uid {component.uid}, not by root or the current user"


def _unsafe_mode(component: Component) -> str | None:
    mode = stat.S_IMODE(component.mode)
    if not mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    if stat.S_ISDIR(component.mode) and mode & stat.S_ISVTX:
        return None
    who = "others" if mode & stat.S_IWOTH else "its group"
    kind = "directory" if stat.S_ISDIR(component.mode) else "file"
    sticky = " without the sticky bit" if kind == "directory" else ""
    return f"{kind} {component.path} is writable by {who}{sticky} (mode {mode:04o})"


def _is_shared_sticky(directory: Component) -> bool:
    mode = directory.mode
    return bool(mode & stat.S_ISVTX and mode & (stat.S_IWGRP | stat.S_IWOTH))


def _first_unsafe(components: Sequence[Component], known: Mapping[str, Component]) -> str | None:
    """Why one of ``components`` could be swapped by another user, or None.

    Each directory and file must be owned by root or the current user and not writable by
    group or others (a sticky directory may be shared, but then a symlink inside it must
    be ours or root's too).
    """
    for component in components:
        if stat.S_ISLNK(component.mode):
            owner = _unsafe_owner(component)
            parent = known[os.path.dirname(component.path)]
            if owner and _is_shared_sticky(parent):
                return f"symlink {owner}, inside a shared sticky directory"
            continue
        problem = _unsafe_owner(component) or _unsafe_mode(component)
        if problem:
            return problem
    return None


def unsafe_chain(path: str) -> str | None:
    """Why the absolute ``path`` could be swapped by another user, or None when it cannot.

    Walks ``path`` component by component from ``/``, following every symlink the way the
    kernel does, so both the symlinks' own directories and their targets' directories are
    checked (see :func:`_first_unsafe`).
    """
    try:
        walked = walk(path)
    except OSError as error:
        return f"cannot check {path}: {error}"
    known = {component.path: component for component in walked.components}
    return _first_unsafe(walked.components, known)
