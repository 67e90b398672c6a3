"""The helper never overrides its client (review 2026-12-01: newcomer finding 1, A2, A7, A11):
the client's operator setting wins, a helper's decision says who made it, an answer for
another path or a malformed one is not used, and another user's runtime directory is
refused with a warning, never an exit 1."""

from __future__ import annotations

import json
import os
import plistlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex, install_fake_codex
from tests.service.helper import DEADLINE, Helper, fresh_socket, running_helper, short_directory


@pytest.fixture
def client_socket(host_env: HostEnv, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A socket path clients find through LAUNCHER_PROBE_SOCKET (no helper yet)."""
    with short_directory() as directory:
        path = fresh_socket(directory)
        host_env.env["LAUNCHER_PROBE_SOCKET"] = str(path)
        monkeypatch.setenv("LAUNCHER_PROBE_SOCKET", str(path))
        yield path


@contextmanager
def helper_without(host_env: HostEnv, socket: Path, **env: str) -> Iterator[Helper]:
    """A helper started as a service manager starts it: without the shell's
    LAUNCHER_PROBE_CODEX (``env`` added instead)."""
    started = {k: v for k, v in host_env.env.items() if k != "LAUNCHER_PROBE_CODEX"}
    with running_helper({**started, **env}, socket) as helper:
        yield helper


def _json(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    parsed: dict[str, object] = json.loads(done.stdout)
    return parsed


def test_the_clients_operator_setting_wins(
    host_env: HostEnv, client_socket: Path, fake_codex: FakeCodex
) -> None:
    with helper_without(host_env, client_socket) as helper:
        env = {**host_env.env, "LAUNCHER_PROBE_CODEX": str(fake_codex.path)}
        done = run_cli("resolve", "--json", env=env)
        assert done.returncode == 0, done.stderr
        decision = _json(done)
        assert (decision["via"], decision["source"]) == ("helper", "env")
        assert decision["path"] == str(fake_codex.path)
        status = helper.ask({"op": "status"})["result"]
        assert [held["codex"] for held in status["decisions"]] == [str(fake_codex.path)]
        # Warm, the client's own record answers; the helper is not asked again.
        again = run_cli("resolve", "--json", env=env)
        assert (_json(again)["via"], _json(again)["source"]) == ("local", "env")
        assert helper.ask({"op": "status"})["result"]["counters"]["requests"] == 3


def test_the_config_files_codex_is_sent_too(
    host_env: HostEnv, client_socket: Path, fake_codex: FakeCodex
) -> None:
    config = host_env.config_dir / "launcher-probe"
    config.mkdir(mode=0o700)
    (config / "config.toml").write_text(f'codex = "{fake_codex.path}"\n')
    other = host_env.config_dir.with_name("helper-config")  # the helper's own, empty
    other.mkdir(mode=0o700)
    with helper_without(host_env, client_socket, XDG_CONFIG_HOME=str(other)):
        done = run_cli("resolve", "--json", env=host_env.env)
    assert done.returncode == 0, done.stderr
    assert (_json(done)["via"], _json(done)["source"]) == ("helper", "config")


def test_a_helpers_withheld_decision_says_who_decided(
    host_env: HostEnv, client_socket: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "codex"
    with helper_without(host_env, client_socket) as helper:
        done = run_cli("resolve", "--codex", str(missing), env=host_env.env)
        assert done.returncode == 3
        assert f"(decided by the helper, pid {helper.process.pid})" in done.stderr
        meta = run_cli(
            "meta",
            "--transport",
            "stdio",
            "--capabilities",
            '{"codex/sandbox-state": {}}',
            "--state",
            "{}",
            "--codex",
            str(missing),
            env=host_env.env,
        )
        assert meta.returncode == 0, meta.stderr
        assert f"decided by the helper, pid {helper.process.pid}" in meta.stderr
    local = run_cli("resolve", "--codex", str(missing), env=host_env.env)
    assert local.returncode == 3 and "decided by the helper" not in local.stderr


def test_doctor_reports_a_helper_that_decides_otherwise(
    host_env: HostEnv, client_socket: Path, fake_codex: FakeCodex
) -> None:
    with helper_without(host_env, client_socket, LAUNCHER_PROBE_CODEX=str(fake_codex.path)):
        report = run_cli("doctor", "--json", env=host_env.env)
        human = run_cli("doctor", env=host_env.env)
    assert report.returncode == 3, report.stderr
    part = _json(report)["helper"]
    assert isinstance(part, dict)
    assert part["agrees"] is False and part["decision"]["decision"] == "published"
    assert "the helper publishes" in part["problem"] and part["fix"]
    assert human.returncode == 3
    assert "problem: the helper publishes" in human.stdout
    assert "fix: give the helper the same setting" in human.stdout


def test_doctor_says_when_the_helper_agrees(
    host_env: HostEnv, client_socket: Path, fake_codex: FakeCodex
) -> None:
    with helper_without(host_env, client_socket):
        report = run_cli("doctor", "--json", "--codex", str(fake_codex.path), env=host_env.env)
    assert report.returncode == 0, report.stderr
    part = _json(report)["helper"]
    assert isinstance(part, dict)
    assert (part["running"], part["agrees"], part["problem"]) == (True, True, None)


def test_the_units_carry_the_environment_and_a_log() -> None:
    systemd = run_cli("serve", "--print-unit", "systemd", env=dict(os.environ)).stdout
    assert "#Environment=LAUNCHER_PROBE_CODEX=" in systemd
    launchd = run_cli("serve", "--print-unit", "launchd", env=dict(os.environ)).stdout
    plist = plistlib.loads(launchd.encode())
    assert plist["StandardErrorPath"].endswith("Library/Logs/launcher-probe.log")
    assert "<key>EnvironmentVariables</key>" in launchd  # commented out, to fill in


FAKE_HELPER = textwrap.dedent(
    """
    import json, os, socket, sys
    from launcher_probe.host.paths.fingerprint import Fingerprint
    path, native, mode = sys.argv[1:4]
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen()
    print("listening on", path, file=sys.stderr, flush=True)
    while True:
        client, _ = server.accept()
        client.recv(65536)
        result = {"schema": 1, "decision": "published", "launcher": {"codexExecutable": native},
                  "source": "explicit", "path": native, "resolved": native,
                  "version": "0.169.0", "from_cache": True, "probed_at": 1.0,
                  "fingerprint": Fingerprint.of(native, native).to_json(), "tried": [],
                  "warnings": []}
        line = json.dumps({"v": 1, "ok": True, "result": result}).encode()
        if mode == "nan":
            line = line.replace(b'"probed_at": 1.0', b'"probed_at": NaN')
        elif mode == "repeated":  # the last "ok" would make the answer usable
            line = line.replace(b'"ok": true', b'"ok": false, "ok": true')
        elif mode == "truncated":
            line = line[:-1]
        elif mode == "version":  # a verified launcher, its version made up
            line = line.replace(b'"version": "0.169.0"', b'"version": "9.9.9-fake"')
        elif mode == "deep":
            line = b"[" * 100000
        client.sendall(line + b"\\n")
        client.close()
    """
)


@contextmanager
def fake_helper(host_env: HostEnv, socket: Path, native: Path, mode: str) -> Iterator[Helper]:
    command = [sys.executable, "-c", FAKE_HELPER, str(socket), str(native), mode]
    with running_helper(host_env.env, socket, command=command) as helper:
        yield helper


def test_an_answer_for_another_path_is_not_used(
    host_env: HostEnv, client_socket: Path, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """A7: a fake helper cannot substitute another verified launcher for the one asked."""
    genuine = run_cli(
        "resolve", "--via", "local", "--codex", str(fake_codex.path), env=host_env.env
    )
    assert genuine.returncode == 0, genuine.stderr  # a passed verdict in this user's cache
    asked_dir = tmp_path / "asked"
    asked_dir.mkdir(mode=0o755)
    asked = install_fake_codex(asked_dir)
    asked.set_fault("exit_status", status=1)  # it fails its probe: withheld, exit 3
    with fake_helper(host_env, client_socket, fake_codex.path, "other"):
        for args, env in (
            (["--codex", str(asked.path)], {}),
            ([], {"LAUNCHER_PROBE_CODEX": str(asked.path)}),
        ):
            done = run_cli("resolve", *args, env={**host_env.env, **env})
            assert done.returncode == 3, done.stdout
            assert str(fake_codex.path) not in done.stdout
        helper_only = run_cli(
            "resolve", "--via", "helper", "--codex", str(asked.path), env=host_env.env
        )
        assert helper_only.returncode == 3
        assert "not for the path asked about" in helper_only.stderr


def test_the_version_of_a_helpers_launcher_is_the_verdicts(
    host_env: HostEnv, client_socket: Path, fake_codex: FakeCodex
) -> None:
    """L1: the helper is trusted to have probed, never to say what the probe found: the
    version comes from this user's passed verdict for that walk."""
    genuine = run_cli(
        "resolve", "--via", "local", "--json", "--codex", str(fake_codex.path), env=host_env.env
    )
    assert genuine.returncode == 0, genuine.stderr
    with fake_helper(host_env, client_socket, fake_codex.path, "version"):
        through = run_cli(
            "resolve",
            "--via",
            "helper",
            "--json",
            "--codex",
            str(fake_codex.path),
            env=host_env.env,
        )
    assert through.returncode == 0, through.stderr
    assert json.loads(through.stdout)["version"] == json.loads(genuine.stdout)["version"]


@pytest.mark.parametrize("mode", ["nan", "repeated", "truncated", "deep"])
def test_a_malformed_answer_makes_the_client_fall_back(
    host_env: HostEnv, client_socket: Path, fake_codex: FakeCodex, mode: str
) -> None:
    """A11: NaN, a repeated key, a syntax error or a deeply nested answer: resolved in
    process, never exit 1."""
    with fake_helper(host_env, client_socket, fake_codex.path, mode):
        done = run_cli(
            "resolve", "--json", "--refresh", "--codex", str(fake_codex.path), env=host_env.env
        )
        assert done.returncode == 0, done.stderr
        assert _json(done)["via"] == "local"
        doctor = run_cli("doctor", "--json", "--codex", str(fake_codex.path), env=host_env.env)
        assert doctor.returncode == 0, doctor.stderr
        assert _json(doctor)["helper"]["running"] is False  # type: ignore[index]


# --- XDG_RUNTIME_DIR unset (A2) -------------------------------------------------------


@pytest.fixture
def no_runtime_dir(host_env: HostEnv, tmp_path: Path) -> Path:
    """XDG_RUNTIME_DIR unset, the temporary directory private to the test: the socket's
    directory is then ``<TMPDIR>/runtime-<uid>`` (no /run/user/<uid> in a test's reach)."""
    if Path(f"/run/user/{os.geteuid()}").is_dir():
        pytest.skip("/run/user/<uid> exists: the temporary fallback is not used")
    temp = tmp_path / "temp"
    temp.mkdir(mode=0o700)
    del host_env.env["XDG_RUNTIME_DIR"]
    host_env.env.update(TMPDIR=str(temp))
    return temp / f"runtime-{os.geteuid()}"


def _refused_everywhere(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    done = run_cli("resolve", "--codex", str(fake_codex.path), env=host_env.env)
    assert done.returncode == 0, done.stderr
    assert "warning: not asking the helper: runtime directory" in done.stderr
    meta = run_cli(
        "meta",
        "--transport",
        "stdio",
        "--capabilities",
        '{"codex/sandbox-state": {}}',
        "--state",
        "{}",
        "--codex",
        str(fake_codex.path),
        env=host_env.env,
    )
    assert meta.returncode == 0, meta.stderr
    doctor = run_cli("doctor", "--codex", str(fake_codex.path), env=host_env.env)
    assert doctor.returncode == 0, doctor.stderr
    assert "not asked: not asking the helper: runtime directory" in doctor.stdout
    serve = run_cli("serve", env=host_env.env, timeout=DEADLINE)
    assert serve.returncode == 4 and "runtime directory" in serve.stderr
    helper_only = run_cli(
        "resolve", "--via", "helper", "--codex", str(fake_codex.path), env=host_env.env
    )
    assert helper_only.returncode == 3


def test_a_runtime_dir_that_is_no_directory_is_refused(
    host_env: HostEnv, fake_codex: FakeCodex, no_runtime_dir: Path
) -> None:
    no_runtime_dir.write_text("")
    _refused_everywhere(host_env, fake_codex)


def test_another_users_runtime_dir_is_refused(
    host_env: HostEnv, fake_codex: FakeCodex, no_runtime_dir: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to make a directory another user owns")
    no_runtime_dir.mkdir(mode=0o755)
    os.chown(no_runtime_dir, 65534, 65534)
    _refused_everywhere(host_env, fake_codex)


PARITY = textwrap.dedent(
    """
    import json, warnings
    import platformdirs
    from launcher_probe.service.location import runtime_dir
    warnings.simplefilter("ignore")
    theirs = platformdirs.user_runtime_dir("launcher-probe", appauthor=False)
    print(json.dumps([runtime_dir(), theirs]))
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG rule")
@pytest.mark.parametrize("case", ["xdg", "temp", "temp-made"])
def test_the_socket_directory_is_platformdirs_own(
    host_env: HostEnv, no_runtime_dir: Path, case: str
) -> None:
    env = dict(host_env.env)
    if case == "xdg":
        private = no_runtime_dir.with_name("xdg")
        private.mkdir(mode=0o700)
        env["XDG_RUNTIME_DIR"] = str(private)
    elif case == "temp-made":
        no_runtime_dir.mkdir(mode=0o700)
    done = subprocess.run(
        [sys.executable, "-c", PARITY], env=env, capture_output=True, text=True, check=True
    )
    ours, theirs = json.loads(done.stdout)
    assert ours == theirs
