"""Discovery: every place the Codex CLI could be on this host, in order, explained."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from launcher_probe.host.paths import PathVerdict


class Source(enum.StrEnum):
    """Where a candidate came from; the first three are the operator's word."""

    EXPLICIT = "explicit"
    ENV = "env"
    CONFIG = "config"
    HARNESS = "harness"
    STANDALONE = "standalone"
    PATH = "path"
    KNOWN = "known"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A possible launcher: the path as found, the native binary it resolves to, its verdict."""

    source: Source
    path: str
    resolved: str | None
    verdict: PathVerdict
    also_found_at: tuple[tuple[Source, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError  # issue 2


@dataclass(frozen=True, slots=True)
class Discovery:
    """Candidates in order, and the PATH entries that were skipped (with why)."""

    candidates: tuple[Candidate, ...]
    skipped: tuple[dict[str, str], ...]

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError  # issue 2


def discover(codex: str | None = None) -> Discovery:
    """Every candidate in order; only the operator's one when explicit/env/config names one."""
    raise NotImplementedError  # issue 2
