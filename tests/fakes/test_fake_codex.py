"""The fake codex itself: default behaviour, side files, and the faults other tests rely on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from launcher_probe.host.native.follow import resolve_native
from launcher_probe.host.native.host_format import native_executable_problem
from tests.fakes import FakeCodex, install_fake_codex, native

MINIMAL_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}


def run(fake: FakeCodex, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(fake.path), *args],
        env=MINIMAL_ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def sandbox_args(cwd: Path, *command: str) -> list[str]:
    state = {"permissionProfile": {"type": "disabled"}, "sandboxCwd": cwd.as_uri()}
    return ["sandbox", "--sandbox-state-json", json.dumps(state), "--", *command]


def test_the_fake_is_a_native_executable_running_as_itself(
    fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """Native for this host (discovery resolves it to itself); reached through a symlink,
    it still keeps its side files beside the installed file."""
    assert native_executable_problem(str(fake_codex.path)) is None
    assert resolve_native(str(fake_codex.path)).native == str(fake_codex.path)
    link = tmp_path / "link-to-codex"
    link.symlink_to(fake_codex.path)
    ran = subprocess.run([str(link), "--version"], capture_output=True, text=True, check=False)
    assert ran.stdout == "codex-cli 0.169.0\n"
    assert fake_codex.calls() == [["--version"]]
    script_form = install_fake_codex(fake_codex.path.parent, "scripted", script=True)
    assert script_form.script == script_form.path
    assert native_executable_problem(str(script_form.path)) is not None


def test_without_a_c_compiler_the_fake_cannot_be_built_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(native, "CACHE", tmp_path / "cache")
    monkeypatch.setenv("CC", "no-such-compiler")
    native.native_launcher.cache_clear()
    try:
        with pytest.raises(native.LauncherBuildFailed) as failed:
            native.native_launcher()
    finally:
        native.native_launcher.cache_clear()
    assert "no C compiler was found ($CC=no-such-compiler): install one" in str(failed.value)


def test_default_version_and_sandbox_run_the_command_in_sandbox_cwd(
    fake_codex: FakeCodex, tmp_path: Path
) -> None:
    assert run(fake_codex, "--version").stdout == "codex-cli 0.169.0\n"
    workspace = tmp_path / "work space"
    workspace.mkdir()
    ran = run(fake_codex, *sandbox_args(workspace, "/bin/sh", "-c", 'pwd; printf %s "$IS_SANDBOX"'))
    assert (ran.returncode, ran.stdout) == (0, f"{workspace}\nyes")
    assert fake_codex.probe_count() == 1
    assert fake_codex.calls()[1][:2] == ["sandbox", "--sandbox-state-json"]


def test_default_sandbox_rejects_a_bad_state_and_unknown_flags(
    fake_codex: FakeCodex, tmp_path: Path
) -> None:
    relative = run(fake_codex, "sandbox", "--sandbox-state-json", '{"permissionProfile":{}}', "--")
    assert relative.returncode == 1
    assert "invalid --sandbox-state-json value" in relative.stderr
    unknown = run(fake_codex, "sandbox", "--bogus", "--", "true")
    assert unknown.returncode == 2
    assert "unexpected argument '--bogus'" in unknown.stderr


def test_calls_are_recorded_by_32_parallel_invocations(fake_codex: FakeCodex) -> None:
    with ThreadPoolExecutor(32) as pool:
        results = list(pool.map(lambda _: run(fake_codex, "--version"), range(32)))
    assert all(result.returncode == 0 for result in results)
    assert fake_codex.calls() == [["--version"]] * 32
    assert fake_codex.probe_count() == 32


@pytest.mark.parametrize(
    ("fault", "params", "returncode", "stderr"),
    [
        ("no_sandbox", {}, 2, "unrecognized subcommand 'sandbox'"),
        ("no_sandbox", {"flag": True}, 2, "unexpected argument '--sandbox-state-json'"),
        ("state_rejected", {}, 1, "Error: invalid --sandbox-state-json value:"),
        ("sandbox_broken", {}, 1, "bwrap:"),
        ("bwrap_missing", {}, 101, "\nbubblewrap is unavailable: no system bwrap was found"),
        ("exit_status", {"code": 42}, 42, ""),
        ("crash", {"signal": int(signal.SIGSEGV)}, -signal.SIGSEGV, ""),
    ],
)
def test_sandbox_faults(
    fake_codex: FakeCodex,
    tmp_path: Path,
    fault: str,
    params: dict[str, object],
    returncode: int,
    stderr: str,
) -> None:
    fake_codex.set_fault(fault, **params)
    assert run(fake_codex, "--version").stdout == "codex-cli 0.169.0\n"
    ran = run(fake_codex, *sandbox_args(tmp_path, "/bin/sh", "-c", "printf ok"))
    assert ran.returncode == returncode
    assert stderr in ran.stderr
    assert ran.stdout == ""


def test_output_faults(fake_codex: FakeCodex, tmp_path: Path) -> None:
    fake_codex.set_fault("wrong_version")
    assert not run(fake_codex, "--version").stdout.startswith("codex-cli ")
    fake_codex.set_fault("noise")
    noisy = run(fake_codex, *sandbox_args(tmp_path, "/bin/sh", "-c", "printf nonce"))
    assert noisy.stdout != "nonce" and "nonce" in noisy.stdout
    fake_codex.set_fault("wrong_nonce")
    wrong = run(fake_codex, *sandbox_args(tmp_path, "/bin/sh", "-c", "printf nonce"))
    assert (wrong.returncode, len(wrong.stdout)) == (0, 32)
    fake_codex.set_fault("flood", megabytes=3)
    assert len(run(fake_codex, *sandbox_args(tmp_path, "true")).stdout) == 3 << 20
    fake_codex.set_fault(None)
    assert run(fake_codex, "--version").stdout == "codex-cli 0.169.0\n"


def test_slow_start_waits_for_its_gate(fake_codex: FakeCodex, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    fake_codex.set_fault("slow_start", seconds=60, gate=str(gate))
    process = subprocess.Popen(
        [str(fake_codex.path), "--version"], env=MINIMAL_ENV, stdout=subprocess.PIPE
    )
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(0.5)
    gate.touch()
    assert process.communicate(timeout=30)[0] == b"codex-cli 0.169.0\n"


def test_replace_self_gives_the_file_a_new_inode_then_stops(
    fake_codex: FakeCodex, tmp_path: Path
) -> None:
    fake_codex.set_fault("replace_self", times=1)
    before = fake_codex.path.stat()
    first = run(fake_codex, *sandbox_args(tmp_path, "/bin/sh", "-c", "printf ok"))
    middle = fake_codex.path.stat()
    second = run(fake_codex, *sandbox_args(tmp_path, "/bin/sh", "-c", "printf ok"))
    assert (first.stdout, second.stdout) == ("ok", "ok")
    assert middle.st_ino != before.st_ino
    assert fake_codex.path.stat().st_ino == middle.st_ino
    assert os.access(fake_codex.path, os.X_OK)
    assert fake_codex.replacements() == 1


def test_hang_leaves_a_grandchild_holding_stdout(fake_codex: FakeCodex, tmp_path: Path) -> None:
    fake_codex.set_fault("hang")
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        [str(fake_codex.path), *sandbox_args(tmp_path, "true")], env=MINIMAL_ENV, stdout=write_end
    )
    os.close(write_end)
    try:
        while not fake_codex.grandchild_pids():
            with pytest.raises(subprocess.TimeoutExpired):
                process.wait(0.05)
        (pid,) = fake_codex.grandchild_pids()
        process.kill()
        process.wait()
        assert psutil.Process(pid).is_running()
        assert os.stat(f"/proc/{pid}/fd/1").st_ino == os.fstat(read_end).st_ino
    finally:
        for pid in fake_codex.grandchild_pids():
            psutil.Process(pid).kill()
        os.close(read_end)


def test_double_fork_daemon_outlives_the_fake_out_of_its_session_with_nothing_open(
    fake_codex: FakeCodex,
) -> None:
    """Without a subreaper the daemon survives its parent: nothing but a supervisor above it
    can find it (its parent is gone, its session is its own, it holds no descriptor)."""
    fake_codex.set_fault("double_fork_daemon")
    ran = run(fake_codex, "--version")
    try:
        assert (ran.returncode, ran.stdout) == (0, "codex-cli 0.169.0\n")
        (pid,) = fake_codex.daemon_pids()
        daemon = psutil.Process(pid)
        assert daemon.is_running() and daemon.status() != psutil.STATUS_ZOMBIE
        assert daemon.cmdline()[-2:] == ["launcher-probe-test-daemon", str(fake_codex.path)]
        (context,) = fake_codex.contexts()
        assert os.getsid(pid) not in (context["sid"], os.getsid(0))
        assert daemon.ppid() != os.getpid()
        assert os.listdir(f"/proc/{pid}/fd") == []
    finally:
        for pid in fake_codex.daemon_pids():
            psutil.Process(pid).kill()
