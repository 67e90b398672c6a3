"""Binary identity: what a verdict is bound to, and what the path rules judged.

A Fingerprint is the recorded walk (``walk.py``) of the path as found and, behind a shim,
of the native binary: every inode the path rules look at. The rules' verdict is a pure
function of it, so "the fingerprint still matches" implies "the path rules still pass".
Checking it again costs one ``lstat`` per component and nothing else.
"""

from __future__ import annotations

import os
import stat
from operator import attrgetter, call, itemgetter

from launcher_probe.host.paths.rules import PathVerdict, judge
from launcher_probe.host.paths.walk import MAX_SYMLINKS, Component, walk
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    #: What a replay compares, component by component: the paths, how to read the fields
    #: compared from each one's ``lstat`` (``_read_directory`` or ``_read_file``), and the
    #: values recorded (see :func:`replay_of`).
    Replay = tuple[
        tuple[str, ...],
        tuple[Callable[[os.stat_result], tuple[int, ...]], ...],
        tuple[tuple[int, ...], ...],
    ]

#: Most components a fingerprint read back from JSON may hold.
MAX_COMPONENTS = 4096
_COMPONENT_FIELDS = Component.__slots__
_FIELDS = ("path", "end", "native", "split", "components")


class Fingerprint(Value):
    """The walk of ``path`` (as found, ending at ``end``) and of ``native`` (when it is
    another file, a shim's binary): ``components[:split]`` are the first walk's.

    Two fingerprints are equal only when every component is the same inode, unchanged.
    """

    __slots__ = (*_FIELDS, "_replay")
    path: str
    end: str
    native: str
    split: int
    components: tuple[Component, ...]
    #: What :meth:`still_matches` compares (see :func:`replay_of`).
    _replay: Replay

    def __init__(
        self, path: str, end: str, native: str, split: int, components: tuple[Component, ...]
    ) -> None:
        replay = replay_of(components)
        super().__init__(
            path=path, end=end, native=native, split=split, components=components, _replay=replay
        )

    def fields(self) -> dict[str, Any]:
        """The field values by name (the replay, derived from the components, left out)."""
        return {name: getattr(self, name) for name in _FIELDS}

    def _key(self) -> tuple[Any, ...]:
        return (self.path, self.end, self.native, self.split, self.components)

    @classmethod
    def of(cls, path: str, native: str) -> Fingerprint:
        """Walk ``path`` (as found) and, when it ends elsewhere, ``native``; OSError if
        either cannot be reached."""
        known: dict[str, Component] = {}
        first = walk(path, known)
        if native == first.end:
            return cls(path, first.end, first.end, len(first.components), first.components)
        second = walk(native, known)
        components = first.components + second.components
        return cls(path, first.end, second.end, len(first.components), components)

    def verdict(self) -> PathVerdict:
        """The path rules applied to this record: to the path as found, then to the native
        binary behind it (when that is another file)."""
        known = {component.path: component for component in self.components}
        found = judge(self.path, self.components[: self.split], self.end, known)
        if not found.ok or self.native == self.end:
            return found
        return judge(self.native, self.components[self.split :], self.native, known)

    def still_matches(self) -> bool:
        """True when every component on disk is still the same inode, unchanged (one
        ``lstat`` each; no ``realpath``, ``readlink`` or read)."""
        return self.first_change() is None

    def first_change(self) -> str | None:
        """What changed first, in walk order (``"<path> changed"``, ``"directory <path>
        changed"``, ``"<path> is gone"``; ``"the walk of <native> changed while it was
        replayed"`` when it changed back), or None when every component is unchanged."""
        return first_change(self._replay)

    def hops(self) -> list[dict[str, Any]]:
        """The files the verdict is about, first (the path as found) to last (the native
        binary): each symlink its chain leads through and the file each walk ends at, as
        ``{"path", "realpath", "dev", "ino", "size", "mtime_ns", "ctime_ns"}``."""
        shown: list[dict[str, Any]] = []
        for index, component in enumerate(self.components):
            if not component.hop or stat.S_ISDIR(component.mode):
                continue
            first_walk = index < self.split
            path = self.path if not shown else component.path
            shown.append(
                {
                    "path": path,
                    "realpath": self.end if first_walk else self.native,
                    "dev": component.dev,
                    "ino": component.ino,
                    "size": component.size,
                    "mtime_ns": component.mtime_ns,
                    "ctime_ns": component.ctime_ns,
                }
            )
        return shown

    def to_json(self) -> list[dict[str, Any]]:
        """The hops (see :meth:`hops`): the documented ``fingerprint`` of ``resolve --json``."""
        return self.hops()

    def record_json(self) -> dict[str, Any]:
        """The whole record, for the verdict cache: ``{"path", "end", "native", "split",
        "components": [{"path", "mode", "uid", "gid", "dev", "ino", "size", "mtime_ns",
        "ctime_ns", "hop"}, ...]}``."""
        return {
            "path": self.path,
            "end": self.end,
            "native": self.native,
            "split": self.split,
            "components": [component.fields() for component in self.components],
        }

    @classmethod
    def from_record_json(cls, value: Any) -> Fingerprint:
        """Parse :meth:`record_json`'s form; ValueError on any deviation (a path that is
        not absolute UTF-8 text, say)."""
        if not isinstance(value, dict) or set(value) != {"path", "end", "native", "split"} | {
            "components"
        }:
            raise ValueError("a fingerprint must be an object with path, end, native, split")
        components = value["components"]
        if not isinstance(components, list) or not 0 < len(components) <= MAX_COMPONENTS:
            raise ValueError("fingerprint components must be a non-empty list")
        parsed = tuple(component_from_json(item) for item in components)
        split = value["split"]
        if type(split) is not int or not 0 < split <= len(parsed):
            raise ValueError("fingerprint split out of range")
        fingerprint = cls(
            _path(value["path"]), _path(value["end"]), _path(value["native"]), split, parsed
        )
        paths = {component.path for component in parsed}
        if len(paths) != len(parsed) or not {fingerprint.end, fingerprint.native} <= paths:
            raise ValueError("fingerprint components do not form a walk")
        links = sum(1 for component in parsed if stat.S_ISLNK(component.mode))
        if links > 2 * MAX_SYMLINKS or any(
            os.path.dirname(component.path) not in paths for component in parsed
        ):
            raise ValueError("fingerprint components do not form a walk")
        return fingerprint


