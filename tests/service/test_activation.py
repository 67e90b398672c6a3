"""Running under a service manager: socket activation the way systemd does it, and the
units ``serve --print-unit`` prints."""

from __future__ import annotations

import os
import plistlib
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex
from tests.service.helper import Helper, ask, connect, running_helper, short_directory

#: Starts the helper as systemd would: the listening socket on descriptor 3,
#: LISTEN_FDS=1 and LISTEN_PID the helper's own pid (exec keeps it).
SYSTEMD_LIKE = """
import os, sys
inherited = int(os.environ.pop("INHERITED_FD"))
os.dup2(inherited, 3)
os.close(inherited)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1")
os.execv(sys.executable, [sys.executable, "-m", "launcher_probe", "serve"])
"""


@pytest.fixture
def activated(host_env: HostEnv) -> Iterator[tuple[Helper, socket.socket]]:
    with short_directory() as directory:
        path = directory / "activated.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        os.chmod(path, 0o600)
        listener.listen(16)
        env = {**host_env.env, "INHERITED_FD": str(listener.fileno())}
        command = [sys.executable, "-c", SYSTEMD_LIKE]
        try:
            with running_helper(env, path, command=command, pass_fds=[listener.fileno()]) as helper:
                yield helper, listener
        finally:
            listener.close()


def test_an_inherited_socket_is_served(
    activated: tuple[Helper, socket.socket], fake_codex: FakeCodex
) -> None:
    helper, _ = activated
    assert "an inherited socket" in "".join(helper.log)
    with connect(helper.socket) as client:
        status = ask(client, {"op": "status"})["result"]
        assert status["activated"] is True
        assert status["socket"] == str(helper.socket)
        answer = ask(client, {"op": "resolve", "codex": str(fake_codex.path)})
        assert answer["result"]["launcher"] == {"codexExecutable": str(fake_codex.path)}
    # The probe saw none of the activation variables.
    assert not any(key.startswith("LISTEN_") for key in fake_codex.contexts()[0]["env"])
    assert helper.stop(signal.SIGTERM) == 0
    assert os.path.lexists(helper.socket)  # the service manager's socket stays


def test_systemd_units(host_env: HostEnv) -> None:
    done = run_cli("serve", "--print-unit", "systemd", env=host_env.env)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "# ~/.config/systemd/user/launcher-probe.socket" in text
    assert "ListenStream=%t/launcher-probe/launcher-probe.sock" in text
    assert "SocketMode=0600" in text and "DirectoryMode=0700" in text
    assert f"ExecStart={sys.executable} -m launcher_probe serve\n" in text
    assert "ExecReload=/bin/kill -HUP $MAINPID" in text
    custom = run_cli("serve", "--print-unit", "systemd", "--socket", "/s/x.sock", env=host_env.env)
    assert "ListenStream=/s/x.sock" in custom.stdout


def test_launchd_agent(host_env: HostEnv, tmp_path: Path) -> None:
    done = run_cli("serve", "--print-unit", "launchd", env=host_env.env)
    assert done.returncode == 0, done.stderr
    agent = plistlib.loads(done.stdout.encode())
    assert agent["Label"] == "launcher-probe"
    assert agent["ProgramArguments"] == [sys.executable, "-m", "launcher_probe", "serve"]
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] is True
