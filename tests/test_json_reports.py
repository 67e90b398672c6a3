"""Every JSON document the CLI prints is a versioned report (docs/json.md): ``"schema": 1``,
one vocabulary, and under ``--json`` a failure is one error report on stdout with the
command's usual exit code."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import Reason
from launcher_probe.errors import LauncherProbeError
from tests.conftest import ROOT, HostEnv, run_cli
from tests.fakes import FakeCodex, hanging_probe_cli

CAPABLE = '{"codex/sandbox-state": {}}'
STATE = '{"permissionProfile":{"type":"disabled"},"sandboxCwd":"file:///tmp/ws"}'
JSON_DOCS = ROOT / "docs" / "json.md"


def one_report(stdout: str) -> dict[str, Any]:
    """The one JSON object stdout holds (a second document fails to parse)."""
    report = json.loads(stdout)
    assert isinstance(report, dict)
    assert report["schema"] == 1
    return report


def malformed_config(host_env: HostEnv) -> None:
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text("codex = [\n")


# Each command, failing, with --json: (argv, set-up, reason, exit code).
FAILURES: list[tuple[str, tuple[str, ...], str, str, int]] = [
    ("no command", ("--json",), "", "usage_error", 2),
    ("unknown option", ("resolve", "--json", "--bogus"), "", "usage_error", 2),
    ("discover", ("discover", "--json"), "config", "config_rejected", 4),
    ("resolve", ("resolve", "--json"), "config", "config_rejected", 4),
    ("resolve via", ("resolve", "--json", "--via", "helper"), "", "helper_unavailable", 3),
    ("probe", ("probe", "--json", "/nowhere/codex"), "", "not_found", 4),
    ("probe relative", ("probe", "--json", "codex"), "", "not_absolute", 4),
    ("meta usage", ("meta", "--json", "--transport", "pipe", "--capabilities", "{}"), "",
                    "usage_error", 2),
    ("meta refused", ("meta", "--json", "--transport", "stdio", "--capabilities", CAPABLE,
                      "--caller-meta", '{"threadId": "t"}'), "", "meta_rejected", 4),
    ("meta state", ("meta", "--json", "--transport", "stdio", "--capabilities", CAPABLE,
                    "--state", "[1]"), "", "invalid_sandbox_state", 4),
    ("cache show", ("cache", "show", "--json"), "cache", "cache_unavailable", 4),
    ("cache clear", ("cache", "clear", "--json"), "cache", "cache_unavailable", 4),
    ("exec", ("exec", "--json", "--meta", "{}", "--", "true"), "", "launcher_unavailable", 4),
    ("exec state", ("exec", "--json", "--meta", "[]", "--", "true"), "", "input_rejected", 4),
    ("serve", ("serve", "--json"), "", "usage_error", 2),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "setup", "reason", "code"),
    [failure[1:] for failure in FAILURES],
    ids=[failure[0] for failure in FAILURES],
)
def test_a_failure_under_json_is_one_error_report_with_the_usual_exit_code(
    host_env: HostEnv, tmp_path: Path, argv: tuple[str, ...], setup: str, reason: str, code: int
) -> None:
    env = dict(host_env.env)
    if setup == "config":
        malformed_config(host_env)
    if setup == "cache":  # a cache root others may write to is refused
        shared = tmp_path / "shared-cache"
        shared.mkdir()
        shared.chmod(0o777)
        env["LAUNCHER_PROBE_CACHE_DIR"] = str(shared)
    done = run_cli(*argv, env=env)
    assert done.returncode == code, done.stderr
    report = one_report(done.stdout)
    assert set(report) == {"schema", "error"}
    assert set(report["error"]) == {"reason", "detail"}
    assert report["error"]["reason"] == reason
    # The same one line as on stderr, without the program's prefix.
    assert done.stderr.splitlines()[-1] == f"launcher-probe: {report['error']['detail']}"


def test_without_json_a_failure_prints_nothing_on_stdout(host_env: HostEnv) -> None:
    for argv in (("probe", "/nowhere/codex"), ("exec", "--meta", "{}", "--", "echo", "--json")):
        done = run_cli(*argv, env=host_env.env)
        assert (done.returncode, done.stdout) == (4, "")


def test_a_report_printed_before_the_failure_is_the_only_document(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    fake_codex.set_fault("wrong_version")
    for argv in (
        ("resolve", "--json", "--codex", str(fake_codex.path)),
        ("discover", "--json", "--codex", "/nowhere/codex"),
    ):
        done = run_cli(*argv, env=host_env.env)
        assert done.returncode == 3
        report = one_report(done.stdout)
        assert "error" not in report


def test_every_report_is_versioned_and_the_wire_objects_are_not(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    codex = str(fake_codex.path)
    meta = ("meta", "--transport", "stdio", "--capabilities", CAPABLE, "--state", STATE,
            "--codex", codex)  # fmt: skip
    for argv in (
        ("discover", "--json", "--codex", codex),
        ("resolve", "--json", "--codex", codex),
        ("probe", "--json", codex),
        (*meta, "--explain"),
        ("cache", "show", "--json"),
        ("cache", "clear", "--json"),
    ):
        done = run_cli(*argv, env=host_env.env)
        assert done.returncode == 0, (argv, done.stderr)
        one_report(done.stdout)
    descriptor = run_cli("resolve", "--codex", codex, env=host_env.env)
    assert json.loads(descriptor.stdout) == {"codexExecutable": codex}
    sent = json.loads(run_cli(*meta, env=host_env.env).stdout)
    assert "schema" not in sent
    assert sent["codex/sandbox-launcher"] == {"codexExecutable": codex}


def test_one_name_for_the_native_binary_in_every_report(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    codex = str(fake_codex.path)
    discovered = one_report(
        run_cli("discover", "--json", "--codex", codex, env=host_env.env).stdout
    )
    resolved = one_report(run_cli("resolve", "--json", "--codex", codex, env=host_env.env).stdout)
    probed = one_report(run_cli("probe", "--json", codex, env=host_env.env).stdout)
    listed = one_report(run_cli("cache", "show", "--json", env=host_env.env).stdout)
    assert discovered["candidates"][0]["resolved"] == codex
    assert resolved["resolved"] == resolved["launcher"]["codexExecutable"] == codex
    assert probed["resolved"] == codex
    assert listed["records"][0]["resolved"] == codex
    for report in (discovered["candidates"][0], resolved, probed, listed["records"][0]):
        assert report["path"] == codex


def test_a_published_decision_lists_the_candidates_passed_over(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    # PATH holds a broken codex first, then the good one: the first is passed over.
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "codex").write_text("#!/bin/sh\nexit 1\n")
    (broken / "codex").chmod(0o755)
    env = {**host_env.env, "PATH": f"{broken}:{fake_codex.path.parent}:/usr/bin:/bin"}
    done = run_cli("resolve", "--json", "--via", "local", env=env)
    assert done.returncode == 0, done.stderr
    decision = one_report(done.stdout)
    assert decision["resolved"] == str(fake_codex.path)
    (passed_over,) = (item for item in decision["tried"] if item["path"] == str(broken / "codex"))
    assert passed_over["reason"] == "unrecognised_script"
    assert set(passed_over) == {"source", "path", "resolved", "reason", "detail"}


def test_a_signalled_command_under_json_reports_it(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    argv = ["probe", "--json", str(fake_codex.path), "--timeout", "600"]
    with hanging_probe_cli(fake_codex, argv, host_env.env, tmp_path / "ready.fifo") as cli:
        cli.send_signal(signal.SIGTERM)
        stdout, stderr = cli.communicate(timeout=60)
    assert cli.returncode == 143, stderr
    error = {"reason": "signalled", "detail": "ended by SIGTERM"}
    assert one_report(stdout) == {"schema": 1, "error": error}
    assert stderr.splitlines()[-1] == "launcher-probe: ended by SIGTERM"  # the detail, as said


def _documented_codes() -> set[str]:
    """The codes in the first column of docs/json.md's tables: ``| `code` | ...``."""
    return set(re.findall(r"^\| `([a-z_0-9]+)` \|", JSON_DOCS.read_text(), re.MULTILINE))


def _error_classes(base: type[LauncherProbeError]) -> list[type[LauncherProbeError]]:
    found = [base]
    for sub in base.__subclasses__():
        found += _error_classes(sub)
    return found


def test_every_reason_code_is_documented_in_one_place() -> None:
    import importlib
    import pkgutil

    import launcher_probe

    for module in pkgutil.walk_packages(launcher_probe.__path__, "launcher_probe."):
        if not module.name.endswith("__main__"):  # that one runs the CLI
            importlib.import_module(module.name)
    documented = _documented_codes()
    assert {str(reason) for reason in Reason} <= documented
    assert {error.reason for error in _error_classes(LauncherProbeError)} <= documented
    assert "signalled" in documented
