"""``launcher-probe serve``: its socket, its peers, bad requests, many clients, the ops.

Every test runs the helper as a real process and talks to it over a plain socket.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex
from tests.service.helper import (
    DEADLINE,
    Helper,
    ask,
    connect,
    fresh_socket,
    read_line,
    running_helper,
    serve_command,
    short_directory,
)


@pytest.fixture
def socket_path() -> Iterator[Path]:
    with short_directory() as directory:
        yield fresh_socket(directory)


@pytest.fixture
def helper(host_env: HostEnv, socket_path: Path) -> Iterator[Helper]:
    with running_helper(host_env.env, socket_path) as running:
        yield running


def resolve_request(fake: FakeCodex) -> dict[str, object]:
    return {"op": "resolve", "codex": str(fake.path)}


# --- the socket ----------------------------------------------------------------------


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
    done = subprocess.run(
        serve_command(socket_path),
        env=host_env.env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert done.returncode == 4
    assert "must be ours and mode 0700" in done.stderr
    assert not socket_path.exists()


def test_a_socket_directory_of_another_user_is_refused(
    host_env: HostEnv, socket_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the directory to another user")
    socket_path.parent.mkdir(parents=True, mode=0o700)
    os.chown(socket_path.parent, 65534, 65534)
    done = subprocess.run(
        serve_command(socket_path),
        env=host_env.env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert done.returncode == 4
    assert "uid 65534" in done.stderr


def test_a_stale_socket_is_replaced(host_env: HostEnv, socket_path: Path) -> None:
    socket_path.parent.mkdir(parents=True, mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(socket_path))  # bound, never listening: what a killed helper leaves
    with running_helper(host_env.env, socket_path) as helper:
        assert "replacing the stale socket" in "".join(helper.log)
        assert helper.ask({"op": "status"})["ok"] is True


def test_a_second_helper_on_the_same_socket_exits(helper: Helper, host_env: HostEnv) -> None:
    done = subprocess.run(
        serve_command(helper.socket),
        env=host_env.env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert done.returncode == 4
    assert "already serving on" in done.stderr
    assert helper.ask({"op": "status"})["ok"] is True  # the first one still serves


def test_a_file_that_is_not_a_socket_is_left_alone(host_env: HostEnv, socket_path: Path) -> None:
    socket_path.parent.mkdir(parents=True, mode=0o700)
    socket_path.write_text("precious")
    done = subprocess.run(
        serve_command(socket_path),
        env=host_env.env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert done.returncode == 4
    assert "is not a socket" in done.stderr
    assert socket_path.read_text() == "precious"


# --- peers ---------------------------------------------------------------------------

OTHER_USER_CLIENT = textwrap.dedent(
    """
    import socket, sys
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(b'{"v": 1, "op": "status"}\\n')
    sys.stdout.buffer.write(b"".join(iter(lambda: s.recv(4096), b"")))
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


# --- bad requests ----------------------------------------------------------------------


def test_bad_requests_get_a_reason_and_the_connection_survives(helper: Helper) -> None:
    with connect(helper.socket) as client:
        for line, reason in [
            (b"{not json", "malformed_request"),
            (b"\xff\xfe\n", "malformed_request"),
            (b'{"v": 2, "op": "status"}', "unsupported_version"),
            (b'{"v": 1, "op": "reboot", "id": 9}', "unknown_op"),
            (b'{"v": 1, "op": "resolve", "codex": 1}', "invalid_argument"),
            (
                b'{"v": 1, "op": "meta", "server": {"transport": "carrier-pigeon"}}',
                "invalid_argument",
            ),
            (
                b'{"v": 1, "op": "meta", "server": {"transport": "stdio"},'
                b' "caller_meta": {"codex/sandbox-launcher": {}}}',
                "input_rejected",
            ),
        ]:
            answer = ask(client, line)
            assert answer["ok"] is False
            assert answer["error"]["reason"] == reason, answer
        assert ask(client, {"op": "status", "id": "still-here"})["id"] == "still-here"


def test_an_oversized_request_is_refused_and_closed(helper: Helper) -> None:
    with connect(helper.socket) as client:
        # the helper may stop reading before it all went
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            client.sendall(b'{"v": 1, "op": "status", "pad": "' + b"x" * (1 << 20))
        answer = json.loads(read_line(client))
        assert answer["error"]["reason"] == "request_too_large"
        assert read_line(client) == b""  # closed
    assert helper.ask({"op": "status"})["ok"] is True


def test_a_half_written_request_then_end_of_input(helper: Helper) -> None:
    with connect(helper.socket) as client:
        client.sendall(b'{"v": 1, "op": "sta')
        client.shutdown(socket.SHUT_WR)
        answer = json.loads(read_line(client))
        assert answer["error"]["reason"] == "malformed_request"
        assert "not finished" in answer["error"]["detail"]
        assert read_line(client) == b""


def test_a_half_written_request_then_silence_times_out(
    host_env: HostEnv, socket_path: Path
) -> None:
    with (
        running_helper(host_env.env, socket_path, "--idle-timeout", "1"),
        connect(socket_path) as silent,
        connect(socket_path) as other,
    ):
        silent.sendall(b'{"v": 1, "op": "sta')
        assert ask(other, {"op": "status"})["ok"] is True  # not stalled by the silent one
        answer = json.loads(read_line(silent))  # after --idle-timeout 1
        assert answer["error"]["reason"] == "idle_timeout"
        assert read_line(silent) == b""


