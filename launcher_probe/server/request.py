"""The server's half of the contract: read ``_meta``, fail closed, build the sandboxed argv.

``SandboxRequest.from_meta`` reads one ``tools/call`` ``_meta``; ``command`` turns a
command into ``<codexExecutable> sandbox --sandbox-state-json <state> -- <command>``.
The launcher is never taken on trust: ``from_meta`` keeps it only when
``launcher_probe.server.launcher.verify_launcher`` passes it, and ``command`` checks it
again (cheap: bound to its fingerprint) before naming it in an argv, so a request built
any other way, or a binary swapped in between, never yields an unverified argv.
It never searches PATH and never runs a command unsandboxed unless the server's
operator opted out (``allow_unsandboxed=True``, from a flag or the environment, never
from ``_meta`` or tool arguments). ``AuthorityBinding`` guards reuse of anything
started under an earlier request's authority.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from launcher_probe.contract import (
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    LauncherDescriptor,
)
from launcher_probe.errors import InputRejected
from launcher_probe.host.paths.fingerprint import Fingerprint
from launcher_probe.server.launcher import verify_launcher
from launcher_probe.state import InvalidSandboxState, SandboxState

if TYPE_CHECKING:
    from launcher_probe.server.prepared import PreparedCommand

__all__ = [
    "AmbiguousSandboxState",
    "AuthorityBinding",
    "AuthorityChanged",
    "LauncherUnavailable",
    "MissingSandboxState",
    "SandboxRequest",
]

logger = logging.getLogger(__name__)

_LAUNCHER_MISSING = f"launcher missing: _meta has no {SANDBOX_LAUNCHER_KEY} (the host withheld it)"
_STATE_MISSING = f"sandbox state missing: _meta has no {SANDBOX_STATE_KEY}"


class LauncherUnavailable(InputRejected):
    """``_meta`` names no usable launcher; the command is refused, not run unsandboxed."""

    reason = "launcher_unavailable"


class MissingSandboxState(InputRejected):
    """``_meta`` carries no usable sandbox state; the command is refused."""

    reason = "sandbox_state_missing"


class AmbiguousSandboxState(InputRejected):
    """The preferred and the deprecated state keys carry different states."""

    reason = "sandbox_state_ambiguous"


class AuthorityChanged(InputRejected):
    """A later request's state or launcher differs from the one something was started under."""

    reason = "authority_changed"


def _meta_mapping(meta: object) -> Mapping[str, Any]:
    """``meta`` as a mapping: a dict (SDK 2.x), a pydantic model with extra fields (1.x)."""
    if meta is None:
        return {}
    if isinstance(meta, Mapping):
        return meta
    dump = getattr(meta, "model_dump", None)
    if callable(dump):
        dumped = dump(by_alias=True)
        if isinstance(dumped, dict):
            return dumped
    raise InputRejected(f"_meta must be a JSON object, not {type(meta).__name__}")


def _state_of(value: Any) -> SandboxState:
    """``value`` as a state; InvalidSandboxState unless it is JSON exactly as given."""
    state = SandboxState.from_value(value)  # bounded in depth and size
    # json.dumps turns a key 1 into "1" and a tuple into a list: not the value given.
    if not isinstance(value, SandboxState) and state.value != value:
        raise InvalidSandboxState(
            "sandbox state is not JSON as given (a key that is not a string, or a tuple)"
        )
    return state


def _read_state(meta: Mapping[str, Any]) -> tuple[SandboxState | None, str]:
    """The state (preferred key first), or None and why; raise when the two keys disagree."""
    # A key present with any value counts (null included): two keys never hide each other.
    present = [key for key in (SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY) if key in meta]
    if not present:
        return None, _STATE_MISSING
    try:
        states = [_state_of(meta[key]) for key in present]
    except InvalidSandboxState as error:
        return None, f"sandbox state unusable: {error}"
    if len(states) == 2 and states[0].text != states[1].text:
        raise AmbiguousSandboxState(
            f"refusing: {SANDBOX_STATE_KEY} and {SANDBOX_STATE_META_KEY} carry different states"
        )
    return states[0], ""


