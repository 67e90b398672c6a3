"""Regression tests for three ways an unverified launcher could get through: a procfs magic
link, a memory-front answer behind a shim, and a same-uid helper claiming a verdict."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from launcher_probe.contract import Reason
from launcher_probe.host.decision import Published
from launcher_probe.host.paths.rules import check_launcher_path
from launcher_probe.host.resolver import resolve_launcher
from launcher_probe.server.request import LauncherUnavailable, SandboxRequest
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex, install_fake_codex
from tests.service.helper import short_directory


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


def test_the_memory_front_never_answers_behind_a_shim(
    host_env: HostEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind an asdf shim the binary depends on ASDF_DATA_DIR: in one process, the second
    resolve with another data dir gets (and probes) the other binary."""
    fakes: dict[str, FakeCodex] = {}
    for name in ("a", "b"):
        bin_dir = tmp_path / f"asdf-{name}" / "installs" / "nodejs" / "22.12.0" / "bin"
        bin_dir.mkdir(parents=True)
        fakes[name] = install_fake_codex(bin_dir)
    shim = tmp_path / "tools" / "codex"
    shim.parent.mkdir()
    shim.write_text('#!/bin/sh\n# asdf-plugin: nodejs 22.12.0\nexec /opt/asdf exec "codex" "$@"\n')
    shim.chmod(0o755)
    for name in ("a", "b"):
        monkeypatch.setenv("ASDF_DATA_DIR", str(tmp_path / f"asdf-{name}"))
        decision = resolve_launcher(str(shim))
        assert isinstance(decision, Published), decision
        assert decision.descriptor.codex_executable == str(fakes[name].path)
    assert (fakes["a"].probe_count(), fakes["b"].probe_count()) == (1, 1)


def test_a_helper_cannot_publish_what_this_user_never_verified(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """A same-uid process answering on the helper's socket with a launcher that passes the
    path rules but has no passed verdict in the cache: `--via helper` refuses it, `auto`
    resolves locally (and probes)."""
    walked = resolve_launcher(str(fake_codex.path), use_cache=False)
    assert isinstance(walked, Published)
    claim = {**walked.to_json(), "schema": 1}
    probes = fake_codex.probe_count()  # that one, uncached
    with short_directory() as directory:
        runtime = directory / "run"
        (runtime / "launcher-probe").mkdir(parents=True, mode=0o700)
        runtime.chmod(0o700)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(runtime / "launcher-probe" / "launcher-probe.sock"))
        listener.listen()

        def answer_every_request() -> None:
            while True:
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                with connection:
                    connection.recv(1 << 16)
                    line = {"v": 1, "ok": True, "result": claim}
                    connection.sendall(json.dumps(line).encode() + b"\n")

        threading.Thread(target=answer_every_request, daemon=True).start()
        env = {**host_env.env, "XDG_RUNTIME_DIR": str(runtime)}
        try:
            refused = run_cli(
                "resolve", "--via", "helper", "--codex", str(fake_codex.path), env=env
            )
            assert refused.returncode == 3, refused.stdout + refused.stderr
            assert "no passed verdict" in refused.stderr
            assert fake_codex.probe_count() == probes
            local = run_cli(
                "resolve", "--json", "--via", "auto", "--codex", str(fake_codex.path), env=env
            )
            assert local.returncode == 0, local.stderr
            report = json.loads(local.stdout)
            assert (report["via"], report["from_cache"]) == ("local", False)
            assert fake_codex.probe_count() == probes + 1
        finally:
            listener.close()
    assert os.path.exists(fake_codex.path)
