"""The walk never follows a procfs "magic" link (``/proc/PID/cwd``, ``root``): it leads
wherever that process is, so nothing behind one is ever published."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from launcher_probe.contract import Reason
from launcher_probe.host.decision import Published
from launcher_probe.host.paths.rules import check_launcher_path
from launcher_probe.host.resolver import resolve_launcher
from launcher_probe.server.request import LauncherUnavailable, SandboxRequest
from tests.conftest import HostEnv


@pytest.fixture
def held_cwd(tmp_path: Path) -> Iterator[int]:
    """A live process whose working directory is ``tmp_path`` (reached as /proc/PID/cwd)."""
    child = subprocess.Popen(["sleep", "600"], cwd=tmp_path)
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait()


def test_a_procfs_magic_link_is_never_followed(
    host_env: HostEnv, tmp_path: Path, held_cwd: int, real_codex: Path
) -> None:
    """/proc/PID/cwd and /proc/PID/root lead where that process is, which their lstat does
    not show (another mount namespace, a later chdir): refused, never published or run."""
    tmp_path.chmod(0o755)
    (tmp_path / "codex").symlink_to(real_codex)
    magic = f"/proc/{held_cwd}/cwd/codex"
    verdict = check_launcher_path(magic)
    assert (verdict.ok, verdict.reason) == (False, Reason.NOT_FOUND)
    assert "magic link" in verdict.detail
    decision = resolve_launcher(magic)
    assert not isinstance(decision, Published)
    meta = {
        "codex/sandbox-state": {
            "permissionProfile": {"type": "disabled"},
            "sandboxCwd": "file:///",
        },
        "codex/sandbox-launcher": {"codexExecutable": f"/proc/{held_cwd}/root{real_codex}"},
    }
    with pytest.raises(LauncherUnavailable):
        SandboxRequest.from_meta(meta).command(["true"])
