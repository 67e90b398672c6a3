"""Binary identity: what a verdict is bound to. Costs only ``stat`` calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """One hop (a symlink, a shim file, the native binary) as ``lstat`` saw it."""

    path: str
    realpath: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The identity of every hop from the path as found to the native binary."""

    hops: tuple[FileIdentity, ...]

    @classmethod
    def of(cls, path: str, native: str) -> Fingerprint:
        """Fingerprint ``path`` (as found) and every hop to ``native``; OSError if gone."""
        raise NotImplementedError  # issue 4

    def still_matches(self) -> bool:
        """True when every hop on disk is still the same file, unchanged."""
        raise NotImplementedError  # issue 4

    def to_json(self) -> list[dict[str, Any]]:
        raise NotImplementedError  # issue 4

    @classmethod
    def from_json(cls, value: Any) -> Fingerprint:
        raise NotImplementedError  # issue 4
