"""The probe's verdict and its JSON form (what the cache stores).

Kept apart from the probe itself so that reading a cached verdict imports no
process machinery.
"""

from __future__ import annotations

import enum

from launcher_probe.contract import Reason
from launcher_probe.errors import InputRejected
from launcher_probe.host.bubblewrap import SOURCES, Bubblewrap
from launcher_probe.value import Value, finite

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _Enum = TypeVar("_Enum", bound=enum.Enum)

__all__ = [
    "DEFAULT_TIMEOUT",
    "PROBE_PROTOCOL_VERSION",
    "InvalidProbeResult",
    "ProbeLevel",
    "ProbeResult",
    "ProbeStep",
]

DEFAULT_TIMEOUT = 10.0
#: Bump when the probe's meaning changes, so cached verdicts are re-probed.
PROBE_PROTOCOL_VERSION = 1


class InvalidProbeResult(InputRejected, ValueError):
    """JSON that is not exactly the shape ``ProbeResult.to_json`` writes."""


class ProbeLevel(enum.StrEnum):
    CAPABILITY = "capability"
    ENFORCEMENT = "enforcement"


class ProbeStep(Value):
    """One process the probe ran, for diagnosis. ``exit_status`` is None when it was
    killed at the deadline or never started; ``-N`` when it died of signal N."""

    __slots__ = ("name", "argv", "exit_status", "stdout_excerpt", "stderr_excerpt")
    name: str
    argv: tuple[str, ...]
    exit_status: int | None
    stdout_excerpt: str
    stderr_excerpt: str

    def __init__(
        self,
        name: str,
        argv: tuple[str, ...],
        exit_status: int | None,
        stdout_excerpt: str,
        stderr_excerpt: str,
    ) -> None:
        super().__init__(
            name=name,
            argv=argv,
            exit_status=exit_status,
            stdout_excerpt=stdout_excerpt,
            stderr_excerpt=stderr_excerpt,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "argv": list(self.argv),
            "exit_status": self.exit_status,
            "stdout_excerpt": self.stdout_excerpt,
            "stderr_excerpt": self.stderr_excerpt,
        }

    @classmethod
    def from_json(cls, value: Any) -> ProbeStep:
        """Parse ``to_json`` output; InvalidProbeResult on any other shape."""
        fields = _object(value, "step", _STEP_KEYS)
        argv = fields.get("argv")
        if not isinstance(argv, list) or not all(isinstance(arg, str) for arg in argv):
            raise InvalidProbeResult("step argv must be a list of strings")
        return cls(
            name=_typed(fields, "name", str),
            argv=tuple(argv),
            exit_status=_typed(fields, "exit_status", int, optional=True),
            stdout_excerpt=_typed(fields, "stdout_excerpt", str),
            stderr_excerpt=_typed(fields, "stderr_excerpt", str),
        )


