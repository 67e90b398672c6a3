"""A candidate: the path as found, the native binary it resolves to, its path-rule verdict.

Below the order of discovery (``order.py``), so that the harness and the install places
make candidates without importing the order that calls them.
"""

from __future__ import annotations

import os

from launcher_probe.contract import Reason, Source
from launcher_probe.host.paths.rules import PathVerdict, check_launcher_path
from launcher_probe.json_output import printable
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from launcher_probe.host.native.follow import NativeResolution

#: The Codex CLI's executable name.
EXECUTABLE = "codex"
#: Path-rule failures after which there is nothing to resolve.
_UNRESOLVABLE = (Reason.NOT_ABSOLUTE, Reason.NOT_UTF8, Reason.NOT_FOUND)


class Candidate(Value):
    """A possible launcher: the path as found, the native binary it resolves to, its verdict.

    ``verdict`` applies the path rules to the path as found (its symlink chain) and to the
    native binary a shim resolves to. ``resolved`` is None when nothing could be resolved;
    for a path that fails the path rules it is where its symlinks lead (never read).
    ``resolution`` is native resolution's answer for ``path`` (None when it was not
    followed): its trail is what ``resolved`` depends on, which the discovery memo traces.
    Like that trail in a NativeResolution, it is left out of equality.
    """

    __slots__ = ("source", "path", "resolved", "verdict", "also_found_at", "resolution")
    source: Source
    path: str
    resolved: str | None
    verdict: PathVerdict
    also_found_at: tuple[tuple[Source, str], ...]
    resolution: NativeResolution | None

    def __init__(
        self,
        source: Source,
        path: str,
        resolved: str | None,
        verdict: PathVerdict,
        also_found_at: tuple[tuple[Source, str], ...] = (),
        *,
        resolution: NativeResolution | None = None,
    ) -> None:
        super().__init__(
            source=source,
            path=path,
            resolved=resolved,
            verdict=verdict,
            also_found_at=also_found_at,
            resolution=resolution,
        )

    def _key(self) -> tuple[object, ...]:
        """What was found, not how: two candidates are equal whatever their resolutions."""
        return (self.source, self.path, self.resolved, self.verdict, self.also_found_at)

    def to_json(self) -> dict[str, Any]:
        """``{"source","path","resolved","ok","reason","detail","also_found_at"}``."""
        return {
            "source": str(self.source),
            "path": printable(self.path),
            "resolved": None if self.resolved is None else printable(self.resolved),
            "ok": self.verdict.ok,
            "reason": None if self.verdict.reason is None else str(self.verdict.reason),
            "detail": printable(self.verdict.detail),
            "also_found_at": [
                {"source": str(source), "path": printable(path)}
                for source, path in self.also_found_at
            ],
        }


def make_candidate(source: Source, path: str) -> Candidate:
    """Apply the path rules to ``path`` and, when it passes, follow it (through any shim,
    dispatcher or wrapper) to its native binary, which must pass them too. A path that
    fails is not read at all."""
    found = check_launcher_path(path)
    if found.reason in _UNRESOLVABLE:
        return Candidate(source, path, None, found)
    if not found.ok:
        return Candidate(source, path, os.path.realpath(path), found)
    from launcher_probe.host.native.follow import resolve_native

    resolution = resolve_native(path)
    if resolution.native is None:
        tried = ", ".join(printable(tried) for tried in resolution.tried)
        detail = f"{resolution.detail} (tried: {tried})" if tried else resolution.detail
        verdict = PathVerdict(False, resolution.reason, detail)
        return Candidate(source, path, None, verdict, resolution=resolution)
    if resolution.native == path:
        return Candidate(source, path, path, found, resolution=resolution)
    # The native binary is what gets published: it must pass on its own (UTF-8 included).
    verdict = check_launcher_path(resolution.native)
    return Candidate(source, path, resolution.native, verdict, resolution=resolution)
