"""The resolver's answer: publish the launcher, or withhold it with a reason."""

from __future__ import annotations

from launcher_probe.contract import LauncherDescriptor
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from launcher_probe.contract import Reason
    from launcher_probe.host.paths.fingerprint import Fingerprint


__all__ = ["Decision", "PassedOver", "Published", "Withheld"]


class Published(Value):
    """A verified launcher, bound to the fingerprint it was verified under."""

    __slots__ = (
        "descriptor",
        "source",
        "version",
        "fingerprint",
        "from_cache",
        "probed_at",
        "warnings",
        "tried",
    )
    descriptor: LauncherDescriptor
    source: str
    version: str
    fingerprint: Fingerprint
    from_cache: bool
    probed_at: float
    #: Problems met on the way that did not stop the decision (an untrusted cache, say).
    warnings: tuple[str, ...]
    #: The candidates passed over before this one, in order.
    tried: tuple[PassedOver, ...]

    def __init__(
        self,
        descriptor: LauncherDescriptor,
        source: str,
        version: str,
        fingerprint: Fingerprint,
        from_cache: bool,
        probed_at: float,
        warnings: tuple[str, ...] = (),
        tried: tuple[PassedOver, ...] = (),
    ) -> None:
        super().__init__(
            descriptor=descriptor,
            source=source,
            version=version,
            fingerprint=fingerprint,
            from_cache=from_cache,
            probed_at=probed_at,
            warnings=warnings,
            tried=tried,
        )

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


class PassedOver(Value):
    """A candidate the resolver tried and did not publish, and why."""

    __slots__ = ("source", "path", "resolved", "reason", "detail")
    source: str
    path: str
    resolved: str | None
    reason: Reason
    detail: str

    def __init__(
        self, source: str, path: str, resolved: str | None, reason: Reason, detail: str
    ) -> None:
        super().__init__(source=source, path=path, resolved=resolved, reason=reason, detail=detail)

    def to_json(self) -> dict[str, Any]:
        """``{"source", "path", "resolved", "reason", "detail"}``."""
        return {
            "source": self.source,
            "path": self.path,
            "resolved": self.resolved,
            "reason": str(self.reason),
            "detail": self.detail,
        }


class Withheld(Value):
    """No launcher: the deciding reason, and every candidate tried."""

    __slots__ = ("reason", "detail", "tried", "warnings", "searched")
    reason: Reason
    detail: str
    tried: tuple[PassedOver, ...]
    #: Problems met on the way that did not decide the outcome.
    warnings: tuple[str, ...]
    #: Every place discovery searched, ``{"source", "path"}`` as ``discover --json`` shows.
    searched: tuple[dict[str, str], ...]

    def __init__(
        self,
        reason: Reason,
        detail: str,
        tried: tuple[PassedOver, ...] = (),
        warnings: tuple[str, ...] = (),
        searched: tuple[dict[str, str], ...] = (),
    ) -> None:
        super().__init__(
            reason=reason, detail=detail, tried=tried, warnings=warnings, searched=searched
        )

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


#: What the resolver decides.
Decision = Published | Withheld
