"""The verification probe: is this a full Codex CLI whose sandbox works on this host?

Steps, all within ONE deadline, each run by ``bounded_run.run_bounded`` below the probe's one
supervisor (``supervisor_client.Supervisor``: nothing a step starts outlives it) with closed
stdin, a small explicit environment and a private HOME/CODEX_HOME:

1. ``identity``: ``<exe> --version`` must print ``codex-cli <version>``.
2. ``capability``: ``<exe> sandbox --sandbox-state-json <read-only state> --
   /bin/sh -c 'printf %s <nonce>'`` must exit 0 and print exactly the nonce.
3. ``enforcement`` level only: ``read_only_blocks`` (a write outside ``sandboxCwd``
   under the read-only profile leaves no file) and ``workspace_write_allows`` (a
   write inside ``sandboxCwd`` under the workspace-write profile leaves the file).
"""

from __future__ import annotations

import errno
import os
import re
import signal
import time
from pathlib import Path

from launcher_probe.contract import Reason
from launcher_probe.host.bubblewrap import Bubblewrap, bubblewrap_for
from launcher_probe.host.probe.bounded_run import Captured, Finished, run_bounded
from launcher_probe.host.probe.exec_failure import exec_failure
from launcher_probe.host.probe.private_dir import private_directory
from launcher_probe.host.probe.sandbox_failure import sandbox_failure, stderr_gist
from launcher_probe.host.probe.supervisor_client import SUPERVISOR_LATE, NotReady, Supervisor
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT, ProbeLevel, ProbeResult, ProbeStep
from launcher_probe.json_core import dumps
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EXCERPT_CHARS", "TRANSIENT_ERRNOS", "probe_below", "probe_launcher"]

#: Characters of each stream kept in a step's excerpt (the process keeps 64 KiB).
EXCERPT_CHARS = 2048
#: Spawn errors that say the host is short of resources now, not that the binary is bad.
TRANSIENT_ERRNOS = frozenset({errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE})
#: Signals the probe never sends a step (a deadline kills it, and says so): one that ends a
#: step came from outside, a host or service manager stopping the caller's whole tree.
STOPPING_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT})

#: What ``--version`` prints (a pattern: compiled on its first use, by ``re``'s cache).
_VERSION = r"codex-cli (\S+)\n?"

_ROOT_READ = {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}
_PROJECT_WRITE = {
    "path": {"type": "special", "value": {"kind": "project_roots"}},
    "access": "write",
}


def _token(size: int) -> str:
    """``size`` random bytes as hex: what ``secrets.token_hex`` returns (both read
    ``os.urandom``), without importing ``secrets`` (hmac, hashlib, base64) on a cold path."""
    return os.urandom(size).hex()


class _Failed(Exception):
    """A step failed; carries the verdict."""

    def __init__(self, reason: Reason, detail: str, *, transient: bool = False) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.transient = transient


class _Run(Value):
    """What one step saw: the recorded step plus the process outcome."""

    __slots__ = ("step", "finished")
    step: ProbeStep
    finished: Finished

    def __init__(self, step: ProbeStep, finished: Finished) -> None:
        super().__init__(step=step, finished=finished)


def _text(captured: Captured, limit: int = EXCERPT_CHARS) -> str:
    text = captured.data.decode("utf-8", errors="replace")
    if captured.total > limit or len(text) > limit:
        return f"{text[:limit]}... [{captured.total} bytes in all]"
    return text


def _status_text(status: int) -> str:
    return f"was killed by signal {-status}" if status < 0 else f"exited {status}"


