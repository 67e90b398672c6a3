"""The discovery memo's inputs as discovery reads them: read before discovery, profiles
through their symlinks, HOME as discovery takes it, no memo under an ancestor it cannot
replay, and a memo holding what no discovery writes is a miss. Each case ends in the
answer full discovery gives at that moment."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launcher_probe.host.cache import discovery_memo as memo
from tests.commands.test_plain_resolve import imported, run, without_importtime
from tests.conftest import HostEnv
from tests.fakes import FakeCodex
from tests.host.cache.test_discovery_memo import (
    DISCOVERY,
    installed_at,
    installer_block,
    on_path,
    resolve,
)
from tests.host.memo_check import forget_memos, memos, timeless
from tests.processes import wait_until

__all__ = ["on_path"]  # the fixture, shared


def test_what_changes_while_discovery_and_the_probe_run_is_a_difference(
    host_env: HostEnv, on_path: FakeCodex, tmp_path: Path
) -> None:
    """A config file written while the probe of discovery's choice runs: discovery never
    read it, so the memo must not record it as what discovery saw. The next plain resolve
    discovers in full and takes the config file's codex."""
    configured = installed_at(tmp_path / "configured")
    gate = tmp_path / "gate"
    on_path.set_fault("slow_start", seconds=60, gate=str(gate))
    first = subprocess.Popen(
        [sys.executable, "-m", "launcher_probe", "resolve", "--json"],
        env=host_env.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: on_path.probe_count() == 1)  # discovery is done: its choice probes
        config = host_env.config_dir / "launcher-probe" / "config.toml"
        config.parent.mkdir(mode=0o700)
        config.write_text(f'codex = "{configured.path}"\n')
        gate.touch()
        out, err = first.communicate(timeout=120)
    finally:
        first.kill()
        first.wait()
    assert first.returncode == 0, err
    assert json.loads(out)["source"] == "path"
    on_path.set_fault(None)

    after, discovered = resolve(host_env.env)

    assert discovered and after["source"] == "config"
    assert after["launcher"] == {"codexExecutable": str(configured.path)}


def test_a_profile_read_through_its_symlink_is_compared_through_it(
    host_env: HostEnv, on_path: FakeCodex, tmp_path: Path
) -> None:
    """``~/.bashrc`` a symlink into a dotfiles directory: discovery reads the file it leads
    to, so the installer's block added there is a difference."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "bashrc").write_text("# mine\n")
    (host_env.home / ".bashrc").symlink_to(dotfiles / "bashrc")
    resolve(host_env.env)
    assert memos()
    installed = installed_at(tmp_path / "installed")
    with (dotfiles / "bashrc").open("a") as profile:
        profile.write(installer_block(installed.path.parent))

    after, discovered = resolve(host_env.env)

    assert discovered and after["launcher"] == {"codexExecutable": str(installed.path)}


@pytest.mark.parametrize("home", [None, "", "relative/home", "/nowhere/home/"])
def test_the_memo_takes_home_as_discovery_does(
    monkeypatch: pytest.MonkeyPatch, home: str | None
) -> None:
    """HOME unset is the password database's home, an empty one ``/``: discovery reads the
    profiles there, and the memo records that directory and those files (read only)."""
    from launcher_probe.host.discovery.places import Locations

    if home is None:
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", home)
    taken = Locations(lambda *_: None).home
    inputs = memo._inputs("/nonexistent/config.toml")
    expected = {None: pwd.getpwuid(os.geteuid()).pw_dir, "": "/"}.get(home, home)
    assert inputs["home"].rstrip("/") == (expected or "").rstrip("/")
    assert taken == (inputs["home"] if os.path.isabs(inputs["home"]) else None)
    assert inputs["home_files"] == [
        None if taken is None else memo._identity(os.path.join(taken, name), follow=True)
        for name in memo.HOME_FILES
    ]
    if taken is not None and home is None:  # the real home's profiles, when it has any
        present = [name for name in memo.HOME_FILES if os.path.exists(Path(taken) / name)]
        assert all(inputs["home_files"][memo.HOME_FILES.index(name)] for name in present)


#: Three plain resolves from one ``sh`` running this script, which makes itself executable
#: before the third (``$PY``: this interpreter).
_HARNESS_SCRIPT = """#!/bin/sh
for turn in 1 2 3; do
  [ "$turn" = 3 ] && chmod 755 "$0"
  "$PY" -X importtime -m launcher_probe resolve --json || exit "$?"