class ProbeResult(Value):
    """The verdict of one probe run. ``transient`` failures (timeout, resource exhaustion
    on spawn) may pass on a retry; any other failure repeats until the binary changes."""

    __slots__ = (
        "ok",
        "reason",
        "detail",
        "version",
        "level",
        "duration",
        "steps",
        "transient",
        "bubblewrap",
    )
    ok: bool
    reason: Reason | None
    detail: str
    version: str | None
    level: ProbeLevel
    duration: float
    steps: tuple[ProbeStep, ...]
    transient: bool
    #: The bubblewrap the probe's ``codex sandbox`` used (Linux; None elsewhere, and in a
    #: record written before it was recorded).
    bubblewrap: Bubblewrap | None

    def __init__(
        self,
        ok: bool,
        reason: Reason | None,
        detail: str,
        version: str | None,
        level: ProbeLevel,
        duration: float,
        steps: tuple[ProbeStep, ...],
        transient: bool,
        bubblewrap: Bubblewrap | None = None,
    ) -> None:
        super().__init__(
            ok=ok,
            reason=reason,
            detail=detail,
            version=version,
            level=level,
            duration=duration,
            steps=steps,
            transient=transient,
            bubblewrap=bubblewrap,
        )

    def to_json(self) -> dict[str, Any]:
        """The stable JSON shape (docs/json.md, ``probe``)."""
        return {
            "ok": self.ok,
            "reason": None if self.reason is None else self.reason.value,
            "detail": self.detail,
            "version": self.version,
            "level": self.level.value,
            "duration": self.duration,
            "transient": self.transient,
            "steps": [step.to_json() for step in self.steps],
            "bubblewrap": None if self.bubblewrap is None else self.bubblewrap.to_json(),
        }

    @classmethod
    def from_json(cls, value: Any) -> ProbeResult:
        """Parse ``to_json`` output (e.g. from a cache file): exactly its keys and types;
        InvalidProbeResult on any other shape. ``bubblewrap`` may be absent (a record
        written before it was recorded): None."""
        if isinstance(value, dict) and "bubblewrap" not in value:
            value = {**value, "bubblewrap": None}
        fields = _object(value, "probe result", _RESULT_KEYS)
        steps = fields.get("steps")
        if not isinstance(steps, list):
            raise InvalidProbeResult("probe result steps must be a list")
        reason = _typed(fields, "reason", str, optional=True)
        duration = fields.get("duration")
        if isinstance(duration, bool) or not isinstance(duration, int | float):
            raise InvalidProbeResult("probe result duration must be a number")
        if not finite(duration) or duration < 0:
            raise InvalidProbeResult("probe result duration must be finite and not negative")
        ok = _typed(fields, "ok", bool)
        if ok != (reason is None):
            raise InvalidProbeResult("a probe result has a reason exactly when it failed")
        return cls(
            ok=ok,
            reason=None if reason is None else _member(Reason, reason),
            detail=_typed(fields, "detail", str),
            version=_typed(fields, "version", str, optional=True),
            level=_member(ProbeLevel, _typed(fields, "level", str)),
            duration=float(duration),
            steps=tuple(ProbeStep.from_json(step) for step in steps),
            transient=_typed(fields, "transient", bool),
            bubblewrap=_bubblewrap(fields["bubblewrap"]),
        )


_STEP_KEYS = frozenset(ProbeStep.__slots__)
_RESULT_KEYS = frozenset(ProbeResult.__slots__)
_BUBBLEWRAP_KEYS = frozenset(Bubblewrap.__slots__)
_HEX_DIGITS = "0123456789abcdef"


def _object(value: Any, what: str, keys: frozenset[str]) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) != keys:
        raise InvalidProbeResult(f"{what} must be a JSON object with exactly {sorted(keys)}")
    return value


def _bubblewrap(value: Any) -> Bubblewrap | None:
    if value is None:
        return None
    fields = _object(value, "bubblewrap", _BUBBLEWRAP_KEYS)
    source = _typed(fields, "source", str)
    path = _typed(fields, "path", str, optional=True)
    sha256 = _typed(fields, "sha256", str, optional=True)
    if source not in SOURCES or (source == "missing") != (path is None):
        raise InvalidProbeResult("bubblewrap: path or bundled with a path, or missing without")
    if sha256 is not None and (len(sha256) != 64 or sha256.strip(_HEX_DIGITS)):
        raise InvalidProbeResult("bubblewrap sha256 must be 64 lowercase hex digits or null")
    if path is None and sha256 is not None:
        raise InvalidProbeResult("a missing bubblewrap has no sha256")
    return Bubblewrap(source, path, sha256)


def _member(kind: type[_Enum], value: str) -> _Enum:
    try:
        return kind(value)
    except ValueError as error:
        raise InvalidProbeResult(f"unknown {kind.__name__} {value!r}") from error


def _typed(fields: dict[str, Any], key: str, kind: type, *, optional: bool = False) -> Any:
    value = fields.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidProbeResult(f"{key!r} must be {kind.__name__}{' or null' if optional else ''}")
    return value
