"""Conformance from every entry point: ``launcher-probe meta --progress-token`` and the
helper's ``meta`` op with ``progress_token`` give, for the captured Codex CLI 0.169.0
request's server, state and host keys, that request's ``_meta`` byte for byte, key order
included (only the launcher path is this test's own binary). Real processes throughout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex
from tests.service.helper import connect, fresh_socket, read_line, running_helper, short_directory
from tests.test_conformance import CAPTURE, HOST_KEYS

CAPABLE = '{"codex/sandbox-state": {}}'


def compact(value: Any) -> str:
    """``value`` as Codex puts it on the wire: compact, UTF-8 as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture
def captured() -> dict[str, Any]:
    meta: dict[str, Any] = json.loads(CAPTURE.read_text(encoding="utf-8"))["params"]["_meta"]
    return meta


def expected_for(captured: dict[str, Any], codex: Path) -> dict[str, Any]:
    """The captured ``_meta`` with this test's launcher in place of Codex's."""
    return {**captured, SANDBOX_LAUNCHER_KEY: {"codexExecutable": str(codex)}}


def host_keys(captured: dict[str, Any]) -> dict[str, Any]:
    return {key: captured[key] for key in HOST_KEYS}


def cli_meta(env: HostEnv, captured: dict[str, Any], codex: Path, token: str) -> str:
    state, host = compact(captured[SANDBOX_STATE_KEY]), compact(host_keys(captured))
    done = run_cli(
        "meta", "--transport", "stdio", "--capabilities", CAPABLE, "--via", "local",
        "--state", state, "--host-meta", host, "--codex", str(codex), "--progress-token", token,
        env=env.env,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


def test_cli_reproduces_the_captured_meta(
    host_env: HostEnv, fake_codex: FakeCodex, captured: dict[str, Any]
) -> None:
    out = cli_meta(host_env, captured, fake_codex.path, "1")
    expected = expected_for(captured, fake_codex.path)
    assert compact(json.loads(out)) == compact(expected)  # keys, order, value types
    assert compact(captured[SANDBOX_STATE_KEY]) in out  # the state as given, byte for byte
    assert out.rstrip("\n").endswith('"progressToken": 1\n}')


@pytest.mark.parametrize(
    ("argument", "token"),
    [("1", 1), ('"1"', "1"), ("-7", -7), ("call-1", "call-1"), ('"say \\"hi\\""', 'say "hi"')],
)
def test_cli_tells_a_number_from_a_string(
    host_env: HostEnv, fake_codex: FakeCodex, captured: dict[str, Any], argument: str, token: Any
) -> None:
    sent = json.loads(cli_meta(host_env, captured, fake_codex.path, argument))
    assert list(sent)[-1] == "progressToken"
    assert compact(sent["progressToken"]) == compact(token)


@pytest.mark.parametrize(
    ("argument", "code", "message"),
    [
        ("1.5", 4, "--progress-token 1.5: a progressToken is a string or an integer"),
        ("1e3", 4, "--progress-token 1e3: a progressToken is a string or an integer"),
        ('"open', 2, "--progress-token is not valid JSON"),
        ('"a" "b"', 2, "--progress-token is not valid JSON"),
    ],
)
def test_cli_refuses_what_is_no_token(
    host_env: HostEnv, argument: str, code: int, message: str
) -> None:
    done = run_cli(
        "meta", "--transport", "http", "--capabilities", "{}", "--progress-token", argument,
        env=host_env.env,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (code, "")
    assert done.stderr.startswith(f"launcher-probe: {message}"), done.stderr


def test_helper_reproduces_the_captured_meta(
    host_env: HostEnv, fake_codex: FakeCodex, captured: dict[str, Any]
) -> None:
    request = {
        "v": 1,
        "op": "meta",
        "server": {
            "name": "echo-server",
            "transport": "stdio",
            "capabilities": {SANDBOX_STATE_KEY: {}},
        },
        "state": captured[SANDBOX_STATE_KEY],
        "host_meta": host_keys(captured),
        "codex": str(fake_codex.path),
        "progress_token": 1,
    }
    with short_directory() as directory:
        socket_path = fresh_socket(directory)
        with running_helper(host_env.env, socket_path), connect(socket_path) as client:
            client.sendall(json.dumps(request).encode() + b"\n")
            line = read_line(client).decode("utf-8")
    expected = compact(expected_for(captured, fake_codex.path))
    assert f'"result":{{"schema":1,"meta":{expected},"included":true,' in line  # byte for byte