done
"""


def test_under_a_script_named_as_codexs_no_memo_is_written(
    host_env: HostEnv, on_path: FakeCodex, tmp_path: Path
) -> None:
    """Such an ancestor is judged on the script's mode and ``#!`` line, which the memo does
    not replay: made executable, it becomes the harness (here passed over: a script is no
    Codex). So under it every plain resolve discovers in full, and the third sees that."""
    script = tmp_path / "scripted" / "codex"
    script.parent.mkdir(mode=0o755)
    script.write_text(_HARNESS_SCRIPT)
    script.chmod(0o644)
    done = subprocess.run(
        ["sh", str(script)],
        env={**host_env.env, "PY": sys.executable},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, without_importtime(done.stderr)
    decoder, text, decisions = json.JSONDecoder(), done.stdout.strip(), []
    while text:
        decision, end = decoder.raw_decode(text)
        decisions.append(decision)
        text = text[end:].strip()
    assert imported(done.stderr).count(DISCOVERY) == 3
    assert [[item["source"] for item in decision["tried"]] for decision in decisions] == [
        [],
        [],
        ["harness"],
    ]
    assert all(decision["source"] == "path" for decision in decisions)
    assert memos() == []


def _mode_past_64_bits(written: dict[str, object]) -> None:
    walk = written["config_walk"]
    assert isinstance(walk, dict)
    walk["components"][0]["mode"] = 1 << 64


def _operators_source(written: dict[str, object]) -> None:
    chosen = written["chosen"]
    assert isinstance(chosen, dict)
    chosen["source"] = "explicit"


def _mode_past_32_bits(written: dict[str, object]) -> None:
    walk = written["config_walk"]
    assert isinstance(walk, dict)
    walk["components"][0]["mode"] = 1 << 32  # a stat value, but no mode stat.S_ISDIR takes


@pytest.mark.parametrize("tamper", [_mode_past_64_bits, _mode_past_32_bits, _operators_source])
def test_a_memo_holding_what_no_discovery_writes_is_a_miss(
    host_env: HostEnv, on_path: FakeCodex, tamper: object
) -> None:
    """A stat value past 64 bits, a mode past 32 bits, or the operator's source: a miss and
    full discovery (which writes the memo again), not an error."""
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text("# no codex here\n")
    first, _ = resolve(host_env.env)
    (memo_file,) = memos()
    written = json.loads(memo_file.read_text())
    assert callable(tamper)
    tamper(written)
    memo_file.write_text(json.dumps(written))

    after, discovered = resolve(host_env.env)

    assert discovered and timeless(after) == timeless(first)
    forget_memos()


#: Two plain resolves, one after the other, from the process running this (``$PY``: this
#: interpreter), which prints each decision and whether it discovered.
_TWICE = """
import json, os, re, subprocess, sys
for _ in range(2):
    done = subprocess.run([os.environ["PY"], "-X", "importtime", "-m", "launcher_probe",
                           "resolve", "--json"], capture_output=True, text=True, check=True)
    modules = re.findall(r"^import time:.*\\|\\s*(\\S+)$", done.stderr, re.MULTILINE)
    print(json.dumps([json.loads(done.stdout)["source"], DISCOVERY in modules]))
