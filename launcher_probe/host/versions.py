"""The Codex CLI versions this release is tested against, and the warning a published
decision carries for a version outside them.

The probe verifies behaviour, not version numbers: a version outside the range that passes
it is still published, but the decision says so (``resolve`` prints it on stderr,
``resolve --json`` lists it in ``warnings``, ``doctor`` shows it).
"""

from __future__ import annotations

#: The oldest and the newest version the tests run against (``scripts/codex-versions``).
TESTED_RANGE = ("0.169.0", "0.171.0")

#: Warnings already worked out, by version (a host meets a handful of versions).
_KNOWN: dict[str, str | None] = {}
_KNOWN_LIMIT = 64


def _numbers(version: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:  # a pre-release or build suffix: not a version that was tested
        return None


def untested_version_warning(version: str) -> str | None:
    """The warning for ``version`` when it lies outside ``TESTED_RANGE``, else None."""
    if version in _KNOWN:
        return _KNOWN[version]
    oldest, newest = (_numbers(bound) for bound in TESTED_RANGE)
    numbers = _numbers(version)
    warning = None
    if numbers is None or oldest is None or newest is None or not oldest <= numbers <= newest:
        warning = (
            f"codex-cli {version} is outside the tested range "
            f"{TESTED_RANGE[0]}\u2013{TESTED_RANGE[1]}; it is published because it passed the "
            "probe, which checks what the sandbox does, not the version number"
        )
    if len(_KNOWN) < _KNOWN_LIMIT:
        _KNOWN[version] = warning
    return warning
