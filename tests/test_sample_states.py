"""``launcher-probe sample-state``: states of the shape Codex sends, that the real Codex CLI
enforces as their names say, shown in ``meta --help`` and usable as ``meta --state @FILE``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from launcher_probe.contract import SANDBOX_STATE_KEY
from launcher_probe.sandbox_policy import MODES, sample_state
from tests.conftest import ROOT, HostEnv, run_cli

CAPTURED = ROOT / "tests" / "data" / "codex-0.169.0-tools-call.json"


def printed(kind: str, cwd: Path, env: dict[str, str]) -> str:
    done = run_cli("sample-state", kind, "--cwd", str(cwd), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1  # one line of JSON
    return done.stdout.strip()


def test_a_workspace_write_state_has_the_shape_codex_sent(
    host_env: HostEnv, tmp_path: Path
) -> None:
    sent = json.loads(CAPTURED.read_text())["params"]["_meta"][SANDBOX_STATE_KEY]
    project = sent["sandboxCwd"].removeprefix("file://")
    expected = {key: value for key, value in sent.items() if key != "codexLinuxSandboxExe"}
    assert sample_state("workspace-write", project) == expected
    for kind in MODES:  # the command prints the module's state for --cwd
        shown = json.loads(printed(kind, tmp_path, host_env.env))
        assert shown == sample_state(kind, str(tmp_path))


def sandboxed(codex: Path, state: str, script: str, env: dict[str, str], cwd: Path) -> int:
    done = subprocess.run(
        [str(codex), "sandbox", "--sandbox-state-json", state, "--", "/bin/sh", "-c", script],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode


def test_the_real_codex_cli_enforces_each_sample_as_named(
    host_env: HostEnv, real_codex: Path, tmp_path: Path
) -> None:
    host_env.codex_home.mkdir(exist_ok=True)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    read_only = printed("read-only", project, host_env.env)
    assert sandboxed(real_codex, read_only, "echo x > ro", host_env.env, project) != 0
    assert not (project / "ro").exists()
    writable = printed("workspace-write", project, host_env.env)
    assert sandboxed(real_codex, writable, "echo x > rw", host_env.env, project) == 0
    assert (project / "rw").read_text() == "x\n"
    assert sandboxed(real_codex, writable, "echo x > .git/f", host_env.env, project) != 0
    assert not (project / ".git" / "f").exists()


def test_meta_help_shows_both_samples_and_meta_takes_one_as_a_file(
    host_env: HostEnv, tmp_path: Path
) -> None:
    done = run_cli("meta", "--help", env=host_env.env)
    assert done.returncode == 0
    shown = dict(
        line.strip().split(": ", 1)
        for line in done.stdout.splitlines()
        if line.startswith(tuple(f"  {kind}: " for kind in MODES))
    )
    assert {kind: json.loads(text) for kind, text in shown.items()} == {
        kind: sample_state(kind, "/home/me/project") for kind in MODES
    }
    state_file = tmp_path / "state.json"
    state_file.write_text(printed("read-only", tmp_path, host_env.env) + "\n")
    argv = ("meta", "--transport", "http", "--capabilities", '{"codex/sandbox-state": {}}')
    meta = run_cli(*argv, "--state", f"@{state_file}", env=host_env.env)
    assert meta.returncode == 0, meta.stderr
    assert json.loads(meta.stdout)[SANDBOX_STATE_KEY] == sample_state("read-only", str(tmp_path))


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (("sample-state", "full-access"), 2, "invalid choice: 'full-access'"),
        (("sample-state", "read-only", "--cwd", "/nonexistent/d"), 4, "no such directory"),
    ],
)
def test_an_unknown_kind_or_a_missing_directory_is_refused(
    host_env: HostEnv, argv: tuple[str, ...], code: int, message: str
) -> None:
    done = run_cli(*argv, env=host_env.env)
    assert (done.returncode, done.stdout) == (code, "")
    assert message in done.stderr
