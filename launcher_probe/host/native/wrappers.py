"""Generated wrapper scripts: shell scripts that ``exec`` the real program.

Two formats are recognised, by the last ``exec`` line of the script (read up to
``executables.SCRIPT_LIMIT`` bytes, split into words in linear time):

- a pass-through ``exec [-a NAME] "/abs/program" "$@"`` (Nix ``makeWrapper``, and
  hand-written wrappers of that shape): the target is ``/abs/program``;
- an asdf shim, ``exec [.../]asdf exec "codex" "$@"``: the target is
  ``$ASDF_DATA_DIR/installs/<plugin>/<version>/bin/codex`` for each
  ``# asdf-plugin: <plugin> <version>`` line of the shim, else the newest
  ``installs/nodejs/*/bin/codex``.
"""

from __future__ import annotations

import os

from launcher_probe.host.native.dispatchers import first_existing, homes, safe_name
from launcher_probe.host.native.file_kind import is_shell, shebang
from launcher_probe.host.native.shims import words
from launcher_probe.host.native.trail import Trail
from launcher_probe.value import Value

_PASS_THROUGH = ["$@"]


class Wrapped(Value):
    """A recognised wrapper: what it is, and the existing path it runs (None: missing)."""

    __slots__ = ("what", "target")
    what: str
    target: str | None

    def __init__(self, what: str, target: str | None) -> None:
        super().__init__(what=what, target=target)


def wrapper_target(found: str, real: str, head: bytes, trail: Trail) -> Wrapped | None:
    """What the wrapper script ``real`` (reached as ``found``) runs, or None when it is no
    shell script of a recognised format."""
    line = shebang(head)
    if line is None or not is_shell(line):
        return None
    lines = head.decode("utf-8", "surrogateescape").splitlines()
    command = next((w for w in map(words, reversed(lines)) if w[:1] == ["exec"]), None)
    if command is None:
        return None
    command = command[1:]
    if command[:1] == ["-a"]:  # exec -a NAME PROGRAM ...
        command = command[2:]
    asdf = command[:1] and os.path.basename(command[0]) == "asdf"
    if asdf and command[1:] == ["exec", "codex", *_PASS_THROUGH]:
        return Wrapped("an asdf shim", _asdf_install(found, lines, trail))
    program = command[0] if command else ""
    plain = program.startswith("/") and "$" not in program and "`" not in program
    if plain and command[1:] == _PASS_THROUGH:
        exists = trail.lexists(program)
        return Wrapped(f"a wrapper running {program}", program if exists else None)
    return None


def _asdf_install(found: str, lines: list[str], trail: Trail) -> str | None:
    """The ``codex`` of the asdf installs the shim names, or the newest nodejs one."""
    versions = []
    for text in lines:
        if text.startswith("# asdf-plugin:"):
            parts = text.split()[2:]
            if len(parts) == 2 and safe_name(parts[0]) and safe_name(parts[1]):
                versions.append((parts[0], parts[1]))
    for home in homes(found, "shims", "ASDF_DATA_DIR", ".asdf"):
        places = [f"{home}/installs/{plugin}/{version}/bin/codex" for plugin, version in versions]
        install = first_existing(places, trail)
        if install is not None:
            return install
        matches = trail.glob(home, "installs/nodejs/*/bin/codex")
        if matches:
            return matches[0]
    return None
