"""Every candidate discovery finds, with its path-rule verdict and the fix when it fails."""

from __future__ import annotations

from typing import Any

from launcher_probe.doctor.fixes import fix_for


def collect(codex: str | None) -> dict[str, Any]:
    """``discover --json``'s object, each candidate with ``fix`` (empty when it passes)."""
    from launcher_probe.host.discovery.order import discover

    found = discover(codex)
    report = found.to_json()
    for item, candidate in zip(report["candidates"], found.candidates, strict=True):
        reason = candidate.verdict.reason
        item["fix"] = (
            [] if reason is None else fix_for(reason, candidate.verdict.detail, candidate.path)
        )
    return report
