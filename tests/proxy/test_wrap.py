"""``wrap``: the command runs inside the verified ``codex sandbox`` (real CLI, every version),
or, with no verified launcher, not at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launcher_probe.proxy.program import ASYNCIO_NOTE
from tests.conftest import ROOT
from tests.fakes import FakeCodex
from tests.server.test_exec import INTERPRETER_IGNORED, SIGPIPE_BIT

WRAP = (sys.executable, "-m", "launcher_probe", "wrap")


def wrap(env: dict[str, str], cwd: Path, *words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WRAP, *words], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.mark.real_codex
def test_read_only_blocks_a_start_up_write_outside_the_workspace(
    env: dict[str, str], workspace: Path, tmp_path: Path, real_codex: Path
) -> None:
    outside = tmp_path / "outside.txt"
    script = f"echo starting; echo x > {outside} || exit 9; echo served"
    done = wrap(env, workspace, "--codex", str(real_codex), "--", "sh", "-c", script)
    assert done.returncode == 9, done.stderr
    assert done.stdout == "starting\n"
    assert "Read-only file system" in done.stderr
    assert not outside.exists()


@pytest.mark.real_codex
def test_workspace_write_lets_a_write_inside_land(
    env: dict[str, str], workspace: Path, real_codex: Path
) -> None:
    options = ["--codex", str(real_codex), "--sandbox", "workspace-write"]
    done = wrap(env, workspace, *options, "--", "sh", "-c", "echo made > inside.txt")
    assert done.returncode == 0, done.stderr
    assert (workspace / "inside.txt").read_text() == "made\n"


@pytest.mark.real_codex
def test_a_wrapped_command_cannot_start_a_sandbox_of_its_own(
    env: dict[str, str], workspace: Path, real_codex: Path
) -> None:
    """What composes (docs/hosts.md): a wrapped server that runs commands through the
    launcher gets no sandbox inside the sandbox; the inner command never runs."""
    state = subprocess.run(
        [sys.executable, "-m", "launcher_probe", "proxy", "--print-state"],
        env=env, cwd=workspace, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    inner = [str(real_codex), "sandbox", "--sandbox-state-json", state, "--"]
    inner += ["sh", "-c", "echo inner-command-ran >&2; echo ran > ran.txt"]
    options = ["--codex", str(real_codex), "--sandbox", "workspace-write"]
    done = wrap(env, workspace, *options, "--", *inner)
    assert done.returncode == 1
    assert "error building bubblewrap command" in done.stderr
    assert "inner-command-ran" not in done.stderr
    assert not (workspace / "ran.txt").exists()


def test_no_launcher_exits_3_and_runs_nothing(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    marker = workspace / "ran"
    options = ["--codex", str(tmp_path / "absent" / "codex"), "--json"]
    done = wrap(env, workspace, *options, "--", "touch", str(marker))
    assert done.returncode == 3
    assert not marker.exists()
    report = json.loads(done.stdout)["error"]
    assert report["reason"] == "nothing_usable"
    assert "launcher withheld (not_found)" in report["detail"]
    assert "running nothing" in done.stderr and "fix: " in done.stderr


def test_the_fix_follows_the_withheld_line_and_names_the_operators_path(
    env: dict[str, str], workspace: Path
) -> None:
    marker = workspace / "ran"
    done = wrap(env, workspace, "--codex", "relative/codex", "--", "touch", str(marker))
    assert done.returncode == 3
    assert not marker.exists()
    assert done.stderr.splitlines() == [
        "launcher-probe: launcher withheld (not_absolute): 'relative/codex' is not absolute; "
        "running nothing",
        'launcher-probe: fix: give an absolute path, e.g. --codex "$(readlink -f relative/codex)"',
    ]


def test_the_operators_opt_out_runs_it_unsandboxed(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    marker = workspace / "ran"
    options = ["--codex", str(tmp_path / "absent" / "codex"), "--allow-unsandboxed"]
    done = wrap(env, workspace, *options, "--", "touch", str(marker))
    assert done.returncode == 0, done.stderr
    assert marker.exists()
    assert "UNSANDBOXED" in done.stderr


def test_a_stream_the_caller_closed_is_dev_null_for_the_command(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    """``wrap ... 2>&- 0<&-``: the command gets /dev/null on those fds, as wrap has, never
    a closed fd that its first open file would take."""
    options = ["--codex", str(tmp_path / "absent" / "codex"), "--allow-unsandboxed"]
    script = "readlink /proc/$$/fd/0 /proc/$$/fd/2 > fds"
    argv = [*WRAP, *options, "--", "sh", "-c", script]
    done = subprocess.run(
        ["bash", "-c", '"$@" 0<&- 2>&-', "-", *argv], env=env, cwd=workspace, timeout=120
    )
    assert done.returncode == 0
    assert (workspace / "fds").read_text().split() == ["/dev/null", "/dev/null"]


def test_a_permission_profile_goes_to_codex_sandbox(
    env: dict[str, str], workspace: Path, fake_codex: FakeCodex
) -> None:
    options = ["--codex", str(fake_codex.path), "--permission-profile", "build"]
    wrap(env, workspace, *options, "--", "true")
    assert fake_codex.calls()[-1] == ["sandbox", "-P", "build", "--", "true"]


@pytest.mark.parametrize(
    ("command", "error"),
    [
        ("no-such-server", "No such file or directory"),
        ("TMP", "Permission denied"),  # a directory
        ("TMP/not-executable", "Permission denied"),
        ("", "No such file or directory"),
    ],
)
def test_a_command_that_cannot_run_is_refused_before_the_sandbox(
    env: dict[str, str], workspace: Path, tmp_path: Path, fake_codex: FakeCodex,
    command: str, error: str,
) -> None:  # fmt: skip
    """exit 4 and one line, as the proxy refuses such a command; the sandbox is never
    started (``codex sandbox`` itself answers with a panic and exit 101)."""
    (tmp_path / "not-executable").write_text("#!/bin/sh\n")
    command = command.replace("TMP", str(tmp_path))
    done = wrap(env, workspace, "--codex", str(fake_codex.path), "--", command)
    assert done.returncode == 4
    assert done.stderr == f"launcher-probe: cannot execute {command!r}: {error}\n"
    assert fake_codex.calls() == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["-P", "build", "--network"], "takes the place of the policy options"),
        # --sandbox given, even as its default: the operator asked for two policies.
        (["-P", "build", "--sandbox", "read-only"], "takes the place of the policy options"),
        (["-P", "build", "--sandbox", "workspace-write"], "takes the place of the policy options"),
        (["-P", "build", "--state", "{}"], "takes the place of the policy options"),
        (["--state", "{}", "--sandbox", "read-only"], "takes the whole state"),
    ],
)
def test_two_policies_together_are_a_usage_error(
    env: dict[str, str], workspace: Path, fake_codex: FakeCodex, options: list[str], message: str
) -> None:
    done = wrap(env, workspace, "--codex", str(fake_codex.path), *options, "--", "true")
    assert done.returncode == 2 and message in done.stderr
    assert fake_codex.calls() == []  # nothing resolved, nothing run


@pytest.mark.real_codex
def test_the_command_gets_the_signals_python_ignores_at_their_defaults(
    env: dict[str, str], workspace: Path, tmp_path: Path, real_codex: Path
) -> None:
    """As ``subprocess`` does: else it starts with SIGPIPE and SIGXFSZ ignored (a ``cmd |
    head`` fails with EPIPE instead of ending). Codex itself gives what it runs SIGPIPE
    ignored (it is a Rust program): only SIGXFSZ is ours to give back there; the
    operator's opt-out runs the command with both at their defaults."""
    command = ["grep", "^SigIgn:", "/proc/self/status"]
    sandboxed = wrap(env, workspace, "--codex", str(real_codex), "--", *command)
    assert sandboxed.returncode == 0, sandboxed.stderr
    assert int(sandboxed.stdout.split()[1], 16) & INTERPRETER_IGNORED == SIGPIPE_BIT
    options = ["--codex", str(tmp_path / "absent" / "codex"), "--allow-unsandboxed"]
    unsandboxed = wrap(env, workspace, *options, "--", *command)
    assert unsandboxed.returncode == 0, unsandboxed.stderr
    assert int(unsandboxed.stdout.split()[1], 16) & INTERPRETER_IGNORED == 0