class _Probe:
    """One probe run: a private directory tree, one deadline, and where its steps go."""

    def __init__(
        self,
        executable: str,
        root: Path,
        deadline: float,
        steps: list[ProbeStep],
        supervisor: Supervisor,
    ) -> None:
        self.executable = executable
        self.supervisor = supervisor
        self.root = root
        self.deadline = deadline
        self.steps = steps
        home = root / "home"
        codex_home = root / "codex-home"
        self.workspace = root / "workspace"
        for directory in (home, codex_home, self.workspace):
            directory.mkdir(mode=0o700)
        self.env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "CODEX_HOME": str(codex_home),
            "LC_ALL": "C.UTF-8",
            "RUST_BACKTRACE": "0",
        }

    def run(self, name: str, args: list[str]) -> _Run:
        """Run ``<exe> ARGS`` as step ``name``; raise _Failed on spawn error or timeout."""
        argv = (self.executable, *args)
        try:
            finished = run_bounded(
                argv,
                env=self.env,
                cwd=str(self.root),
                deadline=self.deadline,
                supervisor=self.supervisor,
            )
        except NotReady as error:  # the host could not start an interpreter in time
            self.steps.append(ProbeStep(name, argv, None, "", ""))
            detail = f"{name}: {SUPERVISOR_LATE}; the binary was not run"
            raise _Failed(Reason.SPAWN_FAILED, detail, transient=True) from error
        except OSError as error:
            self.steps.append(ProbeStep(name, argv, None, "", ""))
            transient = error.errno in TRANSIENT_ERRNOS
            if transient:
                detail = f"resource shortage: {error}"
            else:
                detail = f"cannot be executed: {exec_failure(self.executable, error)}"
            raise _Failed(Reason.SPAWN_FAILED, f"{name}: {detail}", transient=transient) from error
        step = ProbeStep(
            name, argv, finished.exit_status, _text(finished.stdout), _text(finished.stderr)
        )
        self.steps.append(step)
        if finished.timed_out:
            raise _Failed(
                Reason.PROBE_TIMEOUT,
                f"{name}: the probe's deadline passed; the process tree was killed",
                transient=True,
            )
        status = finished.exit_status or 0
        if -status in STOPPING_SIGNALS:
            raise _Failed(
                Reason.SPAWN_FAILED,
                f"{name}: {_status_text(status)}, which the probe never "
                "sends: the process tree was stopped from outside; nothing is known of the binary",
                transient=True,
            )
        return _Run(step, finished)

    def identity(self) -> str:
        """``--version``; returns the version."""
        seen = self.run("identity", ["--version"])
        match = re.fullmatch(_VERSION, seen.finished.stdout.data.decode("utf-8", errors="replace"))
        if seen.finished.exit_status != 0 or match is None:
            raise _Failed(
                Reason.NOT_CODEX,
                f"identity: `--version` {_status_text(seen.finished.exit_status or 0)} and "
                f"printed {seen.step.stdout_excerpt[:100]!r}, not 'codex-cli <version>'",
            )
        return match.group(1)

    def sandboxed(self, name: str, entries: list[dict[str, Any]], command: list[str]) -> _Run:
        """Run ``command`` under a managed profile with ``entries``, network restricted,
        ``sandboxCwd`` the private workspace; classify a sandbox that does not run it."""
        state = {
            "permissionProfile": {
                "type": "managed",
                "file_system": {"type": "restricted", "entries": entries},
                "network": "restricted",
            },
            "sandboxCwd": self.workspace.as_uri(),
        }
        args = [
            "sandbox",
            "--sandbox-state-json",
            dumps(state, separators=(",", ":")),
            "--",
            *command,
        ]
        seen = self.run(name, args)
        status = seen.finished.exit_status
        assert status is not None
        failure = sandbox_failure(
            status, seen.step.stderr_excerpt, self.executable, self.env["PATH"]
        )
        if failure is not None:
            reason, detail = failure
            raise _Failed(reason, f"{name}: {detail}")
        return seen

    def expect_nonce(self, seen: _Run, nonce: str) -> None:
        """The sandboxed command must have exited 0 and printed exactly ``nonce``."""
        status = seen.finished.exit_status or 0
        stdout = seen.finished.stdout
        if status != 0 or stdout.data != nonce.encode():
            what = "" if status == 0 else f"{_status_text(status)} and "
            raise _Failed(
                Reason.PROBE_FAILED,
                f"{seen.step.name}: `sandbox` {what}printed {stdout.total} bytes of stdout, "
                f"not exactly the {len(nonce)}-character nonce "
                f"(stdout {seen.step.stdout_excerpt[:100]!r}; stderr: "
                f"{stderr_gist(seen.step.stderr_excerpt)})",
            )

    def capability(self) -> None:
        nonce = _token(16)
        seen = self.sandboxed("capability", [_ROOT_READ], ["/bin/sh", "-c", f"printf %s {nonce}"])
        self.expect_nonce(seen, nonce)

    def enforcement(self) -> None:
        outside = self.root / "outside"  # only this level writes there
        outside.mkdir(mode=0o700)
        blocked = outside / f"blocked-{_token(8)}"
        nonce = _token(16)
        script = '(printf x > "$1") 2>/dev/null; printf %s "$2"'
        seen = self.sandboxed(
            "read_only_blocks",
            [_ROOT_READ],
            ["/bin/sh", "-c", script, "sh", str(blocked), nonce],
        )
        self.expect_nonce(seen, nonce)
        if blocked.exists():
            raise _Failed(
                Reason.PROBE_FAILED,
                "read_only_blocks: the read-only profile let a write outside sandboxCwd through",
            )
        written = self.workspace / f"written-{_token(8)}"
        nonce = _token(16)
        seen = self.sandboxed(
            "workspace_write_allows",
            [_ROOT_READ, _PROJECT_WRITE],
            ["/bin/sh", "-c", 'printf x > "$1" && printf %s "$2"', "sh", written.name, nonce],
        )
        self.expect_nonce(seen, nonce)
        if not written.is_file() or written.read_bytes() != b"x":
            raise _Failed(
                Reason.PROBE_FAILED,
                "workspace_write_allows: the workspace-write profile's write inside "
                "sandboxCwd left no file",
            )


