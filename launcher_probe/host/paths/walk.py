"""The component walk: every inode the path rules judge, as ``lstat`` saw it.

A path is walked from ``/`` one component at a time, following each symlink the way the
kernel does (its target's components are walked next), so the record holds every
directory on every hop, every symlink, and the file the path ends at. What is kept per
inode is what the rules judge (type and permission bits, owner, group) and its identity
(device, inode); symlinks and files also keep size, mtime and ctime, so a rewrite shows.
A directory's own size, mtime and ctime are not kept: a file added beside the binary
changes nothing the rules look at.

Replaying a record (``lstat`` each component path again, compare) proves that a new walk
would see the same thing: the walk's every step depends only on those attributes, and a
symlink's target cannot change while its inode, size and ctime stay the same.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque

from launcher_probe.value import Value

#: As many symlinks as Linux follows before it gives up with ELOOP.
MAX_SYMLINKS = 40


class Component(Value):
    """One inode met on a walk. ``size``, ``mtime_ns`` and ``ctime_ns`` are 0 for a
    directory; ``hop`` is True when the component was the last one of the path left to
    walk at that moment (the path as found, each symlink its chain leads through, the file
    it ends at)."""

    __slots__ = ("path", "mode", "uid", "gid", "dev", "ino", "size", "mtime_ns", "ctime_ns", "hop")
    path: str
    mode: int
    uid: int
    gid: int
    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    hop: bool

    def __init__(
        self,
        path: str,
        mode: int,
        uid: int,
        gid: int,
        dev: int,
        ino: int,
        size: int,
        mtime_ns: int,
        ctime_ns: int,
        hop: bool,
    ) -> None:
        super().__init__(
            path=path,
            mode=mode,
            uid=uid,
            gid=gid,
            dev=dev,
            ino=ino,
            size=size,
            mtime_ns=mtime_ns,
            ctime_ns=ctime_ns,
            hop=hop,
        )

    @classmethod
    def of(cls, path: str, st: os.stat_result, hop: bool) -> Component:
        """The component at ``path`` from its ``lstat`` result."""
        if stat.S_ISDIR(st.st_mode):
            return cls(path, st.st_mode, st.st_uid, st.st_gid, st.st_dev, st.st_ino, 0, 0, 0, hop)
        return cls(
            path,
            st.st_mode,
            st.st_uid,
            st.st_gid,
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            hop,
        )


class Walk(Value):
    """Every distinct component of a walk, in the order first met, and where it ended."""

    __slots__ = ("components", "end")
    components: tuple[Component, ...]
    end: str

    def __init__(self, components: tuple[Component, ...], end: str) -> None:
        super().__init__(components=components, end=end)


def walk(path: str, known: dict[str, Component] | None = None) -> Walk:
    """Walk the absolute ``path`` component by component; OSError (ENOENT, ENOTDIR, ELOOP,
    EACCES...) when the kernel would fail to reach it.

    ``known`` maps component paths already recorded (by an earlier walk of the same
    fingerprint) to their components; those are not recorded twice but still followed.
    """
    if not path.startswith("/"):
        raise OSError(errno.EINVAL, "not an absolute path", path)
    known = {} if known is None else known
    met: list[Component] = []
    pending = deque(part for part in path.split("/") if part)
    current = "/"
    hops = 0

    def look(where: str, hop: bool) -> os.stat_result:
        st = os.lstat(where)
        if where not in known:
            known[where] = component = Component.of(where, st, hop)
            met.append(component)
        return st

    look(current, not pending)
    while pending:
        part = pending.popleft()
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = f"{current}/{part}" if current != "/" else f"/{part}"
        st = look(candidate, not pending)
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > MAX_SYMLINKS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
            link = os.readlink(candidate)
            if len(os.fsencode(link)) != st.st_size:
                # A "magic" link (/proc/<pid>/root, cwd, exe, fd/N): the kernel does not
                # follow its text, and its lstat does not change when its target does.
                raise OSError(errno.EINVAL, "a procfs magic link, not followed", candidate)
            pending.extendleft(reversed([p for p in link.split("/") if p]))
            if link.startswith("/"):
                current = "/"
            continue
        if pending and not stat.S_ISDIR(st.st_mode):
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), candidate)
        current = candidate
    return Walk(tuple(met), current)
