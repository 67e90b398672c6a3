"""npm/pnpm/bun shims: find the native Codex binary a shim would run, without running node.

The npm package ``@openai/codex`` ships ``bin/codex.js``, a Node script that maps the
host's platform and architecture to a target triple, finds the platform package
(``@openai/codex-<platform>``) the way Node's ``require.resolve`` does, and execs its
native binary. pnpm (and npm's ``cmd-shim``) put a small shell script in the global bin
directory that runs ``node <...>/codex.js``; bun links ``codex.js`` directly. This module
repeats that lookup on the file system.
"""

from __future__ import annotations

import os
import platform
import re

from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from launcher_probe.host.native.trail import Trail

#: (platform.system(), platform.machine()) -> (npm platform suffix, Rust target triple).
_TARGETS = {
    ("Linux", "x86_64"): ("linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "amd64"): ("linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "aarch64"): ("linux-arm64", "aarch64-unknown-linux-musl"),
    ("Linux", "arm64"): ("linux-arm64", "aarch64-unknown-linux-musl"),
    ("Darwin", "x86_64"): ("darwin-x64", "x86_64-apple-darwin"),
    ("Darwin", "arm64"): ("darwin-arm64", "aarch64-apple-darwin"),
}
#: Every target triple Codex is released for (``codex-<triple>`` release binaries).
TRIPLES = frozenset(
    {
        *(triple for _, triple in _TARGETS.values()),
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "x86_64-pc-windows-msvc",
        "aarch64-pc-windows-msvc",
    }
)
#: Splits script text into words at quotes and blanks (one character class: linear); a
#: pattern, compiled on its first use.
_WORD_BREAKS = r"[\"'\s]+"
_BASEDIR = ("$basedir/", "${basedir}/")


class Target(Value):
    """This host's npm platform package and Rust target triple."""

    __slots__ = ("package", "triple")
    package: str
    triple: str

    def __init__(self, package: str, triple: str) -> None:
        super().__init__(package=package, triple=triple)


def host_target() -> Target | None:
    """The platform package and triple the npm shim would pick on this host, if any."""
    found = _TARGETS.get((platform.system(), platform.machine()))
    return Target(f"@openai/codex-{found[0]}", found[1]) if found else None


def words(text: str) -> list[str]:
    """``text`` split at quotes and blanks, in linear time (quoting is not interpreted)."""
    return [word for word in re.split(_WORD_BREAKS, text) if word]


def shell_shim_scripts(path: str, head: bytes) -> list[str]:
    """The ``codex.js`` paths a pnpm/cmd-shim shell shim runs: absolute words, or words
    relative to ``$basedir`` (the shim's directory), that end in ``codex.js``."""
    basedir = os.path.dirname(os.path.abspath(path))
    found: dict[str, None] = {}
    for word in words(head.decode("utf-8", "surrogateescape")):
        if not word.endswith("codex.js"):
            continue
        prefix = next((p for p in _BASEDIR if word.startswith(p)), None)
        if prefix is not None:
            found.setdefault(os.path.normpath(os.path.join(basedir, word[len(prefix) :])))
        elif word.startswith("/"):
            found.setdefault(os.path.normpath(word))
    return list(found)


def _node_resolve(start: str, request: str, trail: Trail) -> str | None:
    """Node's ``require.resolve(request)`` from directory ``start`` (node_modules lookup)."""
    directory = start
    while True:
        if os.path.basename(directory) != "node_modules":
            candidate = os.path.join(directory, "node_modules", request)
            if trail.isfile(candidate):
                return trail.realpath(candidate)
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def node_shim_native(script: str, target: Target, trail: Trail) -> str | None:
    """The native binary ``codex.js`` (a real path) would exec, or None."""
    bin_dir = os.path.dirname(script)
    package_root = os.path.dirname(bin_dir)
    vendor_roots = []
    manifest = _node_resolve(bin_dir, f"{target.package}/package.json", trail)
    if manifest:
        vendor_roots.append(os.path.join(os.path.dirname(manifest), "vendor"))
    local_vendor = os.path.join(package_root, "vendor")
    if local_vendor not in vendor_roots:
        vendor_roots.append(local_vendor)
    natives = [
        os.path.join(root, target.triple, *layout)
        for root in vendor_roots
        for layout in (("bin", "codex"), ("codex", "codex"))
    ]
    natives.append(os.path.join(package_root, "bin", f"codex-{target.triple}"))
    for native in natives:
        if trail.isfile(native):
            return trail.realpath(native)
    return None
