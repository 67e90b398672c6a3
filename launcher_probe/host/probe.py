"""The verification probe: is this a full Codex CLI whose sandbox works on this host?"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from launcher_probe.contract import Reason

DEFAULT_TIMEOUT = 10.0
#: Bump when the probe's meaning changes, so cached verdicts are re-probed.
PROBE_PROTOCOL_VERSION = 1


class ProbeLevel(enum.StrEnum):
    CAPABILITY = "capability"
    ENFORCEMENT = "enforcement"


@dataclass(frozen=True, slots=True)
class ProbeStep:
    """One process the probe ran, for diagnosis."""

    name: str
    argv: tuple[str, ...]
    exit_status: int | None
    stdout_excerpt: str
    stderr_excerpt: str


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """The verdict of one probe run."""

    ok: bool
    reason: Reason | None
    detail: str
    version: str | None
    level: ProbeLevel
    duration: float
    steps: tuple[ProbeStep, ...]
    transient: bool

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError  # issue 3

    @classmethod
    def from_json(cls, value: Any) -> ProbeResult:
        raise NotImplementedError  # issue 3


def probe_launcher(
    path: str, *, timeout: float = DEFAULT_TIMEOUT, level: ProbeLevel = ProbeLevel.CAPABILITY
) -> ProbeResult:
    """Probe the native binary at ``path`` within one deadline of ``timeout`` seconds."""
    raise NotImplementedError  # issue 3
