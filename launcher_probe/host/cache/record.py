"""One cached verdict and its on-disk JSON form, parsed trusting nothing."""

from __future__ import annotations

from launcher_probe import __version__
from launcher_probe.contract import LauncherDescriptor
from launcher_probe.host.decision import Published
from launcher_probe.host.paths.fingerprint import Fingerprint
from launcher_probe.host.probe_result import PROBE_PROTOCOL_VERSION, ProbeResult
from launcher_probe.value import Value, finite

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SCHEMA_VERSION", "CacheRecord", "Lifetimes"]

#: Version of the record format and of the directory layout (``v2``: the fingerprint is
#: the whole walk the path rules judge).
SCHEMA_VERSION = 2


class CacheRecord(Value):
    """One cached verdict, bound to this host, the path as found and its fingerprint."""

    __slots__ = (
        "host_id",
        "fingerprint",
        "result",
        "probed_at",
        "expires_at",
        "launcher_probe_version",
        "probe_protocol",
    )
    host_id: str
    fingerprint: Fingerprint
    result: ProbeResult
    probed_at: float
    expires_at: float
    launcher_probe_version: str
    probe_protocol: int

    def __init__(
        self,
        host_id: str,
        fingerprint: Fingerprint,
        result: ProbeResult,
        probed_at: float,
        expires_at: float,
        launcher_probe_version: str = __version__,
        probe_protocol: int = PROBE_PROTOCOL_VERSION,
    ) -> None:
        super().__init__(
            host_id=host_id,
            fingerprint=fingerprint,
            result=result,
            probed_at=probed_at,
            expires_at=expires_at,
            launcher_probe_version=launcher_probe_version,
            probe_protocol=probe_protocol,
        )

    @property
    def path(self) -> str:
        """The path as found."""
        return self.fingerprint.path

    def published(self, source: str) -> Published:
        """The decision this passed verdict gives for its path, found through ``source``
        (whoever serves it has checked that it may: see :meth:`Lifetimes.publishable`)."""
        return Published(
            descriptor=LauncherDescriptor(self.fingerprint.native),
            source=source,
            version=self.result.version or "",
            fingerprint=self.fingerprint,
            from_cache=True,
            probed_at=self.probed_at,
        )

    def to_json(self) -> dict[str, Any]:
        """The on-disk form."""
        return {
            "schema": SCHEMA_VERSION,
            "launcher_probe_version": self.launcher_probe_version,
            "probe_protocol": self.probe_protocol,
            "host_id": self.host_id,
            "path": self.path,
            "fingerprint": self.fingerprint.record_json(),
            "result": self.result.to_json(),
            "probed_at": self.probed_at,
            "expires_at": self.expires_at,
        }

    @classmethod
    def from_json(cls, value: Any) -> CacheRecord:
        """Parse the on-disk form; ValueError (or TypeError, KeyError, OverflowError) on any
        deviation, a path that is not UTF-8 text included."""
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
        schema = value.get("schema")
        if type(schema) is not int or schema != SCHEMA_VERSION:
            raise ValueError(f"unknown schema {schema!r}")
        for name in ("host_id", "path", "launcher_probe_version"):
            if not isinstance(value.get(name), str):
                raise ValueError(f"{name} must be a string")
            value[name].encode("utf-8")  # a lone surrogate is no text
        for name in ("probed_at", "expires_at"):
            moment = value.get(name)
            if isinstance(moment, bool) or not isinstance(moment, int | float):
                raise ValueError(f"{name} must be a number")
            if not finite(moment):
                raise ValueError(f"{name} must be a finite number")
        if type(value.get("probe_protocol")) is not int:
            raise ValueError("probe_protocol must be an integer")
        fingerprint = Fingerprint.from_record_json(value["fingerprint"])
        if fingerprint.path != value["path"]:
            raise ValueError("the fingerprint is of another path")
        return cls(
            host_id=value["host_id"],
            fingerprint=fingerprint,
            result=ProbeResult.from_json(value["result"]),
            probed_at=float(value["probed_at"]),
            expires_at=float(value["expires_at"]),
            launcher_probe_version=value["launcher_probe_version"],
            probe_protocol=value["probe_protocol"],
        )


class Lifetimes(Value):
    """How long a verdict may be used, in seconds, by kind of verdict."""

    __slots__ = ("passed", "permanent_failure", "transient_failure")
    passed: float
    permanent_failure: float
    transient_failure: float

    def __init__(
        self,
        passed: float = 24 * 3600.0,
        permanent_failure: float = 3600.0,
        transient_failure: float = 30.0,
    ) -> None:
        super().__init__(
            passed=passed, permanent_failure=permanent_failure, transient_failure=transient_failure
        )

    def of(self, result: ProbeResult) -> float:
        """The lifetime of ``result``."""
        if result.ok:
            return self.passed
        return self.transient_failure if result.transient else self.permanent_failure

    def fresh(self, record: CacheRecord, now: float) -> bool:
        """True when ``record`` may still be used at ``now``: of this probe protocol,
        probed no later than now, and within both its own expiry and these lifetimes."""
        return (
            record.probe_protocol == PROBE_PROTOCOL_VERSION
            and record.probed_at <= now < record.expires_at
            and now < record.probed_at + self.of(record.result)
        )

    def publishable(self, record: CacheRecord, now: float) -> bool:
        """True when ``record`` may be published as it is: a passed verdict, fresh at
        ``now``, whose fingerprint still matches the disk (one ``lstat`` per component)."""
        return record.result.ok and self.fresh(record, now) and record.fingerprint.still_matches()
