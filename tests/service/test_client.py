"""The client and ``--via auto|helper|local``: the helper when it answers, else in process,
and a helper killed mid-request makes clients fall back, not fail."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from launcher_probe.client import HelperError, HelperUnavailable, request, resolve_via
from launcher_probe.errors import InputRejected
from launcher_probe.host.decision import Published
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex
from tests.service.helper import (
    DEADLINE,
    Helper,
    fresh_socket,
    short_directory,
    wait_until,
)


@pytest.fixture
def socket_path(host_env: HostEnv, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A socket path clients find through LAUNCHER_PROBE_SOCKET (no helper yet)."""
    with short_directory() as directory:
        path = fresh_socket(directory)
        host_env.env["LAUNCHER_PROBE_SOCKET"] = str(path)
        monkeypatch.setenv("LAUNCHER_PROBE_SOCKET", str(path))
        yield path


def resolve_json(env: HostEnv, *args: str) -> tuple[int, dict[str, object]]:
    done = run_cli("resolve", "--json", *args, env=env.env)
    return done.returncode, json.loads(done.stdout)


def test_auto_uses_a_running_helper(
    helper: Helper, host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path))
    assert (code, decision["via"], decision["decision"]) == (0, "helper", "published")
    assert decision["from_cache"] is False
    # Warm, auto answers from this user's own record, which it would check anyway.
    code, warm = resolve_json(host_env, "--codex", str(fake_codex.path))
    assert (code, warm["via"], warm["from_cache"]) == (0, "local", True)
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path), "--via", "helper")
    assert (code, decision["via"], decision["from_cache"]) == (0, "helper", True)
    local_code, local = resolve_json(host_env, "--codex", str(fake_codex.path), "--via", "local")
    assert (local_code, local["via"]) == (0, "local")
    assert {**decision, "via": None} == {**local, "via": None} == {**warm, "via": None}
    assert fake_codex.probe_count() == 1
    counters = helper.ask({"op": "status"})["result"]["counters"]
    assert (counters["requests"], counters["resolutions"]) == (3, 1)  # 2 resolves + status


def test_auto_without_a_helper_is_local(
    socket_path: Path, host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    code, decision = resolve_json(host_env, "--codex", str(fake_codex.path))
    assert (code, decision["via"], decision["decision"]) == (0, "local", "published")


def test_via_helper_without_one_fails(
    socket_path: Path, host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    done = run_cli("resolve", "--via", "helper", "--codex", str(fake_codex.path), env=host_env.env)
    assert done.returncode == 3
    assert done.stdout == ""
    assert "no helper answered on" in done.stderr
    assert fake_codex.probe_count() == 0


def test_via_helper_refuses_no_cache(helper: Helper, host_env: HostEnv) -> None:
    done = run_cli("resolve", "--via", "helper", "--no-cache", env=host_env.env)
    assert done.returncode == 2
    assert "--no-cache" in done.stderr


def test_meta_through_the_helper(helper: Helper, host_env: HostEnv, fake_codex: FakeCodex) -> None:
    done = run_cli(
        "meta",
        "--via",
        "helper",
        "--transport",
        "stdio",
        "--capabilities",
        '{"codex/sandbox-state": {}}',
        "--state",
        '{"sandboxCwd": "file:///w"}',
        "--codex",
        str(fake_codex.path),
        env=host_env.env,
    )
    assert done.returncode == 0, done.stderr
    meta = json.loads(done.stdout)
    assert meta["codex/sandbox-launcher"] == {"codexExecutable": str(fake_codex.path)}
    assert helper.ask({"op": "status"})["result"]["counters"]["resolutions"] == 1


def test_the_python_client(helper: Helper, fake_codex: FakeCodex) -> None:
    status = request("status", wait=DEADLINE, socket_path=str(helper.socket))
    assert status["pid"] == helper.process.pid
    with pytest.raises(HelperError) as refused:
        request("reboot", wait=DEADLINE, socket_path=str(helper.socket))
    assert refused.value.reason == "unknown_op"
    with pytest.raises(InputRejected):
        request("status", {"when": object()}, wait=DEADLINE, socket_path=str(helper.socket))
    decision, via = resolve_via("helper", str(fake_codex.path))
    assert via == "helper"
    assert isinstance(decision, Published)
    assert decision.fingerprint.still_matches()
    helper.stop()
    with pytest.raises(HelperUnavailable):
        request("status", wait=DEADLINE, socket_path=str(helper.socket))


def test_a_helper_killed_mid_request_makes_clients_fall_back(
    helper: Helper, host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    fake_codex.set_fault("slow_start", seconds=DEADLINE, gate=str(gate))
    command = [sys.executable, "-m", "launcher_probe", "resolve", "--json"]
    clients = [
        subprocess.Popen(
            [*command, "--codex", str(fake_codex.path)],
            env=host_env.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(5)
    ]
    try:
        wait_until(lambda: fake_codex.calls() != [])  # the helper's probe is under way
        assert helper.stop(signal.SIGKILL) == -signal.SIGKILL
        gate.touch()
        outcomes = [(c.wait(timeout=DEADLINE), c.communicate()) for c in clients]
    finally:
        gate.touch()
        for client in clients:
            if client.poll() is None:
                client.kill()
                client.wait()
    for code, (stdout, stderr) in outcomes:
        assert code == 0, stderr
        decision = json.loads(stdout)
        assert (decision["decision"], decision["via"]) == ("published", "local")


def test_a_socket_path_with_nothing_there_is_refused_as_connect_refuses_it(
    tmp_path: Path,
) -> None:
    """Where nothing is (no helper runs) the client says what connect says, without
    connecting; a request no helper could be sent is refused as such all the same; a path
    too long for a socket's address and an abstract name are connect's to judge."""
    missing = str(tmp_path / "none.sock")
    with pytest.raises(HelperUnavailable) as refused:
        request("status", wait=DEADLINE, socket_path=missing)
    assert (
        str(refused.value)
        == f"no helper answered on {missing}: [Errno 2] No such file or directory"
    )
    with pytest.raises(InputRejected):
        request("status", {"when": object()}, wait=DEADLINE, socket_path=missing)
    too_long = str(tmp_path / ("d" * 120) / "none.sock")
    with pytest.raises(HelperUnavailable, match="AF_UNIX path too long"):
        request("status", wait=DEADLINE, socket_path=too_long)
    abstract = f"\0launcher-probe-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(abstract)
        listener.listen()

        def answer() -> None:
            connection, _ = listener.accept()
            with connection:
                while not connection.recv(65536).endswith(b"\n"):
                    pass
                connection.sendall(b'{"ok":true,"result":{"pid":1}}\n')

        answering = threading.Thread(target=answer)
        answering.start()
        assert request("status", wait=DEADLINE, socket_path=abstract) == {"pid": 1}
        answering.join()