""".replace("DISCOVERY", repr(DISCOVERY))


def _twice(argv: list[str], env: dict[str, str]) -> list[list[object]]:
    done = subprocess.run(
        argv, env={**env, "PY": sys.executable}, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_config_files_codex_is_memoised_below_a_codex_executable(
    host_env: HostEnv, on_path: FakeCodex, tmp_path: Path
) -> None:
    """The operator's config file is read before any ancestor is asked: below a process
    running an executable named ``codex`` (as under Codex), its codex answers from the memo."""
    configured = installed_at(tmp_path / "configured")
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700)
    config.write_text(f'codex = "{configured.path}"\n')
    running = tmp_path / "harness" / "codex"  # an interpreter named as Codex's binary is
    running.parent.mkdir()
    shutil.copy(sys.executable, running)
    assert _twice([str(running), "-c", _TWICE], host_env.env) == [
        ["config", True],
        ["config", False],
    ]


def test_below_a_directory_named_codex_the_memo_answers_while_it_stays_one(
    host_env: HostEnv, on_path: FakeCodex, tmp_path: Path
) -> None:
    """An ancestor whose command line names a directory ``codex`` (an editor opened on a
    clone of that name; here Python running a directory) is never the harness while it
    stays a directory: the memo records it so, and answers."""
    clone = tmp_path / "src" / "codex"
    clone.mkdir(parents=True)
    (clone / "__main__.py").write_text(_TWICE)
    assert _twice([sys.executable, str(clone)], host_env.env) == [["path", True], ["path", False]]
    assert memos()


@pytest.mark.parametrize("blocked", ["not_a_directory", "a_symlink_loop"])
def test_a_config_file_that_cannot_be_looked_at_is_refused_as_discovery_refuses_it(
    host_env: HostEnv, on_path: FakeCodex, blocked: str
) -> None:
    """A memo written while there was no config file; then its directory becomes a file, or
    a symlink to itself: ``stat`` fails, but not for the file's absence. Discovery refuses
    such a config file (exit 4), so a replay must not answer from the memo, each time."""
    resolve(host_env.env)
    assert len(memos()) == 1
    directory = host_env.config_dir / "launcher-probe"
    if blocked == "not_a_directory":
        directory.write_text("x\n")
    else:
        directory.symlink_to("launcher-probe")

    for _ in range(2):
        code, _, err, modules = run(host_env.env, "resolve", "--json")
        assert code == 4, err
        assert "config.toml: cannot read" in err
        assert DISCOVERY in modules


def test_a_script_named_from_a_deleted_working_directory_is_no_memo(tmp_path: Path) -> None:
    """An ancestor running ``codex.js`` by a relative name from a working directory since
    deleted: psutil, and so discovery, takes the script from that directory's name again
    once one is made there (its ``/proc`` link reads `` (deleted)``), which the memo would
    not compare: no memo."""
    directory = tmp_path / "session"
    directory.mkdir()
    (directory / "codex.js").write_text("read line\n")
    with subprocess.Popen(
        ["sh", "codex.js"], cwd=directory, stdin=subprocess.PIPE, text=True
    ) as ancestor:
        try:
            cmdline = Path(f"/proc/{ancestor.pid}/cmdline")
            wait_until(lambda: cmdline.read_bytes().endswith(b"codex.js\0"))  # sh runs it
            command = cmdline.read_bytes()
            exe = os.readlink(f"/proc/{ancestor.pid}/exe")
            entry = [ancestor.pid, 0, exe, command.hex()]
            place = {"source": "path", "path": "/usr/bin/codex"}
            (directory / "codex.js").unlink()  # (sh reads it through its own descriptor)
            absent = [ancestor.pid, str(directory), "codex.js", None]
            assert memo._harness_scripts([entry], place) == [absent]  # compared, so a memo
            shutil.rmtree(directory)
            assert os.readlink(f"/proc/{ancestor.pid}/cwd").endswith(" (deleted)")
            assert memo._harness_scripts([entry], place) is None
        finally:
            assert ancestor.stdin is not None
            ancestor.stdin.close()
            ancestor.wait(timeout=30)


@pytest.mark.parametrize("home", ["", "relative"])
def test_no_memo_where_platformdirs_names_the_config_file(
    host_env: HostEnv, on_path: FakeCodex, home: str
) -> None:
    """With ``XDG_CONFIG_HOME`` unset and a relative or empty ``HOME``, platformdirs may
    name the config file from the password database's home, which no variable the memo
    compares says: each plain resolve discovers in full, and writes no memo. (With
    ``HOME`` unset that home is the one discovery takes, which the memo records and
    compares: ``test_the_memo_takes_home_as_discovery_does``.)"""
    env = {key: value for key, value in host_env.env.items() if key != "XDG_CONFIG_HOME"}
    env["HOME"] = home

    for _ in range(2):
        decision, discovered = resolve(env)
        assert discovered and decision["source"] == "path"
    assert memos() == []


def test_with_home_unset_the_password_databases_config_file_is_memoised(
    host_env: HostEnv, on_path: FakeCodex
) -> None:
    """``HOME`` unset: the config file platformdirs names is under the password database's
    home, which the memo records as discovery's home and compares, so it is memoised."""
    env = {key: value for key, value in host_env.env.items() if key != "XDG_CONFIG_HOME"}
    del env["HOME"]
    decisions = [resolve(env) for _ in range(2)]
    assert [discovered for _, discovered in decisions] == [True, False]
    assert timeless(decisions[0][0]) == timeless(decisions[1][0])
