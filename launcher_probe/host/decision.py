"""The resolver's answer: publish the launcher, or withhold it with a reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from launcher_probe.contract import LauncherDescriptor, Reason
from launcher_probe.host.fingerprint import Fingerprint


@dataclass(frozen=True, slots=True)
class PassedOver:
    """A candidate the resolver tried and did not publish, and why."""

    source: str
    path: str
    resolved: str | None
    reason: Reason
    detail: str

    def to_json(self) -> dict[str, Any]:
        """``{"source", "path", "resolved", "reason", "detail"}``."""
        return {
            "source": self.source,
            "path": self.path,
            "resolved": self.resolved,
            "reason": str(self.reason),
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Published:
    """A verified launcher, bound to the fingerprint it was verified under."""

    descriptor: LauncherDescriptor
    source: str
    version: str
    fingerprint: Fingerprint
    from_cache: bool
    probed_at: float
    #: Problems met on the way that did not stop the decision (an untrusted cache, say).
    warnings: tuple[str, ...] = ()
    #: The candidates passed over before this one, in order.
    tried: tuple[PassedOver, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{"decision": "published", "launcher": {"codexExecutable": ...}, "source",
        "path", "resolved", ..., "tried": [...]}`` (docs/json.md)."""
        return {
            "decision": "published",
            "launcher": self.descriptor.to_json(),
            "source": self.source,
            "path": self.fingerprint.path,
            "resolved": self.descriptor.codex_executable,
            "version": self.version,
            "from_cache": self.from_cache,
            "probed_at": self.probed_at,
            "fingerprint": self.fingerprint.to_json(),
            "tried": [candidate.to_json() for candidate in self.tried],
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True, slots=True)
class Withheld:
    """No launcher: the deciding reason, and every candidate tried."""

    reason: Reason
    detail: str
    tried: tuple[PassedOver, ...] = ()
    #: Problems met on the way that did not decide the outcome.
    warnings: tuple[str, ...] = ()
    #: Every place discovery searched, ``{"source", "path"}`` as ``discover --json`` shows.
    searched: tuple[dict[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{"decision": "withheld", "reason", "detail", "tried": [...], "searched": [...],
        "warnings": [...]}``."""
        return {
            "decision": "withheld",
            "reason": str(self.reason),
            "detail": self.detail,
            "tried": [candidate.to_json() for candidate in self.tried],
            "searched": [dict(place) for place in self.searched],
            "warnings": list(self.warnings),
        }


Decision = Published | Withheld
