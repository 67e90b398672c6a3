"""``SandboxRequest.prepare``: on Linux the launcher that was verified is what runs, whatever
happens to its path between the check and the exec. Real Codex CLI, every fetched version."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY
from launcher_probe.server.request import LauncherUnavailable, SandboxRequest
from tests.conftest import HostEnv
from tests.server.test_exec import read_only_state

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="executing by fd is Linux's")

COMMAND = ["/bin/sh", "-c", "echo verified-ran"]


def request_for(launcher: Path, workspace: Path) -> SandboxRequest:
    meta: dict[str, Any] = {
        SANDBOX_STATE_KEY: read_only_state(workspace),
        SANDBOX_LAUNCHER_KEY: {"codexExecutable": str(launcher)},
    }
    request = SandboxRequest.from_meta(meta)
    assert request.sandbox_available, request.launcher_problem
    return request


def impostor(directory: Path, marker: Path) -> Path:
    """A ``#!`` script that records that it ran: what a swap puts in the launcher's place."""
    directory.mkdir(mode=0o755, exist_ok=True)
    script = directory / "codex"
    script.write_text(f'#!/bin/sh\ntouch "{marker}"\necho impostor-ran\n')
    script.chmod(0o755)
    return script


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    directory = tmp_path / "workspace"
    directory.mkdir()
    return directory


def test_a_symlink_retargeted_after_the_check_does_not_change_what_runs(
    isolated: HostEnv, linked_codex: Path, workspace: Path, tmp_path: Path
) -> None:
    request = request_for(linked_codex, workspace)
    by_path = request.command(COMMAND)
    with request.prepare(COMMAND) as prepared:
        assert prepared.argv == by_path, "the same argv; argv[0] is the launcher's path"
        marker = tmp_path / "impostor-ran"
        linked_codex.unlink()
        linked_codex.symlink_to(impostor(tmp_path / "impostor", marker))
        ran = prepared.run(env=isolated.env, capture_output=True, text=True, timeout=60)
    assert (ran.returncode, ran.stdout) == (0, "verified-ran\n"), ran.stderr
    assert not marker.exists()
    # The argv alone names the path: executed now, it runs whatever the path leads to.
    raced = subprocess.run(by_path, env=isolated.env, capture_output=True, text=True, check=False)
    assert raced.stdout == "impostor-ran\n" and marker.exists()


@pytest.fixture
def copied_codex(real_codex: Path, tmp_path: Path) -> Iterator[Path]:
    """The real CLI's layout in a directory a test may change: a copy of the binary in
    ``bin/`` (a hard link would change the fetched file's ctime) and the bundled bubblewrap
    in ``codex-resources/``; the copy (300 MB) is removed afterwards."""
    package = tmp_path / "package"
    (package / "bin").mkdir(mode=0o755, parents=True)
    (package / "codex-resources").mkdir(mode=0o755)
    shutil.copy2(
        real_codex.parent.parent / "codex-resources" / "bwrap", package / "codex-resources"
    )
    yield Path(shutil.copy2(real_codex, package / "bin" / "codex"))
    shutil.rmtree(package / "bin")


def test_a_binary_renamed_over_after_the_check_is_never_run(
    isolated: HostEnv, copied_codex: Path, workspace: Path, tmp_path: Path
) -> None:
    """The verified Codex runs from its descriptor; it then finds its own file gone (it
    re-executes itself, by ``/proc/self/exe``'s path, for its sandbox helper) and fails
    closed: neither the command nor the new file runs."""
    request = request_for(copied_codex, workspace)
    with request.prepare(COMMAND) as prepared:
        marker = tmp_path / "impostor-ran"
        os.replace(impostor(tmp_path / "impostor", marker), copied_codex)
        ran = prepared.run(env=isolated.env, capture_output=True, text=True, timeout=60)
    assert ran.returncode != 0 and "verified-ran" not in ran.stdout
    assert not marker.exists()


def test_a_binary_swapped_between_from_meta_and_prepare_is_refused(
    isolated: HostEnv, linked_codex: Path, workspace: Path, tmp_path: Path
) -> None:
    request = request_for(linked_codex, workspace)
    marker = tmp_path / "impostor-ran"
    linked_codex.unlink()
    linked_codex.symlink_to(impostor(tmp_path / "impostor", marker))
    with pytest.raises(LauncherUnavailable, match="launcher unusable"):
        request.prepare(COMMAND)
    assert not marker.exists()


def test_the_operators_opt_out_runs_the_command_from_path(
    isolated: HostEnv, workspace: Path
) -> None:
    request = SandboxRequest.from_meta({}, allow_unsandboxed=True)
    with request.prepare(["sh", "-c", "echo unsandboxed"]) as prepared:
        assert (prepared.sandboxed, prepared.executable, prepared.pass_fds) == (False, None, ())
        ran = prepared.run(capture_output=True, text=True, check=True)
    assert ran.stdout == "unsandboxed\n"
