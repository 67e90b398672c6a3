"""``launcher-probe meta`` as a real process, and the injector with real resolver decisions."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import (
    SANDBOX_LAUNCHER_KEY,
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    Reason,
)
from launcher_probe.host.decision import Published
from launcher_probe.host.inject import ServerDescription, Transport, tool_call_meta
from launcher_probe.host.resolver import resolve_launcher
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex

CAPABLE = '{"codex/sandbox-state": {}}'
STATE = '{"permissionProfile":{"type":"disabled"},"sandboxCwd":"file:///tmp/ws"}'
#: Unknown fields, number forms a typed model would rewrite, escapes, and odd spacing.
ODD_STATE = (
    '{ "permissionProfile" : {"type":"disabled", "future":{"x":[1,2]}},\n'
    '  "sandboxCwd": "file:///tmp/ws", "zUnknown": {"big": 12345678901234567890123456789012345,'
    ' "one": 1.0, "exp": 2E+3, "small": 1e-5, "neg": -0.0, "esc": "\\u00e9\\ud83d\\ude00",'
    ' "raw": "é😀", "null": null}, "aFirstWasLast": true }'
)


def meta(env: HostEnv, *args: str) -> tuple[int, str, str]:
    """Run ``launcher-probe meta ARGS``: exit code, stdout, stderr."""
    done = run_cli("meta", *args, env=env.env)
    return done.returncode, done.stdout, done.stderr


def assert_one_line_error(code: int, stdout: str, stderr: str, exit_code: int, text: str) -> None:
    assert (code, stdout) == (exit_code, "")
    assert stderr == f"launcher-probe: {text}\n"


# --- output -----------------------------------------------------------------------------------


@pytest.mark.parametrize("via_file", [False, True])
def test_state_round_trips_byte_for_byte(host_env: HostEnv, tmp_path: Path, via_file: bool) -> None:
    source = tmp_path / "state.json"
    source.write_text(ODD_STATE + "\n", encoding="utf-8")
    state_arg = f"@{source}" if via_file else ODD_STATE
    code, out, err = meta(
        host_env, "--transport", "http", "--capabilities", CAPABLE, "--state", state_arg,
        "--caller-meta", '{"callId": "c1", "n": 10.50}',
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out.encode("utf-8").count(ODD_STATE.encode("utf-8")) == 2
    parsed = json.loads(out)
    assert list(parsed) == ["callId", "n", SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY]
    assert parsed[SANDBOX_STATE_KEY] == parsed[SANDBOX_STATE_META_KEY] == json.loads(ODD_STATE)
    assert parsed["n"] == 10.5


@pytest.mark.parametrize(
    ("number", "detail"),
    [
        ("1e400", "sandbox state number 1e400 is out of range"),
        ("-1E+999", "sandbox state number -1E+999 is out of range"),
        ("NaN", "sandbox state contains NaN, which is not JSON"),
    ],
)
def test_state_numbers_out_of_range_are_rejected_cleanly(
    host_env: HostEnv, fake_codex: FakeCodex, number: str, detail: str
) -> None:
    state = STATE[:-1] + f',"x":{number}}}'
    code, out, err = meta(
        host_env, "--transport", "stdio", "--capabilities", CAPABLE, "--state", state,
        "--codex", str(fake_codex.path),
    )  # fmt: skip
    assert_one_line_error(code, out, err, 4, detail)
    assert fake_codex.calls() == []


def test_explain_says_why_and_nothing_is_probed_when_the_launcher_cannot_be_sent(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    cases = [
        (("--transport", "stdio", "--capabilities", "{}", "--state", STATE),
         "capability_not_advertised"),
        (("--transport", "stdio", "--capabilities", CAPABLE), "no_sandbox_state"),
        (("--transport", "http", "--capabilities", CAPABLE, "--state", STATE),
         "transport_not_stdio"),
        (("--transport", "remote", "--capabilities", CAPABLE, "--state", STATE),
         "transport_not_stdio"),
    ]  # fmt: skip
    for args, reason in cases:
        code, out, err = meta(host_env, *args, "--codex", str(fake_codex.path), "--explain")
        assert (code, err) == (0, "")
        explained = json.loads(out)
        assert explained["included"] is False
        assert explained["reason"] == reason
        assert explained["detail"]
        assert SANDBOX_LAUNCHER_KEY not in explained["meta"]
    assert fake_codex.calls() == []


def test_capable_stdio_server_gets_the_resolved_launcher(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    args = ("--transport", "stdio", "--capabilities", '{"codex/sandbox-state-meta": null}',
            "--state", STATE, "--codex", str(fake_codex.path))  # fmt: skip
    code, out, err = meta(host_env, *args)
    assert (code, err) == (0, "")
    assert json.loads(out)[SANDBOX_LAUNCHER_KEY] == {"codexExecutable": str(fake_codex.path)}
    assert fake_codex.probe_count() == 1
    code, out, _ = meta(host_env, *args, "--explain")
    explained = json.loads(out)
    assert (explained["included"], explained["reason"], explained["detail"]) == (True, None, "")
    assert explained["launcher"] == {"codexExecutable": str(fake_codex.path)}
    assert fake_codex.probe_count() == 1  # the second answer came from the cache


def test_withheld_launcher_is_omitted_with_the_resolver_reason(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    fake_codex.set_fault("wrong_version", text="something else 1.0")
    code, out, err = meta(
        host_env, "--transport", "stdio", "--capabilities", CAPABLE, "--state", STATE,
        "--codex", str(fake_codex.path), "--explain",
    )  # fmt: skip
    assert (code, err) == (0, "")
    explained = json.loads(out)
    assert explained["included"] is False
    assert explained["reason"] == Reason.NOT_CODEX
    assert list(explained["meta"]) == [SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY]


@pytest.mark.parametrize("explain", [(), ("--explain",)])
def test_the_resolver_warnings_go_to_stderr_as_resolve_prints_them(
    host_env: HostEnv, fake_codex: FakeCodex, explain: tuple[str, ...]
) -> None:
    env = HostEnv(**{**vars(host_env), "env": {**host_env.env, "LAUNCHER_PROBE_CACHE_DIR": "rel"}})
    resolved = run_cli("resolve", "--codex", str(fake_codex.path), env=env.env)
    assert resolved.returncode == 0
    assert resolved.stderr.startswith("launcher-probe: warning: LAUNCHER_PROBE_CACHE_DIR=")
    code, out, err = meta(
        env, "--transport", "stdio", "--capabilities", CAPABLE, "--state", STATE,
        "--codex", str(fake_codex.path), *explain,
    )  # fmt: skip
    assert (code, err) == (0, resolved.stderr)
    printed = json.loads(out)
    assert SANDBOX_LAUNCHER_KEY in (printed["meta"] if explain else printed)


def test_host_meta_and_resource_read_binding(host_env: HostEnv) -> None:
    code, out, err = meta(
        host_env, "--transport", "http", "--capabilities", "{}", "--method", "resources/read",
        "--server", "codex_apps", "--thread-id", "t1", "--origin-call-id", "call_1",
        "--caller-meta", '{"_codex_apps": {"widget": 1}, "k": [1]}',
        "--host-meta", '{"threadId": "t1"}',
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert json.loads(out) == {"_codex_apps": {"widget": 1}, "k": [1], "threadId": "t1"}


# --- rejections (exit 4) and usage errors (exit 2) ----------------------------------------------

REJECTED: list[tuple[tuple[str, ...], str]] = [
    (("--caller-meta", '"x"'), "invalid type: string, expected a map"),
    (("--caller-meta", "[1]"), "invalid type: sequence, expected a map"),
    (("--caller-meta", "5"), "invalid type: number, expected a map"),
    (("--caller-meta", "true"), "invalid type: boolean, expected a map"),
    (("--caller-meta", '{"threadId": "t"}'), "reserved tool call metadata key: threadId"),
    (("--caller-meta", '{"codex/sandbox-state": {}}'),
     "reserved tool call metadata key: codex/sandbox-state"),
    (("--method", "resources/read", "--caller-meta", '{"codex/connectionLease": 1}'),
     "reserved resource read metadata key: codex/connectionLease"),
    (("--method", "resources/read", "--server", "codex_apps",
      "--caller-meta", '{"_codex_apps": {"resource_uri": "ui://x"}}'),
     "reserved resource read metadata key: _codex_apps.resource_uri"),
    (("--method", "resources/read", "--origin-call-id", "c"), "originCallId requires threadId"),
    (("--state", "[]"), "sandbox state must be a JSON object"),
    (("--state", '{"a":1,"a":1}'), "sandbox state repeats the key 'a'"),
    (("--host-meta", '{"codex/sandbox-launcher": {}}'),
     "host metadata must not set codex/sandbox-launcher: the injector sets it"),
    (("--caller-meta", '{"Codex/Sandbox-Launcher ": {}}'),
     'reserved tool call metadata key: codex/sandbox-launcher (as "Codex/Sandbox-Launcher ")'),
    (("--state", STATE[:-1] + ',"x":' + "[" * 989 + "]" * 989 + "}"),
     "sandbox state is nested deeper than 32 levels"),
    (("--caller-meta", '{"x":' + "[" * 989 + "]" * 989 + "}"),
     "--caller-meta is nested deeper than 64 levels"),
    (("--capabilities", "[" * 5000 + "]" * 5000), "--capabilities is nested deeper than 64 levels"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), REJECTED)
def test_rejections_exit_4_with_one_line(
    host_env: HostEnv, args: tuple[str, ...], message: str
) -> None:
    code, out, err = meta(host_env, "--transport", "http", "--capabilities", CAPABLE, *args)
    assert_one_line_error(code, out, err, 4, message)


def test_unreadable_file_is_refused(host_env: HostEnv, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    code, out, err = meta(
        host_env, "--transport", "http", "--capabilities", CAPABLE, "--state", f"@{missing}"
    )
    assert (code, out) == (4, "")
    assert err.startswith(f"launcher-probe: cannot read --state file {str(missing)!r}: ")
    assert err.count("\n") == 1


USAGE: list[tuple[tuple[str, ...], str]] = [
    (("--transport", "ftp", "--capabilities", "{}"),
     "--transport must be one of stdio, http, remote"),
    (("--transport", "http", "--capabilities", "{}", "--method", "tools/list"),
     "--method must be one of tools/call, resources/read"),
    (("--transport", "http", "--capabilities", "[]"), "--capabilities must be a JSON object"),
    (("--transport", "http", "--capabilities", "{}", "--host-meta", "null"),
     "--host-meta must be a JSON object"),
    (("--transport", "http", "--capabilities", "{}", "--thread-id", "t"),
     "--thread-id and --origin-call-id go with --method resources/read"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), USAGE)
def test_usage_errors_exit_2(host_env: HostEnv, args: tuple[str, ...], message: str) -> None:
    assert_one_line_error(*meta(host_env, *args), 2, message)


@pytest.mark.parametrize("option", ["--capabilities", "--caller-meta", "--host-meta"])
def test_malformed_json_arguments_are_usage_errors(host_env: HostEnv, option: str) -> None:
    args = {"--capabilities": "{}", option: '{"a": '}
    code, out, err = meta(host_env, "--transport", "http", *(x for kv in args.items() for x in kv))
    assert (code, out) == (2, "")
    assert err.startswith(f"launcher-probe: {option} is not valid JSON: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("option", ["--capabilities", "--caller-meta", "--host-meta", "--state"])
def test_a_lone_surrogate_is_refused_not_an_internal_error(host_env: HostEnv, option: str) -> None:
    """JSON grammar allows an unpaired ``\\ud800`` escape; it is not UTF-8 (Codex's parser
    refuses it too), so it is refused in one line instead of failing on output."""
    args = {"--capabilities": CAPABLE, option: '{"x": "\\ud800"}'}
    code, out, err = meta(host_env, "--transport", "http", *(x for kv in args.items() for x in kv))
    what = "sandbox state" if option == "--state" else option
    text = f"{what} contains a lone surrogate (\\ud800), which is not UTF-8"
    assert_one_line_error(code, out, err, 4, text)  # not strict: exit 4 in every argument


# --- the real Codex CLI 0.169.0 ---------------------------------------------------------------


@pytest.fixture(scope="module")
def codex_copy(real_codex: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private copy of the real install's platform directory (binary and resources).

    The tests touch the binary; touching the shared one under .cache would change it for
    every other test. A symlink would not do: touching a link changes only the link, not
    the binary. ``codex-code-mode-host`` (70 MB, not used by ``sandbox``) is left out.
    """
    target = tmp_path_factory.mktemp("real-codex") / real_codex.parent.parent.name
    shutil.copytree(
        real_codex.parent.parent, target, ignore=shutil.ignore_patterns("codex-code-mode-host")
    )
    yield target / real_codex.parent.name / real_codex.name
    shutil.rmtree(target)


