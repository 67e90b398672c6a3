"""From a candidate path to the native Codex binary it runs, by reading files only.

Each step reads a bounded prefix of one file (``host/executables.py``) and follows it:
symlinks; an npm/pnpm/bun shim to the platform package (``host/shims.py``); a dispatcher
that picks the tool from ``argv[0]`` (Volta, mise, Vite+) to the package its tool manager
installed (``host/dispatchers.py``); a generated wrapper script (asdf, Nix ``makeWrapper``)
to its ``exec`` target (``host/wrappers.py``). The end must be a native executable for
this host; any other script is ``unrecognised_script``. Nothing is ever run.
"""

from __future__ import annotations

from launcher_probe.contract import Reason
from launcher_probe.host.native.dispatchers import dispatcher_target
from launcher_probe.host.native.file_kind import FileKind, classify
from launcher_probe.host.native.host_format import header_problem, host_name
from launcher_probe.host.native.shims import (
    Target,
    host_target,
    node_shim_native,
    shell_shim_scripts,
)
from launcher_probe.host.native.trail import Trail
from launcher_probe.host.native.wrappers import wrapper_target
from launcher_probe.value import Value

#: Shims, dispatchers and wrappers followed before giving up (real installs need two).
MAX_INDIRECTIONS = 6


class NativeResolution(Value):
    """The native binary behind a path: itself when it is one.

    ``native`` is None when none could be found; then ``reason`` says which kind of file
    stood in the way, ``detail`` says why in words and ``tried`` lists the places worth
    naming in it (``Trail.tried``). ``shim`` is the first shim, dispatcher or wrapper passed
    through. ``trail`` holds every path looked at (``trail.py``): what the answer depends on.
    """

    __slots__ = ("native", "shim", "tried", "detail", "reason", "trail")
    native: str | None
    shim: str | None
    tried: tuple[str, ...]
    detail: str
    reason: Reason
    trail: Trail

    def __init__(
        self,
        native: str | None,
        shim: str | None,
        tried: tuple[str, ...],
        detail: str = "",
        reason: Reason = Reason.SHIM_UNRESOLVED,
        *,
        trail: Trail,
    ) -> None:
        super().__init__(
            native=native, shim=shim, tried=tried, detail=detail, reason=reason, trail=trail
        )

    def _key(self) -> tuple[object, ...]:
        """What was found, not how: two resolutions are equal whatever their trails."""
        return (self.native, self.shim, self.tried, self.detail, self.reason)


def resolve_native(path: str) -> NativeResolution:
    """Follow ``path`` to the native Codex binary for this host.

    A script that is no recognised shim or wrapper is ``unrecognised_script`` (never the
    result: what it runs is unknown); a file that is neither a native executable nor a
    script is ``not_native``.
    """
    trail = Trail()
    tried = trail.tried
    via: str | None = None
    current = path
    for _ in range(MAX_INDIRECTIONS):
        real = trail.realpath(current)
        head = trail.head(real)
        kind = classify(real, head)
        if kind is FileKind.NATIVE:
            dispatch = dispatcher_target(current, real, trail)
            if dispatch is None:
                foreign = header_problem(head)
                if foreign is None:
                    return NativeResolution(real, via, tuple(tried), trail=trail)
                detail = (
                    f"{real} is {foreign}, not a native executable for this host "
                    f"({host_name()}); install the Codex build for this host"
                )
                return NativeResolution(None, via, (), detail, Reason.WRONG_PLATFORM, trail=trail)
            name, following = dispatch
            if following is None:
                detail = (
                    f"{real} is the {name} dispatcher, and the Codex package it would run "
                    f"was not found; reinstall Codex with {name}, or name the native binary "
                    "with --codex"
                )
                reason = Reason.DISPATCHER_UNRESOLVED
                return NativeResolution(None, real, tuple(tried), detail, reason, trail=trail)
            via, current = via or real, following
            continue
        if kind in (FileKind.NODE_SHIM, FileKind.SHELL_SHIM):
            target = host_target()
            if target is None:
                detail = f"{real} is a {kind.value}, and Codex has no build for {host_name()}"
                return NativeResolution(None, real, (), detail, trail=trail)
            native = _through_shim(current, real, kind, head, target, trail)
            if native is None:
                detail = (
                    f"{real} is a {kind.value}; no native {target.triple} binary behind it: "
                    f"reinstall Codex with its platform package {target.package}, or name "
                    "the native Codex binary with --codex"
                )
                return NativeResolution(None, real, tuple(tried), detail, trail=trail)
            via, current = via or real, native
            continue
        if kind is FileKind.SCRIPT:
            wrapped = wrapper_target(current, real, head, trail)
            if wrapped is None:
                detail = (
                    f"{real} is a #! script of no format launcher-probe follows (an npm, pnpm "
                    'or bun shim, an asdf shim, an `exec "/abs/program" "$@"` wrapper), so '
                    "what it runs is unknown; name the native Codex binary with --codex"
                )
                reason = Reason.UNRECOGNISED_SCRIPT
                return NativeResolution(None, via, tuple(tried), detail, reason, trail=trail)
            if wrapped.target is None:
                detail = (
                    f"{real} is {wrapped.what}, and what it runs was not found; reinstall "
                    "Codex, or name the native Codex binary with --codex"
                )
                return NativeResolution(None, real, tuple(tried), detail, trail=trail)
            via, current = via or real, wrapped.target
            continue
        detail = (
            f"{real} is neither a native executable nor a script; "
            "name the Codex executable with --codex"
        )
        return NativeResolution(None, via, tuple(tried), detail, Reason.NOT_NATIVE, trail=trail)
    detail = (
        f"{path}: more than {MAX_INDIRECTIONS} shims, dispatchers or wrappers in a row; "
        "name the native Codex binary with --codex"
    )
    return NativeResolution(None, via, tuple(tried), detail, Reason.SHIM_UNRESOLVED, trail=trail)


def _through_shim(
    path: str, real: str, kind: FileKind, head: bytes, target: Target, trail: Trail
) -> str | None:
    """The native binary an npm/pnpm/bun shim runs, or None."""
    scripts = [real] if kind is FileKind.NODE_SHIM else shell_shim_scripts(path, head)
    for script in scripts:
        if trail.isfile(script):
            native = node_shim_native(trail.realpath(script), target, trail)
            if native:
                return native
    return None