def probe_launcher(
    path: str, *, timeout: float = DEFAULT_TIMEOUT, level: ProbeLevel = ProbeLevel.CAPABILITY
) -> ProbeResult:
    """Probe the native binary at ``path`` within one deadline of ``timeout`` seconds.

    ``path`` must already have passed the path rules and shim resolution.
    """
    return probe_below(None, path, timeout=timeout, level=level)


def probe_below(
    supervisor: Supervisor | None,
    path: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    level: ProbeLevel = ProbeLevel.CAPABILITY,
) -> ProbeResult:
    """:func:`probe_launcher` with its steps below ``supervisor`` (launched already, or
    launched here; None: a new one), which it ends before returning. The
    supervisor's start-up runs on another core while the private directory is made and
    bubblewrap is hashed."""
    if supervisor is None:
        supervisor = Supervisor()
    started = time.monotonic()
    steps: list[ProbeStep] = []
    version: str | None = None
    failure: _Failed | None = None
    bubblewrap: Bubblewrap | None = None
    try:
        supervisor.launch()
        with private_directory() as temporary:
            try:
                probe = _Probe(path, temporary, started + timeout, steps, supervisor)
                bubblewrap = bubblewrap_for(path, probe.env["PATH"], str(temporary))
                version = probe.identity()
                probe.capability()
                if level is ProbeLevel.ENFORCEMENT:
                    probe.enforcement()
            except BaseException:
                supervisor.close()  # all it started killed and reaped before the directory goes
                raise
            # Each step's tree was reaped as it ended: the supervisor exits while the
            # directory goes (``close`` below waits for it).
            supervisor.end()
    except _Failed as failed:
        failure = failed
    except OSError as error:
        # The probe's own private directories, not the binary: may pass on a retry.
        failure = _Failed(Reason.SPAWN_FAILED, f"setup: {error}", transient=True)
    finally:
        supervisor.close()  # waits for its exit (ends it first if no directory was made)
    return ProbeResult(
        ok=failure is None,
        reason=None if failure is None else failure.reason,
        detail=f"codex-cli {version}: sandbox {level.value} verified"
        if failure is None
        else failure.detail,
        version=version,
        level=level,
        duration=time.monotonic() - started,
        steps=tuple(steps),
        transient=failure is not None and failure.transient,
        # Only a probe that got as far as ``codex sandbox`` used one (not_codex never does).
        bubblewrap=bubblewrap if version is not None else None,
    )