@pytest.mark.real_codex
def test_real_decision_is_bound_until_resolved_again(host_env: HostEnv, codex_copy: Path) -> None:
    server = ServerDescription("files", Transport.STDIO, json.loads(CAPABLE))
    decision = resolve_launcher(str(codex_copy))
    assert isinstance(decision, Published), decision
    first = tool_call_meta(server, sandbox_state=STATE, launcher=decision)
    assert first.meta[SANDBOX_LAUNCHER_KEY] == {"codexExecutable": str(codex_copy)}

    stat = codex_copy.stat()
    os.utime(codex_copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # touch
    for _ in range(2):  # the bound decision never comes back by itself
        stale = tool_call_meta(server, sandbox_state=STATE, launcher=decision)
        assert SANDBOX_LAUNCHER_KEY not in stale.meta
        assert stale.omitted_reason is Reason.BINARY_CHANGED

    again = resolve_launcher(str(codex_copy))
    assert isinstance(again, Published), again
    assert again.from_cache is False  # the touch invalidated the verdict: probed anew
    fresh = tool_call_meta(server, sandbox_state=STATE, launcher=again)
    assert fresh.meta[SANDBOX_LAUNCHER_KEY] == {"codexExecutable": str(codex_copy)}


@pytest.mark.real_codex
def test_meta_command_with_the_real_codex(host_env: HostEnv, codex_copy: Path) -> None:
    code, out, err = meta(
        host_env, "--transport", "stdio", "--capabilities", CAPABLE, "--state", ODD_STATE,
        "--codex", str(codex_copy), "--explain",
    )  # fmt: skip
    assert (code, err) == (0, "")
    explained: dict[str, Any] = json.loads(out)
    launcher = {"codexExecutable": str(codex_copy)}
    assert (explained["included"], explained["launcher"], explained["reason"]) == (
        True,
        launcher,
        None,
    )
    assert explained["meta"][SANDBOX_LAUNCHER_KEY] == launcher
    assert out.count(ODD_STATE) == 2
