"""The one exception hierarchy; each class carries the CLI exit code it maps to and the
reason code of its JSON error report (``{"error": {"reason", "detail"}}``, docs/json.md)."""

from __future__ import annotations

import enum

__all__ = [
    "ConfigError",
    "ExitCode",
    "InputRejected",
    "LauncherProbeError",
    "NothingUsable",
    "UsageError",
]


class ExitCode(enum.IntEnum):
    """Exit codes shared by every command."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    WITHHELD = 3
    REFUSED = 4


class LauncherProbeError(Exception):
    """Base of every error launcher-probe raises on purpose."""

    exit_code = ExitCode.INTERNAL
    #: The stable reason code (a subclass or an instance may be more precise).
    reason = "internal_error"
    #: Lines the CLI says after the error's own (how to mend it); not in the JSON report.
    hints: tuple[str, ...] = ()


class UsageError(LauncherProbeError):
    """The command line itself is wrong."""

    exit_code = ExitCode.USAGE
    reason = "usage_error"


class NothingUsable(LauncherProbeError):
    """No candidate passed; the launcher is withheld (``hints``: what to do about it)."""

    exit_code = ExitCode.WITHHELD
    reason = "nothing_usable"

    def __init__(self, message: str, *, hints: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.hints = hints


class InputRejected(LauncherProbeError):
    """Input (a path, a config file, ``_meta``) was rejected; fail closed."""

    exit_code = ExitCode.REFUSED
    reason = "input_rejected"


class ConfigError(InputRejected):
    """The operator's configuration file is malformed."""

    reason = "config_rejected"
