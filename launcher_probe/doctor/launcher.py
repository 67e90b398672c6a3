"""The decision (``resolve_launcher``), the probe behind it and its cached verdict.

For the launcher that would be published, or the first candidate the probe failed, it
shows the probe's steps, version, duration and the failing step's output, and the state of
its record in the verdict cache (fresh, stale or missing; age; expiry).
"""

from __future__ import annotations

import time
from typing import Any

from launcher_probe.contract import SANDBOX_STATE_CAPABILITY, Reason
from launcher_probe.doctor.fixes import withheld_fix
from launcher_probe.host.decision import Decision, Published
from launcher_probe.json_output import printable
from launcher_probe.sandbox_policy import sample_state

#: A sandbox state like the one Codex sends for a read-only turn. The injector needs one
#: to say what a server would receive; its content does not change the launcher verdict.
EXAMPLE_STATE: dict[str, Any] = sample_state("read-only", "/")

#: Reasons a probe gives: the candidate was probed, so its verdict is in the cache.
PROBE_REASONS = frozenset(
    {
        Reason.NOT_CODEX,
        Reason.SANDBOX_UNSUPPORTED,
        Reason.SANDBOX_UNAVAILABLE,
        Reason.PROBE_TIMEOUT,
        Reason.SPAWN_FAILED,
        Reason.PROBE_FAILED,
    }
)


def collect(codex: str | None, *, timeout: float) -> tuple[Decision, dict[str, Any]]:
    """The decision and its part: ``Decision.to_json()`` plus ``probe`` (the recorded
    ``ProbeResult.to_json()`` with ``failed_step``, or null), ``cache`` (or null when
    nothing was probed), ``meta`` (the ``_meta`` a capable stdio server would receive) and
    ``fix``. ConfigError as ``resolve_launcher`` raises it."""
    from launcher_probe.host.resolver import resolve_launcher

    decision = resolve_launcher(codex, timeout=timeout)
    part = decision.to_json()
    if isinstance(decision, Published):
        focus: str | None = decision.fingerprint.path
        part["fix"] = []
    else:
        probed = [item for item in decision.tried if item.reason in PROBE_REASONS]
        focus = probed[0].path if probed else None
        part["fix"] = withheld_fix(decision)
    part["probe"], part["cache"] = (None, None) if focus is None else _recorded(focus)
    part["meta"] = capable_server_meta(decision)
    return decision, part


def capable_server_meta(decision: Decision) -> dict[str, Any]:
    """The ``tools/call`` ``_meta`` a stdio server advertising the capability would receive
    under ``decision``, built by the injector itself."""
    from launcher_probe.host.inject import ServerDescription, Transport, tool_call_meta

    server = ServerDescription("capable", Transport.STDIO, {SANDBOX_STATE_CAPABILITY: {}})
    return tool_call_meta(server, sandbox_state=EXAMPLE_STATE, launcher=decision).meta


def _recorded(path: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The probe result recorded for ``path`` (as found) and the record's cache state."""
    from launcher_probe.host.cache.policy import CacheUnavailable, VerdictCache

    state: dict[str, Any] = dict.fromkeys(
        ("state", "file", "why", "age", "probed_at", "expires_at", "expires_in")
    )
    try:
        cache = VerdictCache()
    except CacheUnavailable as error:
        return None, {**state, "state": "unavailable", "why": str(error)}
    read = cache.disk.read(cache.record_file(path))
    state["file"] = printable(str(read.file))
    record = read.record
    if record is None:
        return None, {**state, "state": "missing", "why": read.problem}
    now = time.time()
    why = cache.staleness(record, now)
    probe = record.result.to_json()
    probe["failed_step"] = None if record.result.ok or not probe["steps"] else probe["steps"][-1]
    return probe, {
        **state,
        "state": "fresh" if why is None else "stale",
        "why": why,
        "age": round(now - record.probed_at, 3),
        "probed_at": record.probed_at,
        "expires_at": record.expires_at,
        "expires_in": round(record.expires_at - now, 3),
    }