#: Reads what a replay compares from a directory's ``lstat``: its mode, inode, device,
#: owner and group (``stat_result``'s fields 0, 1, 2, 4 and 5, as documented).
_read_directory = itemgetter(0, 1, 2, 4, 5)
#: ... and from a file's or symlink's: those, its size, mtime and ctime.
_read_file = attrgetter(
    "st_mode", "st_ino", "st_dev", "st_uid", "st_gid", "st_size", "st_mtime_ns", "st_ctime_ns"
)


def replay_of(components: Iterable[Component]) -> Replay:
    """What a replay of ``components`` compares: each one's path, mode, inode, device,
    owner, group and, for a file or symlink, its size, mtime and ctime (``_read_*``'s
    order)."""
    paths, recorded = [], []
    reads: list[Callable[[os.stat_result], tuple[int, ...]]] = []
    for component in components:
        kept: tuple[int, ...] = (component.mode, component.ino, component.dev)
        kept += (component.uid, component.gid)
        if stat.S_ISDIR(component.mode):
            reads.append(_read_directory)
        else:
            reads.append(_read_file)
            kept += (component.size, component.mtime_ns, component.ctime_ns)
        paths.append(component.path)
        recorded.append(kept)
    return tuple(paths), tuple(reads), tuple(recorded)


def _path(value: Any) -> str:
    """An absolute path that is valid UTF-8 text (no lone surrogate, no NUL)."""
    if not isinstance(value, str) or not value.startswith("/") or "\0" in value:
        raise ValueError("fingerprint paths must be absolute")
    value.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate
    return value


def first_change(replay: Replay) -> str | None:
    """What changed first among the ``replay``'s components, in walk order, or None when
    every one is the same inode, unchanged. One ``lstat`` each, compared all at once; after
    a difference they are looked at again one by one, to name the first that differs (a
    difference is never taken back: a walk that changed and changed back still changed)."""
    paths, reads, recorded = replay
    lstat = os.lstat
    try:
        if tuple(map(call, reads, map(lstat, paths))) == recorded:
            return None
    except (OSError, ValueError):
        pass
    for path, read, values in zip(paths, reads, recorded, strict=True):
        try:
            st = lstat(path)
        except (OSError, ValueError):
            return f"{path} is gone"
        if read(st) != values:
            return f"directory {path} changed" if read is _read_directory else f"{path} changed"
    return f"the walk of {paths[-1]} changed while it was replayed"


#: Above every value of a stat field (each fits in 64 bits; ``stat.S_ISDIR`` and the like
#: take no more).
_STAT_LIMIT = 1 << 64


def component_from_json(value: Any) -> Component:
    """Parse one component of :meth:`Fingerprint.record_json`'s form; ValueError on any
    deviation."""
    if not isinstance(value, dict) or set(value) != set(_COMPONENT_FIELDS):
        raise ValueError(f"a component must be an object with exactly {list(_COMPONENT_FIELDS)}")
    numbers = [value[name] for name in _COMPONENT_FIELDS[1:-1]]
    if any(type(number) is not int or not 0 <= number < _STAT_LIMIT for number in numbers):
        raise ValueError("component attributes must be integers from 0 to 2**64 - 1")
    if type(value["hop"]) is not bool:
        raise ValueError("component hop must be a boolean")
    mode, uid, gid, dev, ino, size, mtime_ns, ctime_ns = numbers
    return Component(
        _path(value["path"]), mode, uid, gid, dev, ino, size, mtime_ns, ctime_ns, value["hop"]
    )
