"""``doctor``'s server verdicts say what is so: a remote server is not applicable (and no
failure of the exit code), a disabled one is not asked, and a fix points at a stderr
excerpt only where one is shown."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex


def write_config(path: Path, body: str) -> Path:
    path.write_text(body)
    return path


def capable_server(name: str, *, enabled: bool = True) -> str:
    """A stdio server entry (never started unless --check-servers)."""
    command = json.dumps(sys.executable)
    flag = "" if enabled else "enabled = false\n"
    return f'[mcp_servers.{name}]\ncommand = {command}\nargs = ["-c", "pass"]\n{flag}'


def test_a_remote_server_is_not_applicable_and_does_not_fail_the_exit_code(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path / "config.toml",
        capable_server("local") + '[mcp_servers.remote]\nurl = "https://mcp.example.com/mcp"\n',
    )
    argv = ("doctor", "--codex", str(fake_codex.path), "--codex-config", str(config))
    done = run_cli(*argv, env=host_env.env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    remote = lines.index("  remote: http https://mcp.example.com/mcp")
    assert lines[remote + 1].startswith("    launcher: not applicable (transport_not_stdio): ")
    assert not lines[remote + 2].lstrip().startswith("fix:")
    assert lines[-1].startswith("result: ok; launcher published: ")
    report = json.loads(run_cli(*argv, "--json", env=host_env.env).stdout)
    assert report["ok"] is True
    (part,) = (server for server in report["servers"]["servers"] if server["name"] == "remote")
    assert (part["launcher"], part["reason"], part["fix"]) == (
        "not_applicable",
        "transport_not_stdio",
        [],
    )


def test_a_disabled_server_is_not_said_to_be_asked(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "config.toml", capable_server("off", enabled=False))
    for extra in ((), ("--check-servers",)):
        done = run_cli(
            "doctor",
            "--codex",
            str(fake_codex.path),
            "--codex-config",
            str(config),
            *extra,
            env=host_env.env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "--check-servers asks it" not in done.stdout
        assert "    disabled (enabled = false)\n" in done.stdout
        assert (
            "    launcher: sent if it advertises codex/sandbox-state, once enabled "
            "(--check-servers starts no disabled server)\n"
        ) in done.stdout


def test_a_silent_hanging_server_shows_that_it_wrote_nothing(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    hangs = "import time; time.sleep(600)"
    command = json.dumps(sys.executable)
    config = write_config(
        tmp_path / "config.toml",
        f"[mcp_servers.quiet]\ncommand = {command}\nargs = ['-c', {json.dumps(hangs)}]\n",
    )
    done = run_cli(
        "doctor",
        "--codex",
        str(fake_codex.path),
        "--codex-config",
        str(config),
        "--check-servers",
        "--server-timeout",
        "1",
        env=host_env.env,
        timeout=60,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "excerpt above" not in done.stdout
    lines = done.stdout.splitlines()
    shown = lines.index("    stderr: (it wrote nothing)")
    assert lines[shown + 1].startswith("    launcher: unknown (initialize_timeout)")
    assert "(its end is the stderr: line above)" in lines[shown + 2]
