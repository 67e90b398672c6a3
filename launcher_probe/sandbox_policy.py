"""A sandbox policy (read-only or workspace-write, the workspace, more writable roots, the
network) as the sandbox state Codex itself sends for a thread with the same setting: the
proxy's and wrap's ``--sandbox``/``--cwd``/``--writable-root``/``--network``, and the sample
states (``launcher-probe sample-state KIND``) a host or server author tries things with.

``codexLinuxSandboxExe`` is left out: Codex sends a per-session symlink there that is gone
when that Codex exits, and no forwarder should rely on it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from launcher_probe.errors import UsageError
from launcher_probe.json_output import dumps_utf8
from launcher_probe.state import SandboxState

__all__ = ["MODES", "READ_ONLY", "WORKSPACE_WRITE", "Policy", "absolute_directory", "sample_state"]

READ_ONLY = "read-only"
WORKSPACE_WRITE = "workspace-write"
#: The modes, in the order they are listed (also the kinds of sample state).
MODES = (READ_ONLY, WORKSPACE_WRITE)
#: Under each writable root, what a workspace-write thread of Codex keeps read-only.
PROTECTED = (".git", ".agents", ".codex", ".aws")


def _special(kind: str, access: str) -> dict[str, Any]:
    return {"path": {"type": "special", "value": {"kind": kind}}, "access": access}


def _path(path: str, access: str, **extra: str) -> dict[str, Any]:
    return {"path": {"type": "path", "path": path}, "access": access, **extra}


def absolute_directory(option: str, given: str, where: str | None = None) -> str:
    """``given`` made absolute from ``where`` (the working directory by default; not
    resolved: the operator's spelling stays), valid UTF-8; UsageError otherwise, and for an
    empty one (an empty variable in a host's configuration would name the current one)."""
    if not given:
        raise UsageError(f"{option} must not be empty")
    path = os.path.normpath(os.path.join(os.getcwd() if where is None else where, given))
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{option} must be a path in UTF-8") from None
    return path


@dataclass(frozen=True, slots=True)
class Policy:
    """What the command is allowed when the host sends no state of its own."""

    sandbox: str = READ_ONLY
    cwd: str = "/"
    writable_roots: tuple[str, ...] = ()
    network: bool = False

    def __post_init__(self) -> None:
        if self.sandbox not in MODES:
            raise UsageError(f"--sandbox must be one of {', '.join(MODES)}")
        if self.writable_roots and self.sandbox != WORKSPACE_WRITE:
            raise UsageError("--writable-root needs --sandbox workspace-write")
        for path in (self.cwd, *self.writable_roots):
            if not os.path.isabs(path):
                raise UsageError(f"not an absolute directory: {path!r}")

    def entries(self) -> list[dict[str, Any]]:
        """The file-system entries, in the order Codex lists them."""
        entries = [_special("root", "read")]
        if self.sandbox == READ_ONLY:
            return entries
        roots = list(dict.fromkeys((self.cwd, *self.writable_roots)))
        entries += [_path(root, "write") for root in roots]
        entries += [_special("slash_tmp", "write"), _special("tmpdir", "write")]
        for root in roots:
            for name in PROTECTED:
                entries.append(
                    _path(os.path.join(root, name), "read", missing_path_behavior="skip")
                )
        return entries

    def value(self) -> dict[str, Any]:
        """The state as Codex sends it (without ``codexLinuxSandboxExe``)."""
        return {
            "permissionProfile": {
                "type": "managed",
                "file_system": {"type": "restricted", "entries": self.entries()},
                "network": "enabled" if self.network else "restricted",
            },
            "sandboxCwd": Path(self.cwd).as_uri(),
            "useLegacyLandlock": False,
            "useMxc": False,
        }

    def state(self) -> SandboxState:
        """The state, as compact JSON text."""
        return SandboxState.from_text(dumps_utf8(self.value(), separators=(",", ":")))


def sample_state(kind: str, cwd: str | None = None) -> dict[str, Any]:
    """The state of mode ``kind`` (one of ``MODES``) for the workspace ``cwd`` (default: the
    current directory), made absolute; UsageError for another kind."""
    project = os.path.abspath(os.getcwd() if cwd is None else cwd)
    return Policy(kind, project).value()