def _read_launcher(meta: Mapping[str, Any]) -> tuple[LauncherDescriptor | None, str]:
    """The launcher when it passes ``verify_launcher``, or None and why."""
    value = meta.get(SANDBOX_LAUNCHER_KEY)
    if value is None:
        return None, _LAUNCHER_MISSING
    try:
        launcher = LauncherDescriptor.from_json(value)
    except ValueError as error:
        return None, f"launcher unusable: {SANDBOX_LAUNCHER_KEY} is malformed: {error}"
    problem = _launcher_problem(launcher)
    return (None, problem) if problem else (launcher, "")


def _launcher_problem(launcher: LauncherDescriptor) -> str:
    """Why ``launcher`` may not be run now (``launcher unusable (<reason>): ...``), or ""."""
    verdict = verify_launcher(launcher.codex_executable)
    return "" if verdict.ok else f"launcher unusable ({verdict.reason}): {verdict.detail}"


def _words(words: Iterable[str], what: str) -> list[str]:
    """``words`` as a list of NUL-free strings (what ``execve`` can pass); raise otherwise."""
    if isinstance(words, str):
        raise TypeError(f"{what} must be a list of words, not one string")
    checked = list(words)
    for word in checked:
        if not isinstance(word, str) or "\0" in word:
            raise InputRejected(f"{what} holds {word!r}, which is not a NUL-free string")
    return checked


@dataclass(frozen=True, slots=True)
class SandboxRequest:
    """What one request authorises: its state and launcher, or why each is unusable."""

    state: SandboxState | None
    launcher: LauncherDescriptor | None
    state_problem: str = ""
    launcher_problem: str = ""
    allow_unsandboxed: bool = False

    @classmethod
    def from_meta(cls, meta: object, *, allow_unsandboxed: bool = False) -> SandboxRequest:
        """Read a request's ``_meta`` (a dict, or the MCP SDK's meta object).

        ``allow_unsandboxed`` is the operator's opt-out and must come from the server's own
        configuration. The launcher is kept only when ``verify_launcher`` passes it (on a
        cold verdict cache that runs the probe once: bounded, cached per host). Raises
        ``AmbiguousSandboxState`` when both state keys are present and differ, and
        ``InputRejected`` when ``meta`` is no object; a missing or unusable state or
        launcher is recorded, and ``command`` refuses. Nothing else is raised, for any input.
        """
        mapping = _meta_mapping(meta)
        state, state_problem = _read_state(mapping)
        launcher, launcher_problem = _read_launcher(mapping)
        return cls(state, launcher, state_problem, launcher_problem, allow_unsandboxed)

    def _launcher_now(self) -> tuple[LauncherDescriptor | None, str]:
        """The launcher checked again now (cheap when warm: the binary may have changed
        since ``from_meta``, or this request was not made by it), or None and why."""
        if self.launcher is None:
            return None, self.launcher_problem or _LAUNCHER_MISSING
        problem = _launcher_problem(self.launcher)
        return (None, problem) if problem else (self.launcher, "")

    @property
    def sandbox_available(self) -> bool:
        """True when ``from_meta`` found a usable state and a verified launcher (``command``
        checks the launcher once more before it builds the sandboxed argv)."""
        return self.state is not None and self.launcher is not None

    def command(
        self,
        argv: Sequence[str],
        *,
        readable_roots: Iterable[str] = (),
        disable_network: bool = False,
    ) -> list[str]:
        """The argv that runs ``argv`` under the launcher; refuse when it cannot.

        Raises ``LauncherUnavailable`` or ``MissingSandboxState`` (unless the operator
        opted out: then ``argv`` comes back unchanged and a warning is logged), and
        ``InputRejected`` for an empty command, a relative readable root, or a word that
        is not a NUL-free string. The argv names the launcher by path: ``prepare`` also
        binds it to the file that was verified.
        """
        return self._build(argv, readable_roots, disable_network)[0]

    def prepare(
        self,
        argv: Sequence[str],
        *,
        readable_roots: Iterable[str] = (),
        disable_network: bool = False,
    ) -> PreparedCommand:
        """``command``'s argv, ready to run (``popen``, ``run``, ``exec``): on Linux the
        launcher is opened before its last check and executed through that descriptor, so
        a binary swapped after the check is never run. Raises as ``command`` does, and
        ``LauncherUnavailable`` when the file changed during that check."""
        import sys

        from launcher_probe.server.prepared import PreparedCommand

        sandboxed, launcher = self._build(argv, readable_roots, disable_network)
        if launcher is None or sys.platform != "linux":
            return PreparedCommand(sandboxed, None, sandboxed=launcher is not None)
        from launcher_probe.server.launcher import open_verified_launcher

        fd, verdict = open_verified_launcher(launcher.codex_executable)
        if fd is None:
            raise LauncherUnavailable(
                f"launcher unusable ({verdict.reason}): {verdict.detail}; "
                "refusing to run the command"
            )
        return PreparedCommand(sandboxed, fd, sandboxed=True)

    def _build(
        self, argv: Sequence[str], readable_roots: Iterable[str], disable_network: bool
    ) -> tuple[list[str], LauncherDescriptor | None]:
        """The argv and the launcher it names (None under the operator's opt-out)."""
        argv = _words(argv, "the command")
        if not argv:
            raise InputRejected("the command to run is empty")
        roots = _words(readable_roots, "readable roots")
        for root in roots:
            if not os.path.isabs(root):
                raise InputRejected(f"readable root {root!r} is not absolute")
        launcher, launcher_problem = self._launcher_now()
        if self.state is None or launcher is None:
            problem = launcher_problem or self.state_problem or _STATE_MISSING
            if self.allow_unsandboxed:
                logger.warning(
                    "running %r UNSANDBOXED because the operator allowed it: %s", argv[0], problem
                )
                return list(argv), None
            refused = f"{problem}; refusing to run the command"
            if launcher is None:
                raise LauncherUnavailable(refused)
            raise MissingSandboxState(refused)
        sandboxed = [launcher.codex_executable, "sandbox", "--sandbox-state-json", self.state.text]
        for root in roots:
            sandboxed += ["--sandbox-state-readable-root", root]
        if disable_network:
            sandboxed.append("--sandbox-state-disable-network")
        return [*sandboxed, "--", *argv], launcher


