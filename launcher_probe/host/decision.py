"""The resolver's answer: publish the launcher, or withhold it with a reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from launcher_probe.contract import LauncherDescriptor, Reason
from launcher_probe.host.fingerprint import Fingerprint


@dataclass(frozen=True, slots=True)
class Published:
    """A verified launcher, bound to the fingerprint it was verified under."""

    descriptor: LauncherDescriptor
    source: str
    version: str
    fingerprint: Fingerprint
    from_cache: bool
    probed_at: float

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError  # issue 4


@dataclass(frozen=True, slots=True)
class PassedOver:
    """A candidate the resolver tried and did not publish, and why."""

    source: str
    path: str
    resolved: str | None
    reason: Reason
    detail: str


@dataclass(frozen=True, slots=True)
class Withheld:
    """No launcher: the deciding reason, and every candidate tried."""

    reason: Reason
    detail: str
    tried: tuple[PassedOver, ...] = ()

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError  # issue 4


Decision = Published | Withheld