def test_connections_are_bounded(host_env: HostEnv, socket_path: Path) -> None:
    with running_helper(host_env.env, socket_path, "--max-connections", "2") as helper:
        with connect(socket_path) as first, connect(socket_path) as second:
            assert ask(first, {"op": "status"})["ok"] is True
            with connect(socket_path) as third:
                answer = json.loads(read_line(third))
                assert answer["error"]["reason"] == "busy"
                assert read_line(third) == b""
            assert ask(second, {"op": "status"})["ok"] is True
        assert helper.ask({"op": "status"})["ok"] is True


# --- many clients ----------------------------------------------------------------------

GATED_CLIENT = textwrap.dedent(
    """
    import json, socket, sys
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    print("connected", flush=True)
    sys.stdin.readline()
    s.sendall(json.dumps({"v": 1, "op": "resolve", "codex": sys.argv[2]}).encode() + b"\\n")
    print(s.makefile("rb").readline().decode(), end="")
    """
)


def test_a_hundred_concurrent_clients_one_probe(helper: Helper, fake_codex: FakeCodex) -> None:
    clients = [
        subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                "-c",
                GATED_CLIENT,
                str(helper.socket),
                str(fake_codex.path),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(100)
    ]
    try:
        for client in clients:  # all 100 are connected at once before any asks
            assert client.stdout is not None and client.stdout.readline() == "connected\n"
        for client in clients:
            assert client.stdin is not None
            client.stdin.write("go\n")
            client.stdin.close()
        answers = []
        for client in clients:
            assert client.stdout is not None
            answers.append(json.loads(client.stdout.read()))
    finally:
        for client in clients:
            if client.poll() is None:
                client.kill()
            client.wait(timeout=DEADLINE)
            assert client.stdout is not None
            client.stdout.close()
    published = [a for a in answers if a["ok"] and a["result"]["decision"] == "published"]
    assert len(published) == 100
    assert fake_codex.probe_count() == 1
    counters = helper.ask({"op": "status"})["result"]["counters"]
    assert counters["resolutions"] == 1
    assert counters["requests"] == 101


# --- the operations ----------------------------------------------------------------------


def test_resolve_is_warm_then_forget_probes_again(helper: Helper, fake_codex: FakeCodex) -> None:
    first = helper.ask(resolve_request(fake_codex))["result"]
    second = helper.ask(resolve_request(fake_codex))["result"]
    assert (first["from_cache"], second["from_cache"]) == (False, True)
    assert fake_codex.probe_count() == 1
    assert helper.ask({"op": "forget", "codex": str(fake_codex.path)})["result"] == {
        "forgotten": True
    }
    assert helper.ask({"op": "forget", "codex": str(fake_codex.path)})["result"] == {
        "forgotten": False
    }
    third = helper.ask(resolve_request(fake_codex))["result"]
    assert third["from_cache"] is False
    assert fake_codex.probe_count() == 2


def test_withheld_is_a_result(helper: Helper, fake_codex: FakeCodex) -> None:
    fake_codex.set_fault("wrong_version")
    answer = helper.ask(resolve_request(fake_codex))
    assert answer["ok"] is True
    assert answer["result"]["decision"] == "withheld"
    assert answer["result"]["reason"] == "not_codex"
    assert "decision for --codex" in helper.wait_for_log("withheld: not_codex")


def test_meta_publishes_and_omits_with_the_injector(helper: Helper, fake_codex: FakeCodex) -> None:
    capable = {"transport": "stdio", "capabilities": {"codex/sandbox-state": {}}}
    state = '{"permissionProfile": {"kind": "x"},  "z": 1}'
    answer = helper.ask(
        {
            "op": "meta",
            "server": capable,
            "state": state,
            "codex": str(fake_codex.path),
            "progress_token": 4,
        }
    )["result"]
    assert answer["launcher"] == {"included": True, "reason": None, "detail": ""}
    assert answer["meta"]["codex/sandbox-launcher"] == {"codexExecutable": str(fake_codex.path)}
    assert answer["meta"]["codex/sandbox-state"] == json.loads(state)
    assert list(answer["meta"])[-1] == "progressToken"
    http = helper.ask({"op": "meta", "server": {**capable, "transport": "http"}, "state": state})[
        "result"
    ]
    assert http["launcher"]["reason"] == "transport_not_stdio"
    assert "codex/sandbox-launcher" not in http["meta"]
    read = helper.ask(
        {
            "op": "meta",
            "method": "resources/read",
            "server": {"transport": "stdio"},
            "origin_call_id": "c1",
        }
    )
    assert read["error"]["reason"] == "input_rejected"
    assert "originCallId requires threadId" in read["error"]["detail"]


def test_status_lists_the_decisions(helper: Helper, fake_codex: FakeCodex) -> None:
    helper.ask(resolve_request(fake_codex))
    status = helper.ask({"op": "status"})["result"]
    assert status["pid"] == helper.process.pid
    (held,) = status["decisions"]
    assert held["codex"] == str(fake_codex.path)
    assert held["decision"]["decision"] == "published"
    assert held["expires_at"] == pytest.approx(held["decision"]["probed_at"] + 24 * 3600)
    assert status["counters"]["probes"] == 1
