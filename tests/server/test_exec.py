"""``launcher-probe exec``: real processes; the real Codex CLI is the only launcher it runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY
from tests.conftest import HostEnv, run_cli
from tests.fakes import install_fake_codex
from tests.server.launchers import elf_named, foreign_elf, script_named


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


def disabled_state(workspace: Path) -> dict[str, Any]:
    return {"permissionProfile": {"type": "disabled"}, "sandboxCwd": workspace.as_uri()}


def test_exec_runs_the_command_under_the_sandbox_with_its_arguments(
    isolated: HostEnv, codex: str, workspace: Path, dash_bin: Path
) -> None:
    env = {**isolated.env, "PATH": f"{dash_bin}:/usr/bin:/bin"}
    meta = meta_json(Path(codex), read_only_state(workspace))
    result = run_cli(
        "exec", "--meta", meta, "--readable-root", "/opt", "--disable-network",
        "--", "-dash", "--meta", "x", env=env,
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (0, "dash ran with --meta x\n"), result.stderr


def test_exec_has_no_process_in_between_and_keeps_the_exit_status(
    isolated: HostEnv, codex: str, workspace: Path
) -> None:
    meta = meta_json(Path(codex), disabled_state(workspace))
    process = subprocess.Popen(
        [sys.executable, "-m", "launcher_probe", "exec", "--meta", meta,
         "--", "sh", "-c", 'echo "$PPID $(pwd) $IS_SANDBOX"; exit 7'],
        env=isolated.env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    stdout, _ = process.communicate(timeout=60)
    # exec became codex (same pid), and codex started the command in sandboxCwd.
    assert stdout == f"{process.pid} {workspace} yes\n"
    assert process.returncode == 7


def test_exec_reads_meta_from_a_file(
    isolated: HostEnv, codex: str, workspace: Path, tmp_path: Path
) -> None:
    meta_file = tmp_path / "meta.json"
    meta_file.write_text(meta_json(Path(codex), disabled_state(workspace)))
    result = run_cli("exec", "--meta", f"@{meta_file}", "--", "echo", "hi", env=isolated.env)
    assert (result.returncode, result.stdout) == (0, "hi\n"), result.stderr


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ("launcher-missing", "launcher missing: _meta has no codex/sandbox-launcher"),
        ("launcher-relative", "codexExecutable must be absolute: 'codex'"),
        ("launcher-not-a-string", "codexExecutable must be a string"),
        ("launcher-a-directory", "launcher unusable (not_regular_file)"),
        ("launcher-not-executable", "launcher unusable (not_executable)"),
        ("launcher-writable-by-others", "launcher unusable (unsafe_permissions)"),
        ("launcher-an-elf-named-otherwise", "launcher unusable (not_codex): "),
        ("launcher-a-script-named-codex", "launcher unusable (wrong_platform): "),
        ("launcher-the-fake-codex-as-a-script", "launcher unusable (wrong_platform): "),
        ("launcher-a-foreign-elf", "launcher unusable (wrong_platform): "),
        ("launcher-a-native-impostor", "launcher unusable (not_codex): "),
        ("state-missing", "sandbox state missing: _meta has no codex/sandbox-state"),
        ("state-not-an-object", "sandbox state unusable: sandbox state must be a JSON object"),
        ("state-lone-surrogate", "contains a lone surrogate (\\ud800), which is not UTF-8"),
        ("state-deeply-nested", "nested deeper than"),
        ("ambiguous", "carry different states"),
        ("not-json", "--meta is not valid JSON"),
        ("not-object", "_meta must be a JSON object"),
        ("null", "_meta must be a JSON object, not null"),
        ("not-utf8", "--meta is not valid UTF-8"),
        ("@missing-file", "cannot read --meta file"),
    ],
)
def test_exec_refuses_with_exit_4_and_runs_nothing(
    isolated: HostEnv, codex: str, workspace: Path, tmp_path: Path, meta: str, message: str
) -> None:
    state = read_only_state(workspace)
    marker = tmp_path / "marker"
    launchers = tmp_path / "launchers"
    (tmp_path / "fake").mkdir()
    fake_script = install_fake_codex(tmp_path / "fake", script=True)

    def forged(launcher: object) -> str:
        return json.dumps({SANDBOX_STATE_KEY: state, SANDBOX_LAUNCHER_KEY: launcher})

    def with_launcher(path: Path | str) -> str:
        return forged({"codexExecutable": str(path)})

    def with_mode(name: str, mode: int) -> Path:
        path = elf_named(launchers, name)
        path.chmod(mode)
        return path

    real = Path(codex)
    make: dict[str, Callable[[], str]] = {
        "launcher-missing": lambda: meta_json(None, state),
        "launcher-relative": lambda: forged({"codexExecutable": "codex"}),
        "launcher-not-a-string": lambda: forged({"codexExecutable": ["/bin/sh"]}),
        "launcher-a-directory": lambda: meta_json(real.parent, state),
        "launcher-not-executable": lambda: with_launcher(with_mode("codex", 0o644)),
        "launcher-writable-by-others": lambda: with_launcher(with_mode("codex", 0o757)),
        "launcher-an-elf-named-otherwise": lambda: with_launcher(elf_named(launchers, "touch")),
        "launcher-a-script-named-codex": lambda: with_launcher(
            script_named(launchers, "codex", marker)
        ),
        "launcher-the-fake-codex-as-a-script": lambda: with_launcher(fake_script.path),
        "launcher-a-foreign-elf": lambda: with_launcher(foreign_elf(launchers)),
        "launcher-a-native-impostor": lambda: with_launcher(elf_named(launchers, "codex")),
        "state-not-an-object": lambda: meta_json(real, json.dumps(state)),
        "state-lone-surrogate": lambda: meta_json(real, {**state, "x": "\ud800"}),
        "state-deeply-nested": lambda: meta_json(real, {**state, "x": "DEEP"}).replace(
            '"DEEP"', "[" * 985 + "]" * 985
        ),
        "state-missing": lambda: json.dumps({SANDBOX_LAUNCHER_KEY: {"codexExecutable": codex}}),
        "ambiguous": lambda: meta_json(real, state, **{SANDBOX_STATE_META_KEY: {"x": 1}}),
        "not-json": lambda: "{",
        "not-object": lambda: "[]",
        "null": lambda: "null",
        "not-utf8": lambda: os.fsdecode(b'{"x": "\xff"}'),
        "@missing-file": lambda: f"@{tmp_path / 'absent.json'}",
    }
    result = run_cli("exec", "--meta", make[meta](), "--", "touch", str(marker), env=isolated.env)
    assert result.returncode == 4, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("launcher-probe: ")
    assert message in result.stderr
    assert not marker.exists()
    assert fake_script.calls() == []


def test_exec_never_runs_a_shell_named_as_the_launcher(
    isolated: HostEnv, workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    sandbox = workspace / "sandbox"  # what `sh sandbox --sandbox-state-json ...` would run
    sandbox.write_text(f'#!/bin/sh\ntouch "{marker}"\n')
    sandbox.chmod(0o755)
    sh = shutil.which("sh")
    meta = json.dumps(
        {
            SANDBOX_STATE_KEY: disabled_state(workspace),
            SANDBOX_LAUNCHER_KEY: {"codexExecutable": sh},
        }
    )
    result = run_cli("exec", "--meta", meta, "--", "true", env=isolated.env, cwd=workspace)
    assert result.returncode == 4
    assert "launcher unusable (not_codex)" in result.stderr
    assert not marker.exists()
    # Opted out, the command runs as given; the unverified launcher still does not.
    opted = tmp_path / "opted-out"
    result = run_cli(
        "exec", "--meta", meta, "--allow-unsandboxed", "--", "touch", str(opted),
        env=isolated.env, cwd=workspace,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "UNSANDBOXED" in result.stderr and "(not_codex)" in result.stderr
    assert opted.exists() and not marker.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--meta", "{}", "echo", "hi"],  # no --
        ["--meta", "{}", "--"],  # no command
        ["--", "echo", "hi"],  # no --meta
        ["--meta", "{}", "--bogus", "--", "echo"],
    ],
)
def test_exec_usage_errors_exit_2(isolated: HostEnv, args: list[str]) -> None:
    result = run_cli("exec", *args, env=isolated.env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert result.stdout == ""


def test_exec_operator_opt_out_runs_unsandboxed_with_a_warning(
    isolated: HostEnv, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    result = run_cli(
        "exec", "--meta", "{}", "--allow-unsandboxed", "--", "touch", str(marker),
        env=isolated.env,
    )  # fmt: skip
    assert result.returncode == 0
    (warning,) = result.stderr.splitlines()  # one line, as every warning of the CLI
    assert warning.startswith("launcher-probe: warning: running 'touch' UNSANDBOXED because ")
    assert "launcher missing" in result.stderr
    assert marker.exists()


def test_exec_under_the_real_sandbox(
    isolated: HostEnv, real_codex: Path, workspace: Path, tmp_path: Path, dash_bin: Path
) -> None:
    meta = meta_json(real_codex, read_only_state(workspace))
    env = {**isolated.env, "PATH": f"{dash_bin}:/usr/bin:/bin"}
    echoed = run_cli("exec", "--meta", meta, "--", "echo", "hi", env=env)
    assert (echoed.returncode, echoed.stdout) == (0, "hi\n"), echoed.stderr
    dashed = run_cli("exec", "--meta", meta, "--", "-dash", "a", env=env)
    assert (dashed.returncode, dashed.stdout) == (0, "dash ran with a\n"), dashed.stderr
    outside = tmp_path / "outside"
    written = run_cli("exec", "--meta", meta, "--", "touch", str(outside), env=env)
    assert written.returncode == 1
    assert "Read-only file system" in written.stderr
    assert not outside.exists()


#: SIGPIPE and SIGXFSZ, which the interpreter ignores at start-up, in ``SigIgn``'s mask;
#: Codex's sandbox gives what it runs SIGPIPE ignored itself (it is a Rust program).
SIGPIPE_BIT = 1 << (13 - 1)
INTERPRETER_IGNORED = SIGPIPE_BIT | 1 << (25 - 1)


def test_exec_gives_the_command_the_signals_python_ignores_at_their_defaults(
    isolated: HostEnv, real_codex: Path, workspace: Path
) -> None:
    """As ``subprocess`` does (but SIGPIPE, which Codex ignores for what it runs); the
    operator's opt-out runs the command with both at their defaults."""
    command = ["grep", "^SigIgn:", "/proc/self/status"]
    for launcher, allowed, ignored in (
        (real_codex, [], SIGPIPE_BIT),
        (None, ["--allow-unsandboxed"], 0),
    ):
        meta = meta_json(launcher, read_only_state(workspace))
        shown = run_cli("exec", "--meta", meta, *allowed, "--", *command, env=isolated.env)
        assert shown.returncode == 0, shown.stderr
        assert int(shown.stdout.split()[1], 16) & INTERPRETER_IGNORED == ignored


#: ``exec`` run by a thread of a host's own Python process, not the main one (no signal
#: handler can be set there).
OFF_THE_MAIN_THREAD = r"""
import sys, threading
from launcher_probe.cli import main
words = ["exec", "--allow-unsandboxed", "--meta", "{}", "--", "echo", "ran"]
threading.Thread(target=main, args=(words,)).start()
"""


def test_exec_off_the_main_thread(isolated: HostEnv) -> None:
    done = subprocess.run(
        [sys.executable, "-c", OFF_THE_MAIN_THREAD],
        env=isolated.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "ran\n"), done.stderr
