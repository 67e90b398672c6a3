"""The fuzz pass over every CLI command and the public entry points not covered elsewhere
(``meta`` arguments: ``tests/test_cli_fuzz.py``; ``SandboxRequest.from_meta``:
``tests/server/test_request_properties.py``; the injector:
``tests/host/test_inject_properties.py``).

Arbitrary paths (text, undecodable bytes, lone surrogates, NUL, devices), JSON and
records go in; what may come out is a documented exit code with one stderr line and no
traceback (or, with ``--json``, one JSON document on stdout), or a documented error
class. The suite's timeout is the hang guard.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launcher_probe.cli import main
from launcher_probe.contract import LauncherDescriptor
from launcher_probe.errors import InputRejected
from launcher_probe.host.discovery.order import discover
from launcher_probe.host.paths.rules import check_launcher_path
from launcher_probe.host.probe_result import ProbeResult
from launcher_probe.host.resolver import resolve_launcher
from launcher_probe.json_output import dumps_utf8
from launcher_probe.state import SandboxState
from tests.conftest import HostEnv

FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

odd_paths = st.sampled_from(
    ["", "/", "relative/codex", "/dev/null", "/dev/zero", "/proc/self/mem", "/\ud800", "/a\x00b"]
)
undecodable = st.binary(min_size=1, max_size=30).map(lambda raw: os.fsdecode(b"/" + raw))
paths = st.one_of(
    odd_paths, undecodable, st.text(max_size=40), st.text(max_size=40).map("/".__add__)
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=15,
)
json_texts = st.one_of(json_values.map(json.dumps), st.text(max_size=80))


@pytest.fixture
def no_exec(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``exec`` must refuse every fuzzed ``_meta``: replacing the test process would be a
    failure, so it is made one."""

    def refuse(*args: Any) -> None:
        raise AssertionError(f"exec tried to run {args!r}")

    monkeypatch.setattr(os, "execv", refuse)
    monkeypatch.setattr(os, "execvp", refuse)
    yield


def run_main(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capfd.readouterr()
    return code, out, err


def assert_documented(code: int, out: str, err: str, *, json_out: bool) -> None:
    """A documented exit code; a refusal is one escaped stderr line and no traceback; with
    ``--json``, stdout is one JSON document."""
    assert code in (0, 2, 3, 4), (code, err)
    assert "Traceback" not in err
    if code != 0:
        lines = [
            line for line in err.splitlines() if not line.startswith("launcher-probe: warning:")
        ]
        assert len(lines) == 1 and lines[0].startswith("launcher-probe: "), err
    if json_out and out:
        json.loads(out)
    out.encode("utf-8")  # always valid UTF-8 text


@FUZZ
@given(path=paths, command=st.sampled_from(["discover", "resolve", "probe"]))
def test_every_path_command_answers_any_path(
    host_env: HostEnv, capfd: pytest.CaptureFixture[str], path: str, command: str
) -> None:
    argv = [command, path, "--json"] if command == "probe" else [command, "--codex", path, "--json"]
    if command == "resolve":
        argv.append("--no-cache")
    code, out, err = run_main(capfd, *argv)
    assert_documented(code, out, err, json_out=True)
    assert code != 0  # none of these is a verified Codex CLI


@FUZZ
@given(meta=json_texts, launcher=paths)
def test_exec_refuses_any_unverified_meta(
    host_env: HostEnv, capfd: pytest.CaptureFixture[str], no_exec: None, meta: str, launcher: str
) -> None:
    for given_meta in (meta, json.dumps({"codex/sandbox-launcher": {"codexExecutable": launcher}})):
        code, out, err = run_main(capfd, "exec", "--meta", given_meta, "--", "true")
        assert_documented(code, out, err, json_out=False)
        assert code in (2, 4)


@FUZZ
@given(record=st.one_of(json_texts, st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_cache_commands_survive_any_record(
    host_env: HostEnv, capfd: pytest.CaptureFixture[str], record: str
) -> None:
    code, out, err = run_main(capfd, "cache", "clear")
    assert code == 0
    directory = Path(json.loads(run_main(capfd, "cache", "show", "--json")[1])["directory"])
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    for parent in (directory, directory.parent, directory.parent.parent):
        parent.chmod(0o700)
    (directory / f"{'0' * 64}.json").write_text(record, encoding="utf-8", errors="surrogateescape")
    for argv in (("cache", "show", "--json"), ("cache", "show"), ("cache", "clear", "--json")):
        code, out, err = run_main(capfd, *argv)
        assert code == 0, err
        assert "Traceback" not in err
        if "--json" in argv:
            json.loads(out)


@FUZZ
@given(path=st.one_of(paths, st.binary(max_size=30)))
def test_path_entry_points_raise_only_documented_errors(
    host_env: HostEnv, path: str | bytes
) -> None:
    verdict = check_launcher_path(path)
    assert verdict.ok or verdict.reason is not None
    if isinstance(path, str):
        dumps_utf8(discover(path).to_json()).encode("utf-8")
        dumps_utf8(resolve_launcher(path, use_cache=False).to_json()).encode("utf-8")


@FUZZ
@given(value=json_values)
def test_value_parsers_raise_only_documented_errors(value: Any) -> None:
    for parse in (ProbeResult.from_json, LauncherDescriptor.from_json, SandboxState.from_value):
        with contextlib.suppress(InputRejected):
            parse(value)
    with contextlib.suppress(InputRejected):
        SandboxState.from_text(json.dumps(value))
