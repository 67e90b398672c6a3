"""Discovery: every place the Codex CLI could be on this host, in order, explained.

Sources, in order: ``explicit`` (the caller's path), ``env`` (``LAUNCHER_PROBE_CODEX``;
empty counts as unset), ``config`` (``codex`` in the config file) — the operator's word:
the first of these present is the only candidate, even when invalid — then ``harness``
(the nearest ancestor process running the Codex CLI), ``standalone``, ``path`` and
``known`` install places (``host/places.py``). A place that does not exist is no
candidate; every place looked at is listed in ``searched``. Candidates resolving to the
same native file are merged: the first keeps its place, the others go to ``also_found_at``.

Every step is linear in what it reads (set membership, no rescans) and bounded: at most
``MAX_PATH_ENTRIES`` PATH entries and ``MAX_GLOB_MATCHES`` matches per glob place are
looked at; the remainder is reported in ``skipped`` with reason ``limit``.
"""

from __future__ import annotations

import os

from launcher_probe.contract import ENV_VAR, Source
from launcher_probe.host.discovery.candidate import EXECUTABLE, Candidate, make_candidate
from launcher_probe.json_output import printable
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MAX_PATH_ENTRIES",
    "STANDALONE_PACKAGE",
    "Discovery",
    "Search",
    "discover",
    "operator_choice",
]

#: PATH entries looked at (empty and relative ones included); the rest is ``skipped``.
MAX_PATH_ENTRIES = 1024
#: The standalone installer's packages live in ``$CODEX_HOME/packages/<this>/``.
STANDALONE_PACKAGE = "standalone"


class Discovery(Value):
    """Candidates in order, what was skipped (with why), and every place searched.

    ``skipped`` items are ``{"source", "entry", "reason"}``: reason ``empty`` or
    ``relative`` for a PATH entry or ``NAME=value`` of a location variable that was set
    (``HOME=value`` for every place under a relative HOME), ``limit`` for the remainder
    past a cap. ``searched`` items are ``{"source", "path"}`` (``path`` may hold a glob ``*``).
    ``patterns`` holds ``(source, path, pattern)`` of each glob place (``source`` and
    ``path`` as in ``searched``; the pattern that was matched, ``newest_matches``), for the
    discovery memo; it is no part of the JSON.
    """

    __slots__ = ("candidates", "skipped", "searched", "patterns")
    candidates: tuple[Candidate, ...]
    skipped: tuple[dict[str, str], ...]
    searched: tuple[dict[str, str], ...]
    patterns: tuple[tuple[str, str, str], ...]

    def __init__(
        self,
        candidates: tuple[Candidate, ...],
        skipped: tuple[dict[str, str], ...],
        searched: tuple[dict[str, str], ...] = (),
        patterns: tuple[tuple[str, str, str], ...] = (),
    ) -> None:
        super().__init__(
            candidates=candidates, skipped=skipped, searched=searched, patterns=patterns
        )

    @property
    def usable(self) -> tuple[Candidate, ...]:
        """The candidates that pass every path rule, in order."""
        return tuple(candidate for candidate in self.candidates if candidate.verdict.ok)

    def describe_searched(self, limit: int) -> str:
        """The places searched, in order and grouped by source, at most ``limit`` of them
        (then how many more), and how many entries were skipped."""
        shown: dict[str, list[str]] = {}
        for place in self.searched[:limit]:
            shown.setdefault(place["source"], []).append(place["path"])
        groups = "; ".join(
            f"{'PATH' if source == Source.PATH else source}: {', '.join(paths)}"
            for source, paths in shown.items()
        )
        text = f"searched {len(self.searched)} place(s): {groups}"
        if len(self.searched) > limit:
            text += f"; and {len(self.searched) - limit} more (resolve --json lists them)"
        if self.skipped:
            text += f"; {len(self.skipped)} entry(ies) skipped (discover lists them)"
        return text

    def to_json(self) -> dict[str, Any]:
        """``{"candidates": [...], "skipped": [...], "searched": [...]}``."""
        return {
            "candidates": [candidate.to_json() for candidate in self.candidates],
            "skipped": [dict(item) for item in self.skipped],
            "searched": [dict(item) for item in self.searched],
        }


def discover(codex: str | None = None) -> Discovery:
    """Every candidate in order; only the operator's one when explicit/env/config names one."""
    operator = operator_choice(codex)
    if operator is not None:
        source, path = operator
        searched = ({"source": str(source), "path": printable(path)},)
        return Discovery((make_candidate(source, path),), (), searched)
    from launcher_probe.host.discovery.harness import harness_candidate
    from launcher_probe.host.discovery.places import Locations

    search = Search()
    search.searched_place(Source.HARNESS, "ancestor processes")
    harness = harness_candidate()
    if harness is not None:
        search.add(harness)
    locations = Locations(search.skip)
    for place in locations.standalone():
        search.look(Source.STANDALONE, place)
    search.path_entries(os.environ.get("PATH", ""))
    for place, pattern in locations.known():
        search.look(Source.KNOWN, place, pattern=pattern)
    return search.result()


