"""Path rules: the only paths that may ever be published as a launcher."""

from __future__ import annotations

from dataclasses import dataclass

from launcher_probe.contract import Reason


@dataclass(frozen=True, slots=True)
class PathVerdict:
    """Whether a path passes every rule; when not, the first failing rule and why."""

    ok: bool
    reason: Reason | None = None
    detail: str = ""


def check_launcher_path(path: str | bytes) -> PathVerdict:
    """Apply every path rule to ``path`` (absolute, UTF-8, regular, executable, safe)."""
    raise NotImplementedError  # issue 2
