"""``doctor`` on real files and processes: no Codex, an unsafe one, a shim without its
platform package, bad config files, the JSON shape, a fix for every reason."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from launcher_probe.contract import Reason
from launcher_probe.doctor.filesystem import filesystem_type
from launcher_probe.doctor.fixes import CHECK_PROBLEMS, fix_for
from launcher_probe.host.native.shims import host_target
from tests.conftest import HostEnv, run_cli
from tests.fakes import install_fake_codex
from tests.host.native.test_shims import npm_global

TOP_KEYS = ["schema", "ok", "settings", "candidates", "launcher", "helper", "servers"]


def doctor_json(env: dict[str, str], *args: str) -> tuple[int, dict[str, object]]:
    done = run_cli("doctor", "--json", *args, env=env)
    assert done.stdout, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return done.returncode, report


def test_every_reason_and_check_problem_has_a_fix() -> None:
    for code in [*Reason, *CHECK_PROBLEMS]:
        lines = fix_for(code, "some detail", "/opt/codex/bin/codex")
        assert lines and all(isinstance(line, str) and line for line in lines), code


def test_no_codex_says_how_to_install_or_point_at_it(host_env: HostEnv) -> None:
    done = run_cli("doctor", env=host_env.env)
    assert done.returncode == 3, done.stderr
    out = done.stdout
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    assert f"config file:    {config} (absent)" in out
    assert "verdict: withheld: not_found: no Codex CLI found" in out
    for action in ("npm i -g @openai/codex", "standalone installer", "brew install --cask codex"):
        assert action in out
    for pointer in ("--codex /abs/path/to/codex", "LAUNCHER_PROBE_CODEX=", str(config)):
        assert pointer in out
    assert out.splitlines()[-1] == "result: launcher withheld: not_found (fix above)"


def test_the_json_report_has_every_part(host_env: HostEnv, tmp_path: Path) -> None:
    code, report = doctor_json(host_env.env)
    assert code == 3
    assert list(report) == TOP_KEYS
    assert report["ok"] is False
    settings = report["settings"]
    assert settings == {
        "source": None,
        "path": None,
        "flag": None,
        "env": {"name": "LAUNCHER_PROBE_CODEX", "value": None},
        "config": {
            "path": str(host_env.config_dir / "launcher-probe" / "config.toml"),
            "exists": False,
            "codex": None,
        },
        "cache": {
            "directory": str(host_env.cache_dir / "launcher-probe"),
            "filesystem": filesystem_type(str(host_env.cache_dir)),
            "warning": None,
        },
    }
    candidates = report["candidates"]
    assert isinstance(candidates, dict)
    assert list(candidates) == ["candidates", "skipped", "searched"]
    launcher = report["launcher"]
    assert isinstance(launcher, dict)
    assert launcher["decision"] == "withheld" and launcher["reason"] == "not_found"
    assert launcher["probe"] is None and launcher["cache"] is None
    assert "codex/sandbox-launcher" not in launcher["meta"]
    assert launcher["fix"] == fix_for(Reason.NOT_FOUND)
    helper = report["helper"]
    assert isinstance(helper, dict)
    assert helper["running"] is False and helper["pid"] is None
    assert helper["socket"] == str(
        tmp_path / "xdg-runtime" / "launcher-probe" / "launcher-probe.sock"
    )
    assert report["servers"] == {
        "config": str(host_env.codex_home / "config.toml"),
        "exists": False,
        "checked": False,
        "servers": [],
    }


def test_the_operator_setting_in_force_is_named(host_env: HostEnv, tmp_path: Path) -> None:
    env = {**host_env.env, "LAUNCHER_PROBE_CODEX": "/opt/from-env/codex"}
    _, report = doctor_json(env)
    settings = report["settings"]
    assert isinstance(settings, dict)
    assert (settings["source"], settings["path"]) == ("env", "/opt/from-env/codex")
    _, report = doctor_json(env, "--codex", "/opt/from-flag/codex")
    settings = report["settings"]
    assert isinstance(settings, dict)
    assert (settings["source"], settings["path"]) == ("explicit", "/opt/from-flag/codex")
    assert settings["env"] == {"name": "LAUNCHER_PROBE_CODEX", "value": "/opt/from-env/codex"}


def test_an_unsafe_directory_gets_the_exact_chmod_and_the_fix_works(
    host_env: HostEnv, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    fake = install_fake_codex(shared)
    shared.chmod(0o777)
    code, report = doctor_json(host_env.env, "--codex", str(fake.path))
    assert code == 3
    launcher = report["launcher"]
    assert isinstance(launcher, dict)
    assert launcher["reason"] == "unsafe_permissions"
    fix = launcher["fix"][0]
    assert fix.startswith(f"chmod go-w {shlex.quote(str(shared))}  ")
    candidates = report["candidates"]
    assert isinstance(candidates, dict)
    assert candidates["candidates"][0]["fix"] == [fix]
    # The fix, run as given, is enough.
    subprocess.run(fix.split("  ")[0], shell=True, check=True)
    code, report = doctor_json(host_env.env, "--codex", str(fake.path))
    launcher = report["launcher"]
    assert isinstance(launcher, dict)
    assert (code, launcher["decision"]) == (0, "published"), launcher
    assert launcher["probe"]["ok"] is True
    assert [step["name"] for step in launcher["probe"]["steps"]] == ["identity", "capability"]
    assert launcher["cache"]["state"] == "fresh"
    assert launcher["meta"]["codex/sandbox-launcher"] == {"codexExecutable": str(fake.path)}


def test_a_failed_probe_shows_the_failing_step_and_its_cached_verdict(
    host_env: HostEnv, fake_codex: object
) -> None:
    from tests.fakes import FakeCodex

    assert isinstance(fake_codex, FakeCodex)
    fake_codex.set_fault("state_rejected")
    code, report = doctor_json(host_env.env, "--codex", str(fake_codex.path))
    assert code == 3
    launcher = report["launcher"]
    assert isinstance(launcher, dict)
    assert launcher["reason"] == "sandbox_unavailable"
    assert launcher["probe"]["failed_step"]["name"] == "capability"
    assert "invalid --sandbox-state-json" in launcher["probe"]["failed_step"]["stderr_excerpt"]
    assert launcher["cache"]["state"] == "fresh"
    assert "the probe said: " in launcher["fix"][0]
    assert "invalid --sandbox-state-json" in launcher["fix"][0]


def test_a_shim_without_its_platform_package_says_reinstall(
    host_env: HostEnv, tmp_path: Path
) -> None:
    link, _ = npm_global(tmp_path / "npm-prefix", "missing")
    code, report = doctor_json(host_env.env, "--codex", str(link))
    assert code == 3
    launcher = report["launcher"]
    assert isinstance(launcher, dict)
    assert launcher["reason"] == "shim_unresolved"
    target = host_target()
    assert target is not None
    assert f"({target.package} is missing)" in launcher["fix"][0]
    assert "npm i -g @openai/codex@latest" in launcher["fix"][0]


def test_a_wrapper_whose_program_is_gone_gets_no_npm_advice(
    host_env: HostEnv, tmp_path: Path
) -> None:
    wrapper = tmp_path / "codex"
    wrapper.write_text(f'#!/bin/sh\nexec "{tmp_path / "gone"}" "$@"\n')
    wrapper.chmod(0o755)
    code, report = doctor_json(host_env.env, "--codex", str(wrapper))
    assert code == 3
    launcher = report["launcher"]
    assert isinstance(launcher, dict)
    assert launcher["reason"] == "shim_unresolved"
    assert launcher["fix"][0] == (
        f"{wrapper} does not lead to a native Codex binary (the verdict says where it "
        "stopped): reinstall Codex, or name the native binary itself"
    )
    assert "npm" not in launcher["fix"][0]


def test_a_malformed_codex_config_names_file_and_line(host_env: HostEnv) -> None:
    host_env.codex_home.mkdir()
    config = host_env.codex_home / "config.toml"
    config.write_text('[mcp_servers.a]\ncommand = "x"\nargs = [oops]\n')
    done = run_cli("doctor", env=host_env.env)
    assert done.returncode == 4
    assert done.stdout == ""
    assert str(config) in done.stderr and "line 3, column 9" in done.stderr


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('[mcp_servers.a]\nurl = "http://x"\ncommand = "y"\n', "exactly one of command"),
        ('[mcp_servers.a]\ncommand = "y"\nargs = "z"\n', "args must be a list of strings"),
        ("mcp_servers = 3\n", "mcp_servers must be a table"),
    ],
)
def test_a_server_table_codex_would_not_take_is_refused(
    host_env: HostEnv, tmp_path: Path, table: str, problem: str
) -> None:
    config = tmp_path / "codex.toml"
    config.write_text(table)
    done = run_cli("doctor", "--codex-config", str(config), env=host_env.env)
    assert done.returncode == 4
    assert str(config) in done.stderr and problem in done.stderr


def test_a_named_codex_config_that_is_missing_is_refused(host_env: HostEnv, tmp_path: Path) -> None:
    done = run_cli("doctor", "--codex-config", str(tmp_path / "absent.toml"), env=host_env.env)
    assert done.returncode == 4
    assert "absent.toml: no such file" in done.stderr


def test_a_malformed_launcher_probe_config_names_file_and_line(host_env: HostEnv) -> None:
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text('codex = "/x"\ncodex = \n')
    done = run_cli("doctor", env=host_env.env)
    assert done.returncode == 4
    assert str(config) in done.stderr and "line 2" in done.stderr


def test_a_running_helper_is_reported_with_its_socket_and_uptime(host_env: HostEnv) -> None:
    from tests.service.helper import fresh_socket, running_helper, short_directory

    with short_directory() as directory:
        socket_path = fresh_socket(directory)
        env = {**host_env.env, "LAUNCHER_PROBE_SOCKET": str(socket_path)}
        with running_helper(env, socket_path) as helper:
            _, report = doctor_json(env)
            part = report["helper"]
            assert isinstance(part, dict)
            assert part["running"] is True
            assert part["socket"] == str(socket_path)
            assert part["pid"] == helper.process.pid
            assert isinstance(part["uptime"], float) and part["uptime"] >= 0


def test_a_codex_config_with_a_key_of_too_many_parts_is_refused_at_once(
    host_env: HostEnv, tmp_path: Path
) -> None:
    """200 KB of one table header: over 60 s of tomllib before, refused now."""
    from launcher_probe.host.discovery.toml_bounded import MAX_KEY_PARTS

    config = tmp_path / "codex.toml"
    config.write_text('[mcp_servers.a]\ncommand = "x"\n[' + ".".join(["a"] * 100_000) + "]\n")
    done = run_cli("doctor", "--codex-config", str(config), env=host_env.env)
    assert done.returncode == 4
    assert f"{config}: a dotted key of more than {MAX_KEY_PARTS} parts (line 3)" in done.stderr
