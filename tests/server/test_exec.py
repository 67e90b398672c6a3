"""``launcher-probe exec``: real processes, the fake codex and the real Codex CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex


def read_only_state(workspace: Path) -> dict[str, Any]:
    return {
        "permissionProfile": {
            "type": "managed",
            "file_system": {
                "type": "restricted",
                "entries": [
                    {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}
                ],
            },
            "network": "restricted",
        },
        "sandboxCwd": workspace.as_uri(),
        "unknownFutureField": {"kept": True},
    }


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    directory = tmp_path / "workspace"
    directory.mkdir()
    return directory


@pytest.fixture
def dash_bin(tmp_path: Path) -> Path:
    """A PATH directory holding ``-dash``, a command whose name starts with ``-``."""
    directory = tmp_path / "bin"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    script = directory / "-dash"
    script.write_text('#!/bin/sh\necho "dash ran with $*"\n')
    script.chmod(0o755)
    return directory


def meta_json(launcher: Path | None, state: Any, **extra: Any) -> str:
    meta: dict[str, Any] = {SANDBOX_STATE_KEY: state, **extra}
    if launcher is not None:
        meta[SANDBOX_LAUNCHER_KEY] = {"codexExecutable": str(launcher)}
    return json.dumps(meta)


def test_exec_replaces_itself_with_the_exact_sandbox_argv(
    host_env: HostEnv, fake_codex: FakeCodex, workspace: Path, dash_bin: Path
) -> None:
    state = read_only_state(workspace)
    env = {**host_env.env, "PATH": f"{dash_bin}:/usr/bin:/bin"}
    meta = meta_json(fake_codex.path, state)
    process = subprocess.Popen(
        [sys.executable, "-m", "launcher_probe", "exec", "--meta", meta,
         "--readable-root", "/opt", "--disable-network", "--", "-dash", "--meta", "x"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    stdout, stderr = process.communicate(timeout=60)
    assert (process.returncode, stdout, stderr) == (0, "dash ran with --meta x\n", "")
    assert fake_codex.calls() == [
        ["sandbox", "--sandbox-state-json", compact(state),
         "--sandbox-state-readable-root", "/opt", "--sandbox-state-disable-network",
         "--", "-dash", "--meta", "x"]
    ]  # fmt: skip


def test_exec_has_no_process_in_between_and_keeps_the_exit_status(
    host_env: HostEnv, fake_codex: FakeCodex, workspace: Path
) -> None:
    meta = meta_json(fake_codex.path, read_only_state(workspace))
    process = subprocess.Popen(
        [sys.executable, "-m", "launcher_probe", "exec", "--meta", meta,
         "--", "sh", "-c", 'echo "$$ $(pwd)"; exit 7'],
        env=host_env.env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    stdout, _ = process.communicate(timeout=60)
    # The fake codex execs the command in place: same pid means exec all the way down.
    assert stdout == f"{process.pid} {workspace}\n"
    assert process.returncode == 7


def test_exec_reads_meta_from_a_file(
    host_env: HostEnv, fake_codex: FakeCodex, workspace: Path, tmp_path: Path
) -> None:
    meta_file = tmp_path / "meta.json"
    meta_file.write_text(meta_json(fake_codex.path, read_only_state(workspace)))
    result = run_cli("exec", "--meta", f"@{meta_file}", "--", "echo", "hi", env=host_env.env)
    assert (result.returncode, result.stdout, result.stderr) == (0, "hi\n", "")


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ("launcher-missing", "launcher missing: _meta has no codex/sandbox-launcher"),
        ("launcher-relative", "codexExecutable must be absolute: 'codex'"),
        ("launcher-not-a-string", "codexExecutable must be a string"),
        ("launcher-a-directory", "launcher unusable (not_regular_file)"),
        ("launcher-not-executable", "launcher unusable (not_executable)"),
        ("launcher-writable-by-others", "launcher unusable (unsafe_permissions)"),
        ("state-missing", "sandbox state missing: _meta has no codex/sandbox-state"),
        ("state-not-an-object", "sandbox state unusable: sandbox state must be a JSON object"),
        ("state-lone-surrogate", "contains a lone surrogate (\\ud800), which is not UTF-8"),
        ("ambiguous", "carry different states"),
        ("not-json", "--meta is not valid JSON"),
        ("not-object", "_meta must be a JSON object"),
        ("@missing-file", "cannot read --meta file"),
    ],
)
def test_exec_refuses_with_exit_4_and_runs_nothing(
    host_env: HostEnv, fake_codex: FakeCodex, workspace: Path, tmp_path: Path,
    meta: str, message: str,
) -> None:  # fmt: skip
    state = read_only_state(workspace)
    not_executable = tmp_path / "not-executable"
    shutil.copy(fake_codex.path, not_executable)
    not_executable.chmod(0o644)
    writable = tmp_path / "writable-by-others"
    shutil.copy(fake_codex.path, writable)
    writable.chmod(0o757)

    def forged(launcher: object) -> str:
        return json.dumps({SANDBOX_STATE_KEY: state, SANDBOX_LAUNCHER_KEY: launcher})

    given = {
        "launcher-missing": meta_json(None, state),
        "launcher-relative": forged({"codexExecutable": "codex"}),
        "launcher-not-a-string": forged({"codexExecutable": ["/bin/sh"]}),
        "launcher-a-directory": meta_json(fake_codex.path.parent, state),
        "launcher-not-executable": meta_json(not_executable, state),
        "launcher-writable-by-others": meta_json(writable, state),
        "state-not-an-object": meta_json(fake_codex.path, json.dumps(state)),
        "state-lone-surrogate": meta_json(fake_codex.path, {**state, "x": "\ud800"}),
        "state-missing": json.dumps(
            {SANDBOX_LAUNCHER_KEY: {"codexExecutable": str(fake_codex.path)}}
        ),
        "ambiguous": meta_json(fake_codex.path, state, **{SANDBOX_STATE_META_KEY: {"x": 1}}),
        "not-json": "{",
        "not-object": "[]",
        "@missing-file": f"@{tmp_path / 'absent.json'}",
    }[meta]
    marker = tmp_path / "marker"
    result = run_cli("exec", "--meta", given, "--", "touch", str(marker), env=host_env.env)
    assert result.returncode == 4
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("launcher-probe: ")
    assert message in result.stderr
    assert not marker.exists()
    assert fake_codex.calls() == []


@pytest.mark.parametrize(
    "args",
    [
        ["--meta", "{}", "echo", "hi"],  # no --
        ["--meta", "{}", "--"],  # no command
        ["--", "echo", "hi"],  # no --meta
        ["--meta", "{}", "--bogus", "--", "echo"],
    ],
)
def test_exec_usage_errors_exit_2(host_env: HostEnv, args: list[str]) -> None:
    result = run_cli("exec", *args, env=host_env.env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert result.stdout == ""


def test_exec_operator_opt_out_runs_unsandboxed_with_a_warning(
    host_env: HostEnv, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    result = run_cli(
        "exec", "--meta", "{}", "--allow-unsandboxed", "--", "touch", str(marker),
        env=host_env.env,
    )  # fmt: skip
    assert result.returncode == 0
    assert "UNSANDBOXED" in result.stderr
    assert "launcher missing" in result.stderr
    assert marker.exists()


@pytest.mark.real_codex
def test_exec_under_the_real_sandbox(
    host_env: HostEnv, real_codex: Path, workspace: Path, tmp_path: Path, dash_bin: Path
) -> None:
    host_env.codex_home.mkdir()  # the real CLI insists that CODEX_HOME exists
    meta = meta_json(real_codex, read_only_state(workspace))
    env = {**host_env.env, "PATH": f"{dash_bin}:/usr/bin:/bin"}
    echoed = run_cli("exec", "--meta", meta, "--", "echo", "hi", env=env)
    assert (echoed.returncode, echoed.stdout) == (0, "hi\n"), echoed.stderr
    dashed = run_cli("exec", "--meta", meta, "--", "-dash", "a", env=env)
    assert (dashed.returncode, dashed.stdout) == (0, "dash ran with a\n"), dashed.stderr
    outside = tmp_path / "outside"
    written = run_cli("exec", "--meta", meta, "--", "touch", str(outside), env=env)
    assert written.returncode == 1
    assert "Read-only file system" in written.stderr
    assert not outside.exists()
