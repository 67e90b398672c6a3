"""Sample sandbox states, of the shape Codex sends in ``_meta["codex/sandbox-state"]``.

A host author needs a state to try ``meta``, ``tool_call_meta`` or
``sandboxed_stdio_session`` with, and a server author one to send; these are what Codex
0.169.0 to 0.171.0 sends for a turn, with the working directory as the project:

- ``read-only``: everything readable, nothing writable, network restricted;
- ``workspace-write``: the same, plus the working directory, ``/tmp`` and ``$TMPDIR``
  writable (its ``.git``, ``.agents``, ``.codex`` and ``.aws`` stay read-only), network
  restricted.

``codexLinuxSandboxExe`` is left out: Codex sends a per-session symlink there that is
gone when that Codex exits. ``launcher-probe sample-state KIND [--cwd DIR]`` prints one.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

#: The kinds of sample state, in the order they are listed.
KINDS = ("read-only", "workspace-write")
#: Directories of the project Codex keeps read-only in a workspace-write turn.
_PROTECTED = (".git", ".agents", ".codex", ".aws")


def _special(kind: str, access: str) -> dict[str, Any]:
    return {"path": {"type": "special", "value": {"kind": kind}}, "access": access}


def _path(path: str, access: str, **more: str) -> dict[str, Any]:
    return {"path": {"type": "path", "path": path}, "access": access, **more}


def sample_state(kind: str, cwd: str | None = None) -> dict[str, Any]:
    """The sample state ``kind`` (one of ``KINDS``) for the working directory ``cwd``
    (default: the current one), made absolute. ValueError for another kind."""
    project = os.path.abspath(os.getcwd() if cwd is None else cwd)
    entries = [_special("root", "read")]
    if kind == "workspace-write":
        entries += [
            _path(project, "write"),
            _special("slash_tmp", "write"),
            _special("tmpdir", "write"),
            *(
                _path(os.path.join(project, name), "read", missing_path_behavior="skip")
                for name in _PROTECTED
            ),
        ]
    elif kind != "read-only":
        raise ValueError(f"no sample state {kind!r}: one of {', '.join(KINDS)}")
    return {
        "permissionProfile": {
            "type": "managed",
            "file_system": {"type": "restricted", "entries": entries},
            "network": "restricted",
        },
        "sandboxCwd": Path(project).as_uri(),
        "useLegacyLandlock": False,
        "useMxc": False,
    }
