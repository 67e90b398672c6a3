"""Dispatchers: one native executable that runs the tool named by ``argv[0]``.

Volta's ``volta-shim``, mise (``mise``, formerly ``rtx``) and Vite+'s ``vp`` are linked as
``codex`` into their shim directories. Such a file is never Codex: it is followed to the
package its tool manager installed (where ``codex`` then is an npm shim):

- Volta: ``$VOLTA_HOME/tools/image/packages/@openai/codex/bin/codex``;
- mise: ``$MISE_DATA_DIR/installs/{node,npm-openai-codex}/<version>/bin/codex``, newest first;
- Vite+: ``$VP_HOME/packages/@openai/codex.json`` names the ``installId`` whose
  ``packages/@openai/codex/<installId>/[lib/]node_modules/@openai/codex/bin/codex.js``
  is the package (as Codex's own Node shim finds a Vite+ install).

The tool's home is the shim directory's parent first, then its variable, then its default.
"""

from __future__ import annotations

import os
import re

from launcher_probe.host.native.trail import Trail
from launcher_probe.json_core import loads

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

#: Bytes of Vite+'s package record read.
_RECORD_LIMIT = 64 * 1024
#: A pattern, compiled on its first use (every native file is checked for a dispatcher,
#: few are one).
_SAFE_NAME = r"[A-Za-z0-9._+-]{1,128}"


def homes(found: str, shim_dir: str, variable: str, default: str) -> list[str]:
    """A tool manager's home directories to look in, most specific first (absolute only):
    the parent of the shim directory ``found`` sits in (when it is named ``shim_dir``),
    ``$variable``, then ``default`` under HOME."""
    listed: dict[str, None] = {}
    parent = os.path.dirname(found)
    if os.path.basename(parent) == shim_dir:
        listed.setdefault(os.path.dirname(parent))
    listed.setdefault(os.environ.get(variable) or "")
    listed.setdefault(os.path.join(os.path.expanduser("~"), default))
    return [home for home in listed if os.path.isabs(home)]


def safe_name(text: object) -> str | None:
    """``text`` when it is a plain file name (no separator, not ``.``/``..``)."""
    if isinstance(text, str) and re.fullmatch(_SAFE_NAME, text) and text not in (".", ".."):
        return text
    return None


def first_existing(paths: list[str], trail: Trail) -> str | None:
    """The first of ``paths`` that exists (each one tried)."""
    return next((path for path in paths if trail.lexists(path)), None)


def _volta(found: str, trail: Trail) -> str | None:
    places = [
        f"{home}/tools/image/packages/@openai/codex/bin/codex"
        for home in homes(found, "bin", "VOLTA_HOME", ".volta")
    ]
    return first_existing(places, trail)


def _mise(found: str, trail: Trail) -> str | None:
    listed = homes(found, "shims", "MISE_DATA_DIR", ".local/share/mise")
    data = os.environ.get("XDG_DATA_HOME") or ""
    if os.path.isabs(data):
        listed.append(f"{data}/mise")
    for home in dict.fromkeys(listed):
        for tool in ("npm-openai-codex", "node"):
            matches = trail.glob(home, f"installs/{tool}/*/bin/codex")
            if matches:
                return matches[0]
    return None


def _vite_plus(found: str, trail: Trail) -> str | None:
    for home in homes(found, "bin", "VP_HOME", ".vite-plus"):
        packages = f"{home}/packages/@openai"
        record = f"{packages}/codex.json"
        trail.tried.append(record)
        install_id = safe_name(_json_field(record, "installId", trail))
        if install_id is None:
            continue
        places = [
            f"{packages}/codex/{install_id}/lib/node_modules/@openai/codex/bin/codex.js",
            f"{packages}/codex/{install_id}/node_modules/@openai/codex/bin/codex.js",
            f"{packages}/codex#{install_id}/lib/node_modules/@openai/codex/bin/codex.js",
        ]
        found_script = first_existing(places, trail)
        if found_script is not None:
            return found_script
    return None


def _json_field(path: str, name: str, trail: Trail) -> object:
    """Field ``name`` of the JSON object in the file ``path`` (bounded read); None if none."""
    try:
        value = loads(trail.read(path, _RECORD_LIMIT + 1)[:_RECORD_LIMIT].decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return value.get(name) if isinstance(value, dict) else None


#: The dispatcher's file name -> (what it is, how to find the package it would run).
_DISPATCHERS: dict[str, tuple[str, Callable[[str, Trail], str | None]]] = {
    "volta-shim": ("Volta", _volta),
    "mise": ("mise", _mise),
    "rtx": ("mise", _mise),
    "vp": ("Vite+", _vite_plus),
}


def dispatcher_target(found: str, real: str, trail: Trail) -> tuple[str, str | None] | None:
    """None when ``real`` (where ``found`` leads) is no dispatcher; else the dispatcher's
    name and the path of the Codex package it would run (None: not found)."""
    known = _DISPATCHERS.get(os.path.basename(real))
    if known is None:
        return None
    name, find = known
    return name, find(found, trail)
