"""``launcher-probe serve``: its socket directory and file, one helper per socket, and
which peers it serves. Every test runs the helper as a real process.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex
from tests.service.helper import (
    DEADLINE,
    Helper,
    running_helper,
    serve_command,
)

# --- the socket ----------------------------------------------------------------------


def refused_serve(socket_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``serve`` on ``socket_path``, which must refuse at once with exit 4."""
    done = subprocess.run(
        serve_command(socket_path), env=env, capture_output=True, text=True, timeout=DEADLINE
    )
    assert done.returncode == 4, done.stderr
    return done


def test_socket_0600_in_a_private_directory(helper: Helper) -> None:
    assert stat.S_IMODE(os.lstat(helper.socket.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(helper.socket).st_mode) == 0o600
    status = helper.ask({"op": "status"})
    assert status["ok"] is True
    assert status["result"]["socket"] == str(helper.socket)
    assert status["result"]["activated"] is False


PLAIN_CLIENT = textwrap.dedent(
    """
    import json, socket, sys
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(json.dumps({"v": 1, "op": "resolve", "codex": sys.argv[2]}).encode() + b"\\n")
    print(s.makefile("rb").readline().decode(), end="")
    """
)


def test_a_plain_socket_client_without_launcher_probe(
    helper: Helper, fake_codex: FakeCodex, host_env: HostEnv
) -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", PLAIN_CLIENT, str(helper.socket), str(fake_codex.path)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=True,
    )
    answer = json.loads(done.stdout)
    cli = json.loads(
        run_cli("resolve", "--json", "--codex", str(fake_codex.path), env=host_env.env).stdout
    )
    assert answer["ok"] is True
    assert set(answer["result"]) == set(cli) - {"via"}
    assert (
        answer["result"]["launcher"] == cli["launcher"] == {"codexExecutable": str(fake_codex.path)}
    )
    assert answer["result"]["fingerprint"] == cli["fingerprint"]


@pytest.mark.parametrize("mode", [0o755, 0o750])
def test_a_socket_directory_open_to_others_is_refused(
    host_env: HostEnv, socket_path: Path, mode: int
) -> None:
    socket_path.parent.mkdir(parents=True)
    socket_path.parent.chmod(mode)
    done = refused_serve(socket_path, host_env.env)
    assert "must be ours and mode 0700" in done.stderr
    assert not socket_path.exists()


def test_a_socket_directory_of_another_user_is_refused(
    host_env: HostEnv, socket_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the directory to another user")
    socket_path.parent.mkdir(parents=True, mode=0o700)
    os.chown(socket_path.parent, 65534, 65534)
    done = refused_serve(socket_path, host_env.env)
    assert "uid 65534" in done.stderr


def test_a_stale_socket_is_replaced(host_env: HostEnv, socket_path: Path) -> None:
    socket_path.parent.mkdir(parents=True, mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(socket_path))  # bound, never listening: what a killed helper leaves
    with running_helper(host_env.env, socket_path) as helper:
        assert "replacing the stale socket" in "".join(helper.log)
        assert helper.ask({"op": "status"})["ok"] is True


def test_a_second_helper_on_the_same_socket_exits(helper: Helper, host_env: HostEnv) -> None:
    done = refused_serve(helper.socket, host_env.env)
    assert "already serving on" in done.stderr
    assert helper.ask({"op": "status"})["ok"] is True  # the first one still serves


def test_a_file_that_is_not_a_socket_is_left_alone(host_env: HostEnv, socket_path: Path) -> None:
    socket_path.parent.mkdir(parents=True, mode=0o700)
    socket_path.write_text("precious")
    done = refused_serve(socket_path, host_env.env)
    assert "is not a socket" in done.stderr
    assert socket_path.read_text() == "precious"


# --- peers ---------------------------------------------------------------------------

OTHER_USER_CLIENT = textwrap.dedent(
    """
    import socket, sys
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    try:  # the helper closes a refused connection at once: the request may find it closed
        s.sendall(b'{"v": 1, "op": "status"}\\n')
    except BrokenPipeError:
        pass
    got = b""
    try:
        while chunk := s.recv(4096):
            got += chunk
    except ConnectionResetError:  # closed on what we sent: the error line came first
        pass
    sys.stdout.buffer.write(got)
    """
)


def test_a_client_of_another_user_gets_one_error_line(helper: Helper) -> None:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to run a client as another user")
    # nobody, allowed through the 0700 directory (so that only the peer check can refuse)
    as_nobody = [
        setpriv,
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=+dac_override",
        "--ambient-caps=+dac_override",
    ]
    done = subprocess.run(
        [*as_nobody, sys.executable, "-I", "-S", "-c", OTHER_USER_CLIENT, str(helper.socket)],
        capture_output=True,
        timeout=DEADLINE,
        check=False,
    )
    if done.returncode != 0 and b"setpriv" in done.stderr:
        pytest.skip(f"setpriv cannot switch users here: {done.stderr.decode().strip()}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1  # one error line, then the helper closed the connection
    error = json.loads(lines[0])
    assert error["ok"] is False
    assert error["error"]["reason"] == "peer_refused"
    assert "uid 65534" in helper.wait_for_log("refused a connection")
