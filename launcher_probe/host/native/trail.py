"""What native resolution looked at, kept by the one object every look goes through.

Following a path to its native binary (``follow.py``) resolves, tests and reads files
through a :class:`Trail`: each path resolved (``realpath``), tested (``isfile``,
``lexists``) or read is kept in :attr:`Trail.looked`, the places worth naming to the
operator in :attr:`Trail.tried`, and a glob sets :attr:`Trail.listed`. The answer depends
on nothing else but the environment and the host, so the discovery memo replays the
trace of ``looked`` (``paths/trace.py``) instead of resolving again; a listing it cannot
replay.
"""

from __future__ import annotations

import os

from launcher_probe.host.native.file_kind import read_head
from launcher_probe.host.native.newest import newest_matches
from launcher_probe.host.paths.rules import open_regular_file


class Trail:
    """The paths looked at (in order, each once), those tried, and whether a directory
    was listed."""

    __slots__ = ("looked", "tried", "listed")

    def __init__(self) -> None:
        self.looked: dict[str, None] = {}
        self.tried: list[str] = []
        self.listed = False

    def realpath(self, path: str) -> str:
        """``os.path.realpath(path)``."""
        self.looked.setdefault(path)
        return os.path.realpath(path)

    def isfile(self, path: str) -> bool:
        """``os.path.isfile(path)``, ``path`` tried."""
        self.tried.append(path)
        self.looked.setdefault(path)
        return os.path.isfile(path)

    def lexists(self, path: str) -> bool:
        """``os.path.lexists(path)``, ``path`` tried."""
        self.tried.append(path)
        self.looked.setdefault(path)
        return os.path.lexists(path)

    def head(self, path: str) -> bytes:
        """``file_kind.read_head(path)``: the first bytes of a regular file, else b""."""
        self.looked.setdefault(path)
        return read_head(path)

    def read(self, path: str, limit: int) -> bytes:
        """At most ``limit`` bytes of the regular file ``path``; OSError otherwise."""
        self.looked.setdefault(path)
        with open_regular_file(path) as file:
            return file.read(limit)

    def glob(self, directory: str, wildcard: str) -> list[str]:
        """The matches of ``wildcard`` under ``directory`` (taken literally), newest first
        (``newest.newest_matches``); the pattern tried."""
        import glob  # a glob place only: off the path of a native binary named outright

        self.tried.append(f"{directory}/{wildcard}")
        self.listed = True
        return newest_matches(f"{glob.escape(directory)}/{wildcard}")[0]
