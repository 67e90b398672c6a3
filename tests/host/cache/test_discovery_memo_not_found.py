"""The discovery memo of a ``not_found``: on a machine with no Codex, a plain ``resolve``
answers withheld again without discovery, exactly as discovery would, until anything that
decided it changes (a place gains a Codex, a glob matches, a profile, the config file, a
variable), and then it discovers in full."""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Callable
from pathlib import Path

import pytest

from launcher_probe.errors import ExitCode
from tests.commands.test_plain_resolve import run
from tests.conftest import HostEnv
from tests.host.cache.test_discovery_memo import DISCOVERY, installed_at, installer_block
from tests.host.memo_check import forget_memos, memo_agrees_with_discovery, memos, timeless
from tests.service.helper import fresh_socket, running_helper, short_directory

CONFIG_FILE = "launcher_probe.host.discovery.config_file"


def resolve(env: dict[str, str]) -> tuple[int, dict[str, object], set[str]]:
    """``resolve --json --via local`` in a fresh process: its exit code, the decision, and
    the modules it imported."""
    code, out, err, modules = run(env, "resolve", "--json", "--via", "local")
    assert code in (ExitCode.OK, ExitCode.WITHHELD), err
    return code, json.loads(out), set(modules)


def test_a_not_found_is_answered_again_without_discovery(host_env: HostEnv) -> None:
    code, first, modules = resolve(host_env.env)
    assert code == ExitCode.WITHHELD and first["reason"] == "not_found"
    assert DISCOVERY in modules and len(memos()) == 1
    code, second, modules = resolve(host_env.env)
    assert code == ExitCode.WITHHELD and second == first
    assert not {DISCOVERY, "psutil", "filelock"} & modules
    forget_memos()
    assert resolve(host_env.env)[1] == first  # full discovery again: the same answer


def test_via_auto_answers_the_memos_not_found_without_the_config_file(
    host_env: HostEnv,
) -> None:
    """With no helper running, plain ``resolve`` (``--via auto``) gives the memo's not_found
    as the answer: no config file read (the memo says it names no path), so no platformdirs,
    and no discovery."""
    expected = resolve(host_env.env)[1]
    code, out, err, modules = run(host_env.env, "resolve", "--json")
    assert code == ExitCode.WITHHELD, err
    assert json.loads(out) == {**expected, "via": "local"}
    assert not {DISCOVERY, "platformdirs", CONFIG_FILE, "psutil", "filelock"} & set(modules)


def test_via_auto_still_asks_a_helper_that_can_find_one(host_env: HostEnv, tmp_path: Path) -> None:
    """This environment's not_found is not the helper's answer: a helper whose own PATH
    holds a codex publishes it to a client whose memo says not_found."""
    assert resolve(host_env.env)[1]["reason"] == "not_found"
    fake = installed_at(tmp_path / "helper-bin")
    with short_directory() as directory:
        path = fresh_socket(directory)
        client = {**host_env.env, "LAUNCHER_PROBE_SOCKET": str(path)}
        helper = {**client, "PATH": f"{fake.path.parent}:{client['PATH']}"}
        with running_helper(helper, path):
            code, out, err, _ = run(client, "resolve", "--json")
    assert code == ExitCode.OK, err
    answer = json.loads(out)
    assert (answer["via"], answer["launcher"]) == ("helper", {"codexExecutable": str(fake.path)})


def test_the_users_name_is_compared_as_it_names_a_place(host_env: HostEnv) -> None:
    """Discovery names the user's Nix profile by the user's name: a memo recorded under
    another name for the same uid (the user renamed) is a miss."""
    first = resolve(host_env.env)[1]
    (memo_file,) = memos()
    memo = json.loads(memo_file.read_text())
    name = pwd.getpwuid(os.geteuid()).pw_name
    assert memo["user"] == name
    assert f"/etc/profiles/per-user/{name}/bin/codex" in memo["absent"]
    memo_file.write_text(json.dumps({**memo, "user": f"{name}-renamed"}))
    _, again, modules = resolve(host_env.env)
    assert DISCOVERY in modules and again == first


def test_in_process_the_not_found_memo_agrees_with_discovery(host_env: HostEnv) -> None:
    assert memo_agrees_with_discovery()


def _on_path(host_env: HostEnv, tmp_path: Path) -> None:
    fake = installed_at(tmp_path / "path-bin")
    host_env.env["PATH"] = f"{fake.path.parent}:{host_env.env['PATH']}"


def _standalone(host_env: HostEnv, tmp_path: Path) -> None:
    installed_at(host_env.home / ".local" / "bin")


def _nvm(host_env: HostEnv, tmp_path: Path) -> None:
    installed_at(host_env.home / ".nvm" / "versions" / "node" / "v22.1.0" / "bin")


def _linuxbrew(host_env: HostEnv, tmp_path: Path) -> None:
    installed_at(host_env.home / ".linuxbrew" / "bin")


def _installer_block(host_env: HostEnv, tmp_path: Path) -> None:
    fake = installed_at(tmp_path / "installed")
    (host_env.home / ".bashrc").write_text(installer_block(fake.path.parent))


def _config(host_env: HostEnv, tmp_path: Path) -> None:
    fake = installed_at(tmp_path / "configured")
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text(f'codex = "{fake.path}"\n')


def _variable(host_env: HostEnv, tmp_path: Path) -> None:
    fake = installed_at(
        tmp_path / "volta" / "tools" / "image" / "packages" / "@openai" / "codex" / "bin"
    )
    host_env.env["VOLTA_HOME"] = str(tmp_path / "volta")
    assert fake.path.exists()


def _not_executable(host_env: HostEnv, tmp_path: Path) -> None:
    fake = installed_at(host_env.home / ".local" / "bin")
    fake.path.chmod(0o644)  # found, and passed over: not_executable, no longer not_found


#: What appears after the memo of a not_found; each one discovers in full again.
CHANGES: dict[str, Callable[[HostEnv, Path], None]] = {
    "a PATH entry holds codex": _on_path,
    "a standalone install appears": _standalone,
    "an nvm version holds codex (a glob place)": _nvm,
    "Linuxbrew's place, after the globs": _linuxbrew,
    "a shell profile gains the installer's PATH block": _installer_block,
    "a config file names a codex": _config,
    "a location variable is set": _variable,
    "a file that is no launcher appears at a place": _not_executable,
}


@pytest.mark.parametrize("change", CHANGES)
def test_anything_found_after_a_not_found_is_discovered(
    host_env: HostEnv, tmp_path: Path, change: str
) -> None:
    assert resolve(host_env.env)[1]["reason"] == "not_found"
    CHANGES[change](host_env, tmp_path)
    _, after, modules = resolve(host_env.env)
    assert DISCOVERY in modules
    assert after.get("reason") != "not_found"
    forget_memos()
    _, expected, _ = resolve(host_env.env)  # full discovery, with no memo at all
    assert timeless(after) == timeless(expected)
