"""Binary identity: what a verdict is bound to. Costs only ``lstat``/``readlink`` calls."""

from __future__ import annotations

import os
import stat
from dataclasses import asdict, dataclass
from typing import Any

#: Longest symlink chain followed (the kernel's own limit is 40).
MAX_HOPS = 40


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """One hop (a symlink, a shim file, the native binary) as ``lstat`` saw it.

    ``realpath`` is where the hop finally leads (the end of its chain).
    """

    path: str
    realpath: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, path: str, realpath: str, st: os.stat_result | None = None) -> FileIdentity:
        """One hop from its ``lstat`` result (taken now unless given); OSError when gone."""
        st = os.lstat(path) if st is None else st
        return cls(path, realpath, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def to_json(self) -> dict[str, Any]:
        """The hop as a JSON object (field names as above)."""
        return asdict(self)

    @classmethod
    def from_json(cls, value: Any) -> FileIdentity:
        """Parse :meth:`to_json`'s form; ValueError on any deviation."""
        if not isinstance(value, dict) or set(value) != _FIELDS:
            raise ValueError(f"a hop must be an object with exactly {sorted(_FIELDS)}")
        for name in ("path", "realpath"):
            if not isinstance(value[name], str) or not os.path.isabs(value[name]):
                raise ValueError(f"hop {name} must be an absolute path")
        for name in _FIELDS - {"path", "realpath"}:
            if type(value[name]) is not int:
                raise ValueError(f"hop {name} must be an integer")
        return cls(**value)


_FIELDS = frozenset(FileIdentity.__dataclass_fields__)


def _chain(path: str) -> list[FileIdentity]:
    """``path`` and every symlink hop after it, down to the file it names."""
    end = os.path.realpath(path)
    hops: list[FileIdentity] = []
    current = path
    for _ in range(MAX_HOPS):
        st = os.lstat(current)
        hops.append(FileIdentity.of(current, end, st))
        if not stat.S_ISLNK(st.st_mode):
            return hops
        current = os.path.join(os.path.dirname(current), os.readlink(current))
    raise OSError(f"more than {MAX_HOPS} symlinks from {path}")


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The identity of every hop from the path as found to the native binary.

    The last hop is always the native binary itself (its realpath). Two fingerprints
    are equal only when every hop is the same file, unchanged.
    """

    hops: tuple[FileIdentity, ...]

    @classmethod
    def of(cls, path: str, native: str) -> Fingerprint:
        """Fingerprint ``path`` (as found) and every hop to ``native``; OSError if gone.

        When ``path`` leads to a shim (a file other than ``native``), the shim's chain is
        followed by the native binary.
        """
        hops = _chain(path)
        native_real = os.path.realpath(native)
        if hops[-1].realpath != native_real:
            hops.append(FileIdentity.of(native_real, native_real))
        return cls(tuple(hops))

    @property
    def path(self) -> str:
        """The path as found (the first hop)."""
        return self.hops[0].path

    @property
    def native(self) -> str:
        """The native binary's realpath (the last hop)."""
        return self.hops[-1].realpath

    def still_matches(self) -> bool:
        """True when every hop on disk is still the same file, unchanged."""
        try:
            return Fingerprint.of(self.path, self.native) == self
        except (OSError, ValueError):
            return False

    def to_json(self) -> list[dict[str, Any]]:
        """The hops, first (the path as found) to last (the native binary)."""
        return [hop.to_json() for hop in self.hops]

    @classmethod
    def from_json(cls, value: Any) -> Fingerprint:
        """Parse :meth:`to_json`'s form; ValueError on any deviation."""
        if not isinstance(value, list) or not value or len(value) > MAX_HOPS + 1:
            raise ValueError("a fingerprint must be a non-empty list of hops")
        return cls(tuple(FileIdentity.from_json(hop) for hop in value))
