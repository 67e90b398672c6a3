"""Stopping and reloading the helper: SIGTERM/SIGINT finish in-flight requests (2 s at
most), remove the socket and exit 0; SIGHUP re-reads the config file."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil
import pytest

from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex, install_fake_codex
from tests.processes import dies_soon
from tests.service.helper import (
    Helper,
    ask,
    connect,
    read_line,
    running_helper,
    wait_until,
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_removes_the_socket_and_exits_0(helper: Helper, sig: int) -> None:
    with connect(helper.socket) as idle:
        assert ask(idle, {"op": "status"})["ok"] is True
        assert helper.stop(sig) == 0
        assert read_line(idle) == b""  # an idle connection is closed
    assert not os.path.lexists(helper.socket)
    helper.wait_for_log("stopped")


def test_an_in_flight_request_is_answered_before_the_exit(
    helper: Helper, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    fake_codex.set_fault("slow_start", seconds=30, gate=str(gate))
    with connect(helper.socket) as client:
        client.sendall(
            json.dumps({"v": 1, "op": "resolve", "codex": str(fake_codex.path)}).encode()
        )
        client.sendall(b"\n")
        wait_until(lambda: fake_codex.calls() != [])  # the probe is under way
        helper.process.send_signal(signal.SIGTERM)
        helper.wait_for_log("stopping (SIGTERM)")
        with pytest.raises(FileNotFoundError):  # no new connections
            connect(helper.socket)
        gate.touch()
        answer = json.loads(read_line(client))
        assert answer["ok"] is True
        assert answer["result"]["decision"] == "published"
    assert helper.process.wait(timeout=30) == 0


def test_a_request_past_the_grace_gets_an_error_and_its_probe_is_killed(
    helper: Helper, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    fake_codex.set_fault("slow_start", seconds=30, gate=str(tmp_path / "never"))
    with connect(helper.socket) as client:
        client.sendall(
            json.dumps({"v": 1, "op": "resolve", "codex": str(fake_codex.path)}).encode() + b"\n"
        )
        wait_until(lambda: fake_codex.contexts() != [])
        probe_pid = fake_codex.contexts()[0]["pid"]
        assert helper.stop() == 0
        answer = json.loads(read_line(client))
        assert answer["error"]["reason"] == "shutting_down"
    assert dies_soon(probe_pid)
    assert not os.path.lexists(helper.socket)


@pytest.mark.parametrize(
    ("step", "asked"),
    [("version", "--codex"), ("sandbox", "--codex"), ("sandbox", "discovery")],
)
def test_a_probe_killed_past_the_grace_leaves_no_private_directory(
    host_env: HostEnv, socket_path: Path, tmp_path: Path, step: str, asked: str
) -> None:
    """The probes still running when the grace ends are killed, and unwind before the
    helper exits: each removes its private directory (none is left for a later probe).
    With discovery's two candidates, the resolution goes on to the second's probe once
    the first is killed: that one is killed too, and unwinds as well."""
    temporary = tmp_path / "tmp"
    temporary.mkdir(mode=0o700)
    fakes = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir(mode=0o755)
        fakes.append(install_fake_codex(tmp_path / name))
        fakes[-1].set_fault("slow_start", seconds=30, gate=str(tmp_path / "never"), step=step)
    path = f"{fakes[0].path.parent}:{fakes[1].path.parent}:{host_env.env['PATH']}"
    environment = {**host_env.env, "TMPDIR": str(temporary), "PATH": path}
    request = {"v": 1, "op": "resolve"}
    if asked == "--codex":
        request["codex"] = str(fakes[0].path)
    with running_helper(environment, socket_path) as helper, connect(helper.socket) as client:
        client.sendall(json.dumps(request).encode() + b"\n")
        first = "--version" if step == "version" else "sandbox"
        wait_until(lambda: any(call[:1] == [first] for call in fakes[0].calls()))
        assert [p.name[:15] for p in temporary.iterdir()] == ["launcher-probe-"]
        assert helper.stop() == 0
        assert json.loads(read_line(client))["error"]["reason"] == "shutting_down"
    assert list(temporary.iterdir()) == []


def test_a_stop_of_the_whole_tree_during_a_probe_caches_no_verdict(
    helper: Helper, host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """A service manager stopping the helper's whole tree at once (systemd's control
    group): the probe's step dies of that SIGTERM, which says nothing of the binary, so
    no failed verdict is stored for the next resolve to read."""
    fake_codex.set_fault("slow_start", seconds=60, step="version")
    with connect(helper.socket) as client:
        client.sendall(
            json.dumps({"v": 1, "op": "resolve", "codex": str(fake_codex.path)}).encode() + b"\n"
        )
        wait_until(lambda: fake_codex.contexts() != [])  # the probe's first step runs
        step = fake_codex.contexts()[0]["pid"]
        root = psutil.Process(helper.process.pid)
        tree = [root, *root.children(recursive=True)]
        assert step in {process.pid for process in tree}
        for process in tree:
            process.send_signal(signal.SIGTERM)
        answer = json.loads(read_line(client))
        assert answer["result"]["reason"] == "spawn_failed", answer
        assert "stopped from outside" in answer["result"]["detail"]
    assert helper.process.wait(timeout=30) == 0
    fake_codex.set_fault(None)
    done = run_cli(
        "resolve", "--json", "--via", "local", "--codex", str(fake_codex.path), env=host_env.env
    )
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["from_cache"] is False  # probed again: nothing was stored


def test_sighup_rereads_the_config_file(helper: Helper, host_env: HostEnv, tmp_path: Path) -> None:
    directory = tmp_path / "fake-bin"
    directory.mkdir()
    directory.chmod(0o755)
    first = install_fake_codex(directory, "codex-a")
    second = install_fake_codex(directory, "codex-b")
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text(f'codex = "{first.path}"\n')
    assert helper.ask({"op": "resolve"})["result"]["launcher"]["codexExecutable"] == str(first.path)
    helper.wait_for_log(f"decision for discovery: published {first.path}")
    for _ in range(3):  # warm answers change nothing, and log nothing
        helper.ask({"op": "resolve"})
    config.write_text(f'codex = "{second.path}"\n')
    helper.process.send_signal(signal.SIGHUP)
    helper.wait_for_log("SIGHUP: re-reading")
    helper.wait_for_log(f"decision for discovery: published {second.path}")
    answer = helper.ask({"op": "resolve"})["result"]
    assert answer["launcher"]["codexExecutable"] == str(second.path)
    assert answer["from_cache"] is True  # verified by the reload, before this request
    decisions = [line for line in helper.log if "decision for" in line]
    assert len(decisions) == 2, decisions
