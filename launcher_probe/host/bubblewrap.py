"""Which bubblewrap a Linux ``codex sandbox`` uses, as the probe ran it, and its identity.

Codex (0.169.0 and 0.171.0, checked with the real CLI) takes the first ``bwrap`` on its
``PATH`` (an entry outside its working directory; a relative entry is inside it), else
the bundled one: ``codex-resources/bwrap`` beside its own executable, then one directory
up (the npm layout's ``bin/codex`` with ``codex-resources/`` beside ``bin/``); a bundled
one must have the SHA-256 that Codex carries, or ``codex sandbox`` refuses it. Elsewhere
(macOS: Seatbelt) there is none.
"""

from __future__ import annotations

import os
import stat
import sys

from launcher_probe.value import Value

#: A ``bwrap`` larger than this is not hashed (bubblewrap is about 500 KB).
MAX_HASHED_BYTES = 64 << 20
SOURCES = ("path", "bundled", "missing")


class Bubblewrap(Value):
    """``source``: ``path`` (found on the probe's ``PATH``), ``bundled`` (beside Codex) or
    ``missing``; ``path`` where it was found (None when missing); ``sha256`` of its
    content (None when missing, unreadable or over ``MAX_HASHED_BYTES``)."""

    __slots__ = ("source", "path", "sha256")
    source: str
    path: str | None
    sha256: str | None

    def __init__(self, source: str, path: str | None, sha256: str | None) -> None:
        super().__init__(source=source, path=path, sha256=sha256)

    def to_json(self) -> dict[str, str | None]:
        return {"source": self.source, "path": self.path, "sha256": self.sha256}

    def describe(self) -> str:
        """One line: ``bundled /x/codex-resources/bwrap (sha256 91a2...)``."""
        if self.path is None:
            return "missing: no bwrap on PATH and none bundled beside codex"
        digest = "unhashed" if self.sha256 is None else f"sha256 {self.sha256}"
        return f"{self.source} {self.path} ({digest})"


def bubblewrap_for(codex: str, search_path: str, cwd: str) -> Bubblewrap | None:
    """The bubblewrap ``codex sandbox`` of the native binary ``codex`` takes with
    ``PATH=search_path`` in ``cwd``; None off Linux."""
    if sys.platform != "linux":
        return None
    inside = os.path.join(os.path.realpath(cwd), "")
    for entry in search_path.split(os.pathsep):
        if not os.path.isabs(entry) or os.path.join(os.path.realpath(entry), "").startswith(inside):
            continue
        candidate = os.path.join(entry, "bwrap")
        if _executable_file(candidate):
            return Bubblewrap("path", candidate, _sha256(candidate))
    here = os.path.dirname(os.path.realpath(codex))
    for directory in (here, os.path.dirname(here)):
        candidate = os.path.join(directory, "codex-resources", "bwrap")
        if _executable_file(candidate):
            return Bubblewrap("bundled", candidate, _sha256(candidate))
    return Bubblewrap("missing", None, None)


def _executable_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode) and os.access(path, os.X_OK)
    except (OSError, ValueError):
        return False


def _sha256(path: str) -> str | None:
    import hashlib

    try:
        with open(path, "rb") as file:
            data = file.read(MAX_HASHED_BYTES + 1)
    except OSError:
        return None
    return None if len(data) > MAX_HASHED_BYTES else hashlib.sha256(data).hexdigest()
