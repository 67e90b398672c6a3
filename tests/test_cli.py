"""The CLI's promises common to every command: one stderr line, exit codes, --help."""

from __future__ import annotations

import pytest

from launcher_probe.cli import COMMANDS
from tests.conftest import HostEnv, run_cli


def test_a_refusal_is_one_line_with_control_characters_escaped(host_env: HostEnv) -> None:
    done = run_cli("resolve", "--codex", "/nowhere/co\ndex\x1b[31m", env=host_env.env)
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1
    assert "\x1b" not in done.stderr
    assert "dex\\x1b[31m" in done.stderr


def test_a_usage_error_is_exit_2_and_one_line(host_env: HostEnv) -> None:
    done = run_cli("resolve", "--no-such-option", env=host_env.env)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "--no-such-option" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_explains_itself_and_the_exit_codes(host_env: HostEnv, command: str) -> None:
    done = run_cli(command, "--help", env=host_env.env)
    assert done.returncode == 0
    assert "exit codes:" in done.stdout
    assert "4  input rejected or refused" in done.stdout


def test_debug_adds_a_traceback_and_keeps_the_exit_code(host_env: HostEnv) -> None:
    plain = run_cli("exec", "--meta", "[]", "--", "true", env=host_env.env)
    for argv in (
        ("--debug", "exec", "--meta", "[]", "--", "true"),
        ("exec", "--debug", "--meta", "[]", "--", "true"),
    ):
        done = run_cli(*argv, env=host_env.env)
        assert done.returncode == plain.returncode == 4
        assert "Traceback" in done.stderr
        assert done.stderr.splitlines()[-1] == plain.stderr.strip()
