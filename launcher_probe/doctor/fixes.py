"""The concrete fix for every reason code ``doctor`` can report.

Every ``Reason`` of ``launcher_probe.contract`` has a fix here (a test checks it), and so
has every outcome of a server check (``CHECK_PROBLEMS``). A fix is a list of lines, each
an action: a command to run, a setting to change, a section of the README to read.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable

from launcher_probe.contract import SANDBOX_CAPABILITIES, Reason

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from launcher_probe.host.decision import Withheld

#: Outcomes of ``--check-servers`` that are no Reason: the server could not be asked.
SERVER_NOT_STARTED = "server_not_started"
INITIALIZE_TIMEOUT = "initialize_timeout"
INITIALIZE_FAILED = "initialize_failed"
CHECK_PROBLEMS = (SERVER_NOT_STARTED, INITIALIZE_TIMEOUT, INITIALIZE_FAILED)
#: A server of Codex's configured through ``launcher-probe proxy`` without
#: ``--trust-host-state``: Codex sends each call its own state, which that proxy refuses.
HOST_STATE_REFUSED = "host_state_refused"
#: A server run through ``wrap`` that itself uses the launcher (``servers.py``).
WRAPPED_USES_LAUNCHER = "wrapped_uses_launcher"

#: Where a server author reads how to advertise the capability (works on PyPI too).
SERVER_SECTION = "the README section 'Writing a server that uses the launcher'"

#: follow.py's words for a node or shell shim with no native binary behind it.
_NPM_SHIM_WITHOUT_BINARY = re.compile(r" is a (?:node|shell) shim; no native \S+ binary behind it")
_WRITABLE = re.compile(r"^(?:directory|file) (?P<path>.+) is writable by ")
_OWNED = re.compile(r"^(?:symlink )?(?P<path>.+) is owned by uid \d+")


def _quoted(path: str) -> str:
    from launcher_probe.json_output import printable

    return shlex.quote(printable(path))


def _point_at_it() -> list[str]:
    from launcher_probe.host.discovery.config_file import config_file

    config = _quoted(str(config_file()))
    return [
        "or point launcher-probe at it: launcher-probe doctor --codex /abs/path/to/codex "
        "(so do resolve, meta and discover), export LAUNCHER_PROBE_CODEX=/abs/path/to/codex, "
        f'or codex = "/abs/path/to/codex" in {config}',
    ]


def _install() -> list[str]:
    return [
        "install the Codex CLI: npm i -g @openai/codex; "
        "or the standalone installer (openai/codex's install.sh, into ~/.local/bin/codex); "
        "or Homebrew: brew install --cask codex",
    ]


def _not_found(detail: str, path: str | None) -> list[str]:
    return _install() + _point_at_it()


def _unsafe(detail: str, path: str | None) -> list[str]:
    writable = _WRITABLE.match(detail)
    if writable:
        offending = _quoted(writable["path"])
        return [f"chmod go-w {offending}  (then nobody but its owner can replace what it holds)"]
    owned = _OWNED.match(detail)
    if owned:
        offending = _quoted(owned["path"])
        if os.geteuid() == 0:
            return [f"chown root {offending}"]
        import pwd

        user = pwd.getpwuid(os.geteuid()).pw_name
        return [f"sudo chown {shlex.quote(user)} {offending}  (or sudo chown root {offending})"]
    return [
        f"make every directory on the way owned by root or you, not writable by others: {detail}"
    ]


def _shim(detail: str, path: str | None) -> list[str]:
    """An npm shim with no native binary behind it: its platform package is missing;
    anything else (a wrapper whose program is gone, a host Codex has no build for, too
    many in a row) is mended by naming the native binary."""
    if _NPM_SHIM_WITHOUT_BINARY.search(detail):
        from launcher_probe.host.native.shims import host_target

        target = host_target()
        package = target.package if target else "@openai/codex-<platform>"
        return [
            f"the npm package has no native binary for this host ({package} is missing): "
            "reinstall with its platform package: npm i -g @openai/codex@latest "
            "(without --omit=optional or --no-optional, which drop it)",
            *_point_at_it(),
        ]
    if "Codex has no build for" in detail:
        return ["Codex publishes no build for this host: run it where Codex is built for"]
    shown = "it" if path is None else _quoted(path)
    return [
        f"{shown} does not lead to a native Codex binary (the verdict says where it "
        "stopped): reinstall Codex, or name the native binary itself",
        *_point_at_it(),
    ]


def _fixed(*lines: str) -> Callable[[str, str | None], list[str]]:
    """A fix that is the same whatever the detail ({path} is the candidate's path)."""

    def fix(detail: str, path: str | None) -> list[str]:
        shown = "/abs/path/to/codex" if path is None else _quoted(path)
        return [line.format(path=shown, detail=detail) for line in lines]

    return fix


_FIXES: dict[str, Callable[[str, str | None], list[str]]] = {
    Reason.NOT_FOUND: _not_found,
    Reason.NOT_ABSOLUTE: _fixed('give an absolute path, e.g. --codex "$(readlink -f {path})"'),
    Reason.NOT_UTF8: _fixed("install or link Codex at a path that is valid UTF-8"),
    Reason.NOT_REGULAR_FILE: _fixed("name the codex executable file itself, not {path}"),
    Reason.NOT_EXECUTABLE: _fixed("chmod u+x {path}"),
    Reason.UNSAFE_PERMISSIONS: _unsafe,
    Reason.SHIM_UNRESOLVED: _shim,
    Reason.DISPATCHER_UNRESOLVED: _fixed(
        "install Codex with the tool manager that owns this shim (volta install "
        "@openai/codex; mise use -g npm:@openai/codex; vp add -g @openai/codex), or name "
        "the native binary with --codex"
    ),
    Reason.WRONG_PLATFORM: _fixed(
        "install the build for this host: npm i -g @openai/codex picks it; or name that "
        "binary with --codex"
    ),
    Reason.NOT_NATIVE: _fixed("name the codex executable, not {path}"),
    Reason.UNRECOGNISED_SCRIPT: _fixed(
        "{path} is a script launcher-probe cannot follow to the native binary: name the "
        "native Codex binary it runs with --codex or LAUNCHER_PROBE_CODEX"
    ),
    Reason.NOT_CODEX: _fixed(
        "{path} is not the Codex CLI (--version must print codex-cli <version>): name the "
        "real one with --codex or LAUNCHER_PROBE_CODEX"
    ),
    Reason.SANDBOX_UNSUPPORTED: _fixed(
        "this Codex CLI has no 'sandbox --sandbox-state-json': upgrade it, "
        "npm i -g @openai/codex@latest (0.169.0 or newer)"
    ),
    Reason.SANDBOX_UNAVAILABLE: _fixed(
        "the sandbox cannot start on this host; the probe said: {detail}",
        "on Linux it needs bubblewrap (bundled as codex-resources/bwrap beside an npm or "
        "standalone install; a single-file install needs bwrap on /usr/bin:/bin) and "
        "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on "
        "Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0; in a container, "
        "allow them); then: launcher-probe resolve --refresh",
    ),
    Reason.PROBE_TIMEOUT: _fixed(
        "the probe ran out of time (a busy machine?): launcher-probe resolve --refresh --timeout 30"
    ),
    Reason.SPAWN_FAILED: _fixed("check that it runs at all: {path} --version"),
    Reason.PROBE_FAILED: _fixed(
        "the sandbox did not behave as Codex's should; every step's output: "
        "launcher-probe probe {path} --json"
    ),
    Reason.LOCK_TIMEOUT: _fixed(
        "another process held the verdict lock too long: retry, or find the holder: "
        "fuser -v <the lock file in the detail>"
    ),
    Reason.BINARY_CHANGED: _fixed(
        "the binary changed (an upgrade?): launcher-probe resolve, then restart the MCP "
        "server so it is launched under the new decision"
    ),
    Reason.CAPABILITY_NOT_ADVERTISED: _fixed(
        f"make the server advertise {' (or '.join(SANDBOX_CAPABILITIES)}) under "
        "capabilities.experimental in its initialize result "
        "(launcher_probe.server.mcp.codex_sandbox_middleware does it for the MCP Python "
        f"SDK); see {SERVER_SECTION}"
    ),
    Reason.TRANSPORT_NOT_STDIO: _fixed(
        "only a stdio server started on this host can run the launcher: configure it with "
        "command/args instead of url"
    ),
    Reason.NO_SANDBOX_STATE: _fixed(
        "the host sends the launcher only with a sandbox state: pass the request's state "
        "(meta --state, sandbox_state=)"
    ),
    WRAPPED_USES_LAUNCHER: _fixed(
        "run it through launcher-probe proxy instead of wrap (the same options): the proxy "
        "adds the launcher, which the server then uses"
    ),
    HOST_STATE_REFUSED: _fixed(
        "add --trust-host-state to the proxy's args (before --): Codex's own state then "
        "stands, and the proxy adds only the launcher"
    ),
    SERVER_NOT_STARTED: _fixed(
        "the command cannot be started ({detail}): install it or give its absolute path as "
        "command in the server's [mcp_servers.NAME] table"
    ),
    INITIALIZE_TIMEOUT: _fixed(
        "the server did not answer initialize in time: run its command by hand and read "
        "what it writes on stderr (its end is the stderr: line above)"
    ),
    INITIALIZE_FAILED: _fixed(
        "the server did not complete initialize ({detail}): run its command by hand and read "
        "what it writes on stderr (its end is the stderr: line above)"
    ),
}


def fix_for(reason: str, detail: str = "", path: str | None = None) -> list[str]:
    """The fix for ``reason`` (a ``Reason`` or one of ``CHECK_PROBLEMS``), one action a
    line; ``detail`` is the reason's detail, ``path`` the candidate's path, if any.
    KeyError for a code no part of launcher-probe reports."""
    return _FIXES[reason](detail, path)


def withheld_fix(decision: Withheld) -> list[str]:
    """The fix for a withheld launcher: its first candidate's, with that candidate's own
    path and detail (the decision's may have the path put before it), else (nothing was
    found) the decision's."""
    first = decision.tried[0] if decision.tried else None
    if first is None:
        return fix_for(decision.reason, decision.detail)
    return fix_for(first.reason, first.detail, first.path)