def _launcher_fingerprint(launcher: LauncherDescriptor | None) -> Fingerprint | None:
    if launcher is None:
        return None
    path = launcher.codex_executable
    try:
        return Fingerprint.of(path, path)
    except (OSError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class AuthorityBinding:
    """The authority something was started under: state text, launcher path and file identity.

    Capture it when starting a long-lived subprocess or caching a policy-bound result;
    call ``check`` with each later request before reusing either.
    """

    state_text: str | None
    launcher_path: str | None
    launcher_identity: Fingerprint | None

    @classmethod
    def capture(cls, request: SandboxRequest) -> AuthorityBinding:
        """Bind to ``request``'s state and launcher (the file as it is on disk now)."""
        launcher = request.launcher
        return cls(
            request.state.text if request.state is not None else None,
            launcher.codex_executable if launcher is not None else None,
            _launcher_fingerprint(launcher),
        )

    def check(self, other: SandboxRequest) -> None:
        """Raise ``AuthorityChanged`` unless ``other`` carries the very same authority."""
        now = AuthorityBinding.capture(other)
        # A launcher whose identity cannot be read (gone, unreadable) is never the same file.
        unreadable = now.launcher_path is not None and now.launcher_identity is None
        changed = [
            name
            for name, before, after in (
                ("sandbox state", self.state_text, now.state_text),
                ("launcher path", self.launcher_path, now.launcher_path),
                ("launcher file", self.launcher_identity, now.launcher_identity),
            )
            if before != after or (name == "launcher file" and unreadable)
        ]
        if changed:
            raise AuthorityChanged(
                f"refusing to reuse: {', '.join(changed)} changed since it was started"
            )