def operator_choice(codex: str | None) -> tuple[Source, str] | None:
    """``(source, path)`` of the operator's path: ``codex`` (``--codex``), else
    ``$LAUNCHER_PROBE_CODEX``, else the config file's ``codex``; None when there is none.
    ConfigError when the config file cannot be used."""
    if codex is not None:
        return Source.EXPLICIT, codex
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Source.ENV, from_env
    from launcher_probe.host.discovery.config_file import (
        configured_codex,  # platformdirs, tomllib: only now
    )

    configured = configured_codex()
    if configured is not None:
        return Source.CONFIG, configured
    return None


class Search:
    """Collects candidates (merged by native file), skipped entries and places searched;
    every check is a set or dict lookup, so the work is linear in the places given."""

    def __init__(self) -> None:
        self.candidates: list[Candidate] = []
        self.also_found: list[dict[tuple[Source, str], None]] = []
        self.index: dict[object, int] = {}
        self.skipped: dict[tuple[str, str, str], None] = {}
        self.searched: dict[tuple[str, str], None] = {}
        self.patterns: dict[tuple[str, str], str] = {}

    def result(self) -> Discovery:
        candidates = tuple(
            c.replace(also_found_at=tuple(also))
            for c, also in zip(self.candidates, self.also_found, strict=True)
        )
        skipped = tuple({"source": s, "entry": e, "reason": r} for s, e, r in self.skipped)
        searched = tuple({"source": s, "path": p} for s, p in self.searched)
        patterns = tuple((s, p, pattern) for (s, p), pattern in self.patterns.items())
        return Discovery(candidates, skipped, searched, patterns)

    def skip(self, source: Source, entry: str, reason: str) -> None:
        """Report ``entry`` (shown printable) as not looked at, once."""
        self.skipped.setdefault((str(source), printable(entry), reason), None)

    def searched_place(self, source: Source, place: str) -> bool:
        """Record ``place`` as searched; False when it already was."""
        key = (str(source), printable(place))
        if key in self.searched:
            return False
        self.searched[key] = None
        return True

    def look(self, source: Source, place: str, *, pattern: str | None = None) -> None:
        """Search one place: the path ``place``, or the matches of the glob ``pattern`` (in
        which any directory taken from the environment is escaped) that ``place`` shows,
        newest first, at most ``MAX_GLOB_MATCHES``. A relative place is skipped."""
        if not os.path.isabs(place):
            self.skip(source, place, "relative")
            return
        if not self.searched_place(source, place):
            return
        if pattern is None:
            if os.path.lexists(place):
                self.add(_labelled(make_candidate(source, place)))
            return
        from launcher_probe.host.native.newest import MAX_GLOB_MATCHES, newest_matches

        self.patterns.setdefault((str(source), printable(place)), pattern)
        matches, complete = newest_matches(pattern)
        if not complete:
            self.skip(source, f"{place} past {MAX_GLOB_MATCHES} matches", "limit")
        for match in matches:
            self.add(make_candidate(source, match))

    def path_entries(self, path: str) -> None:
        """``<entry>/codex`` for each absolute PATH entry, at most ``MAX_PATH_ENTRIES``."""
        entries = path.split(os.pathsep)
        for entry in entries[:MAX_PATH_ENTRIES]:
            if not entry or not os.path.isabs(entry):
                self.skip(Source.PATH, entry, "relative" if entry else "empty")
                continue
            self.look(Source.PATH, os.path.join(entry, EXECUTABLE))
        if len(entries) > MAX_PATH_ENTRIES:
            rest = len(entries) - MAX_PATH_ENTRIES
            self.skip(Source.PATH, f"{rest} entries after the first {MAX_PATH_ENTRIES}", "limit")

    def add(self, candidate: Candidate) -> None:
        """Append ``candidate``, or note its place on the earlier one with the same native."""
        key: object = candidate.resolved or (candidate.source, candidate.path)
        position = self.index.get(key)
        if position is None:
            self.index[key] = len(self.candidates)
            self.candidates.append(candidate)
            self.also_found.append({})
            return
        first = self.candidates[position]
        place = (candidate.source, candidate.path)
        if place != (first.source, first.path):
            self.also_found[position].setdefault(place, None)


def _labelled(candidate: Candidate) -> Candidate:
    """A ``standalone`` place (``~/.local/bin/codex``, say) holding something other than
    the standalone installer's package (pip, pipx, uv, an npm prefix) is labelled ``known``."""
    if candidate.source is not Source.STANDALONE:
        return candidate
    leads_to = candidate.resolved or os.path.realpath(candidate.path)
    if f"/packages/{STANDALONE_PACKAGE}/" in leads_to:
        return candidate
    return candidate.replace(source=Source.KNOWN)