NOTE = f"launcher-probe: note: {ASYNCIO_NOTE}"


def test_the_asyncio_note_is_the_documented_text() -> None:
    hosts = (ROOT / "docs" / "hosts.md").read_text()
    assert f"```text\n{NOTE}\n```" in hosts


@pytest.mark.parametrize(
    ("command", "noted"),
    [
        (["python3", "-c", "pass"], True),
        ([sys.executable, "-c", "pass"], True),
        (["uvx", "mcp-server-fetch"], True),
        (["pypy3", "server.py"], True),
        (["python3.13t", "server.py"], True),
        (["pythonw", "server.py"], False),
        (["TOOLS/pipx", "run", "some-server"], True),  # TOOLS: the stand-ins' directory
        (["py-server"], True),  # #!/usr/bin/env python3, found on PATH
        (["uv-script"], True),  # #!/usr/bin/env -S uv run --script
        (["env-options-server"], True),  # #!/usr/bin/env -S PYTHONUNBUFFERED=1 -u FOO python3
        (["pip-launcher"], True),  # pip's /bin/sh launcher: a space in the interpreter's path
        (["env", "-i", "python3", "-c", "pass"], True),
        (["env", "-u", "FOO", "python3", "-c", "pass"], True),  # -u's value is no program
        (["env", "-C", "/tmp/python", "node", "-e", "1"], False),  # nor is -C's
        (["sh-server"], False),  # #!/bin/sh
        (["fifo-server"], False),  # a FIFO on PATH: never opened, never waited on
        (["sh", "-c", "true"], False),
        (["npx", "-y", "@modelcontextprotocol/server-filesystem", "."], False),
    ],
)
def test_a_python_program_with_the_network_restricted_gets_the_asyncio_note(
    env: dict[str, str], workspace: Path, tmp_path: Path, fake_codex: FakeCodex,
    command: list[str], noted: bool,
) -> None:  # fmt: skip
    tools = tmp_path / "tools"
    tools.mkdir()
    for name, head in (
        ("py-server", "#!/usr/bin/env python3\n"),
        ("sh-server", "#!/bin/sh\n"),
        ("uv-script", "#!/usr/bin/env -S uv run --script\n"),
        ("env-options-server", "#!/usr/bin/env -S PYTHONUNBUFFERED=1 -u FOO python3\n"),
        (
            "pip-launcher",
            "#!/bin/sh\n'''exec' \"/opt/my tools/bin/python3\" \"$0\" \"$@\"\n' '''\n",
        ),
    ):
        (tools / name).write_text(f"{head}exit 0\n")
        (tools / name).chmod(0o755)
    for name in ("uvx", "pypy3", "python3.13t", "pythonw", "pipx"):  # wrap runs what is there
        (tools / name).write_text("#!/bin/sh\nexit 0\n")
        (tools / name).chmod(0o755)
    os.mkfifo(tools / "fifo-server", 0o755)
    command = [command[0].replace("TOOLS", str(tools)), *command[1:]]
    path_env = {**env, "PATH": f"{tools}{os.pathsep}{env['PATH']}"}
    done = wrap(path_env, workspace, "--codex", str(fake_codex.path), "--", *command)
    assert (NOTE in done.stderr.splitlines()) is noted, done.stderr
    assert fake_codex.calls()[-1][-len(command) :] == command  # it ran, noted or not


@pytest.mark.parametrize("options", [["--network"], ["-P", "build"], ["--state"]])
def test_no_note_when_the_network_is_open_or_the_policy_not_the_options(
    env: dict[str, str], workspace: Path, fake_codex: FakeCodex, options: list[str]
) -> None:
    if options == ["--state"]:  # Codex reads a state given verbatim, not launcher-probe
        state = {"permissionProfile": {"type": "disabled"}, "sandboxCwd": workspace.as_uri()}
        options = ["--state", json.dumps(state)]
    done = wrap(env, workspace, "--codex", str(fake_codex.path), *options, "--", "python3", "-V")
    assert NOTE not in done.stderr
    assert fake_codex.calls()[-1][-2:] == ["python3", "-V"]
