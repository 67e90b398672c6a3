"""``launcher-probe serve``: bad requests, bounded connections, many clients at once,
and the operations. Every test runs the helper as a real process over a plain socket.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import HostEnv
from tests.fakes import FakeCodex
from tests.service.helper import (
    DEADLINE,
    Helper,
    ask,
    connect,
    read_line,
    running_helper,
)


def resolve_request(fake: FakeCodex) -> dict[str, object]:
    return {"op": "resolve", "codex": str(fake.path)}


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
    # The one whose request made the decision saw the probe; the 99 others a warm answer.
    assert sorted(a["result"]["from_cache"] for a in published) == [False] + [True] * 99
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
        "schema": 1,
        "forgotten": True,
    }
    assert helper.ask({"op": "forget", "codex": str(fake_codex.path)})["result"] == {
        "schema": 1,
        "forgotten": False,
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
    launcher = {"codexExecutable": str(fake_codex.path)}
    assert (answer["schema"], answer["included"], answer["launcher"]) == (1, True, launcher)
    assert (answer["reason"], answer["detail"]) == (None, "")
    assert answer["meta"]["codex/sandbox-launcher"] == {"codexExecutable": str(fake_codex.path)}
    assert answer["meta"]["codex/sandbox-state"] == json.loads(state)
    assert list(answer["meta"])[-1] == "progressToken"
    http = helper.ask({"op": "meta", "server": {**capable, "transport": "http"}, "state": state})[
        "result"
    ]
    assert (http["launcher"], http["reason"]) == (None, "transport_not_stdio")
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
