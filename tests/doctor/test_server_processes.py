"""``doctor --check-servers`` leaves nothing running and keeps only a tail of stderr."""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from launcher_probe.doctor.check import STDERR_EXCERPT, check_server
from launcher_probe.doctor.servers import ServerConfig
from tests.conftest import HostEnv, run_cli
from tests.doctor.leaving_server import FLOOD_BYTES
from tests.doctor.test_servers import running_with, toml_string
from tests.processes import dies_soon

LEAVING = str(Path(__file__).resolve().parent / "leaving_server.py")


@pytest.fixture
def marker() -> Iterator[str]:
    """A fresh marker; whatever still carries it afterwards is killed (a failing test must
    not leave its sleepers for the rest of the run)."""
    value = f"launcher-probe-test-{secrets.token_hex(8)}"
    yield value
    for pid in running_with(value):
        os.kill(pid, signal.SIGKILL)


def test_a_child_in_its_own_group_and_a_double_forked_daemon_are_killed(
    host_env: HostEnv, tmp_path: Path, marker: str
) -> None:
    config = tmp_path / "codex.toml"
    python = toml_string(sys.executable)
    config.write_text(
        "".join(
            f"[mcp_servers.{mode}]\ncommand = {python}\n"
            f"args = [{toml_string(LEAVING)}, '{mode}', '{marker}']\n"
            for mode in ("pgrp", "daemon")
        )
    )
    done = run_cli(
        "doctor", "--codex-config", str(config), "--check-servers", "--json", env=host_env.env
    )
    servers = json.loads(done.stdout)["servers"]["servers"]
    assert [server["check"]["ok"] for server in servers] == [True, True], done.stdout
    left = running_with(marker)
    assert [pid for pid in left if not dies_soon(pid, 2.0)] == []


def test_a_flood_of_stderr_is_drained_through_a_pipe_into_a_bounded_tail(
    tmp_path: Path, marker: str
) -> None:
    server = ServerConfig("flood", sys.executable, (LEAVING, "flood", marker))
    checked = check_server(server, timeout=30.0)
    assert checked["ok"], checked
    assert checked["server_info"]["name"] == "stderr-pipe", "not a file that grows on disk"
    excerpt = checked["stderr_excerpt"]
    total = FLOOD_BYTES + len("the end of the flood\n")
    assert excerpt.startswith(f"[{total} bytes in all] ...")
    assert excerpt.endswith("the end of the flood\n")
    assert len(excerpt) <= STDERR_EXCERPT + len(f"[{total} bytes in all] ...")
