"""What a held verdict rests on: the binary's fingerprint and the directories the path
rules judged. Checking it costs only ``lstat`` (and ``readlink``) calls."""

from __future__ import annotations

import os

from launcher_probe.host.fingerprint import Fingerprint

#: A directory as the path rules see it: device, inode, mode and owner.
_DirectoryState = tuple[int, int, int, int] | None


def _ancestors(path: str) -> list[str]:
    """``path``'s directories from its parent up to ``/``."""
    found = []
    current = os.path.dirname(path)
    while True:
        found.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            return found
        current = parent


def judged_directories(fingerprint: Fingerprint) -> tuple[str, ...]:
    """Every directory the path rules judge for ``fingerprint``'s hops: those above each
    hop as named and above where it leads."""
    directories: dict[str, None] = {}
    for hop in fingerprint.hops:
        for path in (os.path.normpath(hop.path), hop.realpath):
            directories.update(dict.fromkeys(_ancestors(path)))
    return tuple(directories)


def _directory_state(path: str) -> _DirectoryState:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mode, st.st_uid)


class Guard:
    """The fingerprint of a published binary and the state of its judged directories."""

    __slots__ = ("directories", "fingerprint", "states")

    def __init__(self, fingerprint: Fingerprint) -> None:
        self.fingerprint = fingerprint
        self.directories = judged_directories(fingerprint)
        self.states = tuple(_directory_state(path) for path in self.directories)

    def changed(self) -> str | None:
        """What changed since the verdict (the binary, or a directory's owner, mode or
        identity), or None when nothing did."""
        if not self.fingerprint.still_matches():
            return f"{self.fingerprint.native} changed"
        for path, state in zip(self.directories, self.states, strict=True):
            if _directory_state(path) != state:
                return f"directory {path} changed (owner, mode or identity)"
        return None
