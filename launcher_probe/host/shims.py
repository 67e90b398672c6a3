"""npm/pnpm/bun shims: find the native Codex binary a shim would run, without running node.

The npm package ``@openai/codex`` ships ``bin/codex.js``, a Node script that maps the
host's platform and architecture to a target triple, finds the platform package
(``@openai/codex-<platform>``) the way Node's ``require.resolve`` does, and execs its
native binary. pnpm (and npm's ``cmd-shim``) put a small shell script in the global bin
directory that runs ``node <...>/codex.js``; bun links ``codex.js`` directly. This module
repeats that lookup on the file system. A file is classified by its first bytes (ELF or
Mach-O magic, a ``#!`` line naming node or a shell), never by its name alone.
"""

from __future__ import annotations

import enum
import os
import platform
import re
from dataclasses import dataclass

from launcher_probe.host.paths import open_regular_file

#: Bytes read to classify a file; a script is read up to ``_SCRIPT_LIMIT`` bytes.
_HEAD = 256
_SCRIPT_LIMIT = 64 * 1024
_NATIVE_MAGIC = (
    b"\x7fELF",
    b"\xfe\xed\xfa\xce",
    b"\xfe\xed\xfa\xcf",
    b"\xce\xfa\xed\xfe",
    b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
)
_NODE = frozenset({"node", "nodejs"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
#: A ``codex.js`` the shell shim runs: absolute, or relative to the shim's ``$basedir``.
_SHELL_TARGET = re.compile(r"(\$basedir|\$\{basedir\}|/)([^\"'\s]*codex\.js)")
#: (platform.system(), platform.machine()) -> (npm platform suffix, Rust target triple).
_TARGETS = {
    ("Linux", "x86_64"): ("linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "amd64"): ("linux-x64", "x86_64-unknown-linux-musl"),
    ("Linux", "aarch64"): ("linux-arm64", "aarch64-unknown-linux-musl"),
    ("Linux", "arm64"): ("linux-arm64", "aarch64-unknown-linux-musl"),
    ("Darwin", "x86_64"): ("darwin-x64", "x86_64-apple-darwin"),
    ("Darwin", "arm64"): ("darwin-arm64", "aarch64-apple-darwin"),
}


class FileKind(enum.Enum):
    """What a candidate file is, judged by its content."""

    NATIVE = "native"
    NODE_SHIM = "node shim"
    SHELL_SHIM = "shell shim"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class NativeResolution:
    """The native binary behind ``path``: itself when it is no shim.

    ``native`` is None when a shim cannot be resolved; ``tried`` lists every path looked
    at, ``detail`` says why in words.
    """

    native: str | None
    shim: str | None
    tried: tuple[str, ...]
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Target:
    """This host's npm platform package and Rust target triple."""

    package: str
    triple: str


def host_target() -> Target | None:
    """The platform package and triple the npm shim would pick on this host, if any."""
    found = _TARGETS.get((platform.system(), platform.machine()))
    return Target(f"@openai/codex-{found[0]}", found[1]) if found else None


def read_head(path: str) -> bytes:
    """The first bytes of a regular file (more of it when it is a script); b"" otherwise."""
    try:
        with open_regular_file(path) as file:
            head = file.read(_HEAD)
            if head.startswith(b"#!"):
                head += file.read(_SCRIPT_LIMIT - len(head))
            return head
    except OSError:
        return b""


def interpreter(head: bytes) -> str | None:
    """The basename of the ``#!`` interpreter, looking through ``/usr/bin/env [-S]``."""
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [word for word in words[1:] if not word.startswith("-") and "=" not in word]
    return os.path.basename(words[0]) if words else None


def classify(path: str, head: bytes) -> FileKind:
    """Classify a file from its first bytes; a ``.js`` file without ``#!`` is a node shim."""
    if head.startswith(_NATIVE_MAGIC):
        return FileKind.NATIVE
    name = interpreter(head)
    if name in _NODE or (name is None and path.endswith(".js") and head):
        return FileKind.NODE_SHIM
    if name in _SHELLS and b"codex.js" in head:
        return FileKind.SHELL_SHIM
    return FileKind.OTHER


def resolve_native(path: str) -> NativeResolution:
    """Follow ``path`` (symlinks, then any npm/pnpm/bun shim) to the native Codex binary."""
    real = os.path.realpath(path)
    head = read_head(real)
    kind = classify(real, head)
    if kind in (FileKind.NATIVE, FileKind.OTHER):
        return NativeResolution(real, None, ())
    target = host_target()
    if target is None:
        detail = f"{real} is a {kind.value}, and Codex has no build for {_host_name()}"
        return NativeResolution(None, real, (), detail)
    tried: list[str] = []
    scripts = [real] if kind is FileKind.NODE_SHIM else _shell_targets(path, head)
    for script in scripts:
        tried.append(script)
        if os.path.isfile(script):
            native = _resolve_node_shim(os.path.realpath(script), target, tried)
            if native:
                return NativeResolution(native, real, tuple(tried))
    detail = f"{real} is a {kind.value}; no native {target.triple} binary behind it"
    return NativeResolution(None, real, tuple(tried), detail)


def _host_name() -> str:
    return f"{platform.system()} {platform.machine()}"


def _shell_targets(path: str, head: bytes) -> list[str]:
    """The ``codex.js`` paths a shell shim runs (``$basedir`` is the shim's directory)."""
    basedir = os.path.dirname(os.path.abspath(path))
    found: list[str] = []
    for prefix, rest in _SHELL_TARGET.findall(head.decode("utf-8", "surrogateescape")):
        script = os.path.normpath(basedir + rest if prefix != "/" else prefix + rest)
        if script not in found:
            found.append(script)
    return found


def _node_resolve(start: str, request: str, tried: list[str]) -> str | None:
    """Node's ``require.resolve(request)`` from directory ``start`` (node_modules lookup)."""
    directory = start
    while True:
        if os.path.basename(directory) != "node_modules":
            candidate = os.path.join(directory, "node_modules", request)
            tried.append(candidate)
            if os.path.isfile(candidate):
                return os.path.realpath(candidate)
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _resolve_node_shim(script: str, target: Target, tried: list[str]) -> str | None:
    """The native binary ``codex.js`` (a real path) would exec, or None."""
    bin_dir = os.path.dirname(script)
    package_root = os.path.dirname(bin_dir)
    vendor_roots = []
    manifest = _node_resolve(bin_dir, f"{target.package}/package.json", tried)
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
        tried.append(native)
        if os.path.isfile(native):
            return os.path.realpath(native)
    return None
