"""Discovery on real layouts in an isolated HOME, and the ``discover`` command as a process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launcher_probe.contract import Reason, Source
from launcher_probe.errors import ConfigError
from launcher_probe.host.discovery.candidate import Candidate
from launcher_probe.host.discovery.order import Discovery, discover
from tests.conftest import HostEnv, run_cli
from tests.host.native.test_shims import bun_global, npm_global, pnpm_global, target
from tests.host.stubs import native_stub

#: Each test's final state also resolves through the discovery memo as in full.
pytestmark = pytest.mark.usefixtures("through_the_memo")

KEYS = ["source", "path", "resolved", "ok", "reason", "detail", "also_found_at"]


def found(discovery: Discovery) -> list[tuple[Source, str, str | None, Reason | None]]:
    """(source, path, resolved, reason) of every candidate, leaving out a harness one (the
    suite itself may run under a real Codex)."""
    return [
        (c.source, c.path, c.resolved, c.verdict.reason)
        for c in discovery.candidates
        if c.source is not Source.HARNESS
    ]


def only(discovery: Discovery) -> Candidate:
    (candidate,) = discovery.candidates
    return candidate


def native_in(directory: Path) -> Path:
    return native_stub(directory / "codex")


def write_config(host_env: HostEnv, text: str) -> Path:
    config = host_env.config_dir / "launcher-probe" / "config.toml"
    config.parent.mkdir(mode=0o700, exist_ok=True)
    config.write_text(text)
    return config


def test_nothing_found_names_what_it_looked_for(host_env: HostEnv) -> None:
    result = run_cli("discover", env=host_env.env)
    assert result.returncode == 3
    assert result.stderr == "launcher-probe: no Codex CLI found\n"
    assert "No usable Codex CLI. Looked at:" in result.stdout
    for place in (
        f"{host_env.home}/.local/bin/codex",
        f"{host_env.codex_home}/packages/standalone/current/bin/codex",
        "/usr/bin/codex",
        f"{host_env.home}/.nvm/versions/node/*/bin/codex",
        f"{host_env.home}/.bun/bin/codex",
        f"{host_env.home}/.vscode*/extensions/openai.chatgpt-*/bin/*/codex",
    ):
        assert place in result.stdout
    as_json = run_cli("discover", "--json", env=host_env.env)
    assert as_json.returncode == 3
    report = json.loads(as_json.stdout)
    assert report["candidates"] == []
    assert {"source": "harness", "path": "ancestor processes"} in report["searched"]
    assert {"source": "known", "path": f"{host_env.home}/.bun/bin/codex"} in report["searched"]


def test_standalone_install_with_aliases_is_listed_once(host_env: HostEnv) -> None:
    release = host_env.codex_home / "packages" / "standalone" / "releases" / "0.169.0"
    native = native_in(release / "bin")
    (release.parent.parent / "current").symlink_to(release)
    alias = host_env.home / ".local" / "bin" / "codex"
    alias.parent.mkdir(parents=True)
    alias.symlink_to(release.parent.parent / "current" / "bin" / "codex")
    discovery = discover()
    assert found(discovery) == [(Source.STANDALONE, str(alias), str(native), None)]
    (candidate,) = [c for c in discovery.candidates if c.source is Source.STANDALONE]
    current = host_env.codex_home / "packages/standalone/current/bin/codex"
    assert candidate.also_found_at == ((Source.STANDALONE, str(current)),)
    assert candidate.verdict.ok


def test_codex_install_dir_moves_the_standalone_place(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = host_env.codex_home / "packages/standalone/releases/0.171.0"
    native = native_in(release / "bin")
    (release.parent.parent / "current").symlink_to(release)
    alias = native_in(host_env.home / "opt" / "bin")
    alias.unlink()
    alias.symlink_to(host_env.codex_home / "packages/standalone/current/bin/codex")
    monkeypatch.setenv("CODEX_INSTALL_DIR", str(alias.parent))
    assert found(discover()) == [(Source.STANDALONE, str(alias), str(native), None)]
    monkeypatch.setenv("CODEX_INSTALL_DIR", "opt/bin")
    discovery = discover()
    current = host_env.codex_home / "packages/standalone/current/bin/codex"
    assert found(discovery) == [(Source.STANDALONE, str(current), str(native), None)]
    skipped = {"source": "standalone", "entry": "CODEX_INSTALL_DIR=opt/bin", "reason": "relative"}
    assert skipped in discovery.skipped


def test_path_entries_in_order_with_skips_symlink_chains_and_dedupe(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = native_in(host_env.home / "a")
    other = native_in(host_env.home / "c")
    chained = host_env.home / "b" / "codex"
    chained.parent.mkdir()
    (host_env.home / "hop1").symlink_to(first)
    (host_env.home / "hop2").symlink_to("hop1")
    chained.symlink_to("../hop2")
    dirs = [first.parent, "", "rel", chained.parent, other.parent, first.parent]
    monkeypatch.setenv("PATH", os.pathsep.join(map(str, dirs)))
    discovery = discover()
    assert found(discovery) == [
        (Source.PATH, str(first), str(first), None),
        (Source.PATH, str(other), str(other), None),
    ]
    merged = discovery.candidates[-2]
    assert merged.also_found_at == ((Source.PATH, str(chained)),)
    assert discovery.skipped == (
        {"source": "path", "entry": "", "reason": "empty"},
        {"source": "path", "entry": "rel", "reason": "relative"},
    )


def test_known_install_places(host_env: HostEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    home = host_env.home
    monkeypatch.delenv("NPM_CONFIG_PREFIX", raising=False)
    monkeypatch.setenv("npm_config_prefix", str(home / "npm"))
    npm, npm_native = npm_global(home / "npm")
    nvm_old, nvm_old_native = npm_global(home / ".nvm/versions/node/v9.11.0", "old")
    nvm_new, nvm_new_native = npm_global(home / ".nvm/versions/node/v10.1.0", "mid2025")
    fnm, fnm_native = npm_global(home / ".local/share/fnm/node-versions/v20.1.0/installation")
    volta, volta_native = npm_global(home / ".volta/tools/image/packages/@openai/codex")
    pnpm, pnpm_native = pnpm_global(home / ".local/share/pnpm")
    bun, bun_native = bun_global(home / ".bun")
    brew = native_in(home / ".linuxbrew" / "bin")
    vscode = native_in(home / ".vscode-server/extensions/openai.chatgpt-1.2.3-linux-x64/bin/x")
    expected = [
        (npm, npm_native),
        (nvm_new, nvm_new_native),  # the newest node version first
        (nvm_old, nvm_old_native),
        (fnm, fnm_native),
        (volta, volta_native),
        (pnpm, pnpm_native),
        (bun, bun_native),
        (brew, brew),
        (vscode, vscode),
    ]
    discovery = discover()
    assert found(discovery) == [(Source.KNOWN, str(p), str(n), None) for p, n in expected]
    assert all(c.verdict.ok for c in discovery.candidates if c.source is Source.KNOWN)


def test_dangling_shim_is_shim_unresolved(host_env: HostEnv) -> None:
    link, missing = npm_global(host_env.home / ".npm-global", "missing")
    (candidate,) = [c for c in discover().candidates if c.source is Source.KNOWN]
    assert (candidate.path, candidate.resolved) == (str(link), None)
    assert candidate.verdict.reason is Reason.SHIM_UNRESOLVED
    assert f"no native {target().triple} binary" in candidate.verdict.detail
    assert str(missing) in candidate.verdict.detail


def test_shim_to_unsafe_native_is_rejected(host_env: HostEnv) -> None:
    _, native = npm_global(host_env.home / ".npm-global")
    native.chmod(0o777)
    (candidate,) = [c for c in discover().candidates if c.source is Source.KNOWN]
    assert (candidate.resolved, candidate.verdict.reason) == (
        str(native),
        Reason.UNSAFE_PERMISSIONS,
    )
    assert str(native) in candidate.verdict.detail


@pytest.mark.parametrize("source", ["explicit", "env", "config"])
def test_operator_path_is_the_only_candidate_even_when_invalid(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    valid = native_in(host_env.home / "bin")
    monkeypatch.setenv("PATH", str(valid.parent))
    assert found(discover()) == [(Source.PATH, str(valid), str(valid), None)]
    invalid = str(host_env.home / "nowhere" / "codex")
    if source == "explicit":
        discovery = discover("relative/codex")
        expected: tuple[Source, str, Reason] = (
            Source.EXPLICIT,
            "relative/codex",
            Reason.NOT_ABSOLUTE,
        )
    elif source == "env":
        monkeypatch.setenv("LAUNCHER_PROBE_CODEX", invalid)
        discovery = discover()
        expected = (Source.ENV, invalid, Reason.NOT_FOUND)
    else:
        write_config(host_env, f'codex = "{invalid}"\n')
        discovery = discover()
        expected = (Source.CONFIG, invalid, Reason.NOT_FOUND)
    candidate = only(discovery)
    assert (candidate.source, candidate.path, candidate.verdict.reason) == expected
    assert discovery.skipped == ()
    result = run_cli(
        "discover",
        "--json",
        *(["--codex", "relative/codex"] * (source == "explicit")),
        env=dict(os.environ),
    )
    assert result.returncode == 3
    assert [c["source"] for c in json.loads(result.stdout)["candidates"]] == [source]


def test_operator_sources_in_order(host_env: HostEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    by_config = native_in(host_env.home / "config")
    by_env = native_in(host_env.home / "env")
    write_config(host_env, f'# the operator\ncodex = "{by_config}"\n')
    monkeypatch.setenv("LAUNCHER_PROBE_CODEX", "")  # empty counts as unset
    assert only(discover()).source is Source.CONFIG
    monkeypatch.setenv("LAUNCHER_PROBE_CODEX", str(by_env))
    assert only(discover()).source is Source.ENV
    candidate = only(discover(str(by_config)))
    assert (candidate.source, candidate.resolved, candidate.verdict.ok) == (
        Source.EXPLICIT,
        str(by_config),
        True,
    )


def test_malformed_config_names_file_and_line(host_env: HostEnv) -> None:
    config = write_config(host_env, '# ok\ncodex = "/usr/bin/codex\n')
    with pytest.raises(ConfigError) as raised:
        discover()
    assert str(raised.value).startswith(f"{config}: ")
    assert "line 2" in str(raised.value)
    result = run_cli("discover", env=host_env.env)
    assert result.returncode == 4
    assert result.stderr.startswith(f"launcher-probe: {config}: ")
    assert result.stderr.count("\n") == 1


def test_config_codex_must_be_a_string(host_env: HostEnv) -> None:
    config = write_config(host_env, "codex = 5\n")
    with pytest.raises(ConfigError, match="codex must be a string path, not int") as raised:
        discover()
    assert str(config) in str(raised.value)


def test_config_writable_by_others_is_refused(host_env: HostEnv) -> None:
    config = write_config(host_env, 'codex = "/usr/bin/codex"\n')
    config.chmod(0o666)
    with pytest.raises(ConfigError, match="another user could change"):
        discover()


def test_non_utf8_path_entry_and_link_to_it_are_not_utf8(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = os.path.join(os.fsencode(host_env.home), b"bin-\xff")
    os.mkdir(directory, 0o755)
    native = os.fsdecode(native_stub(Path(os.fsdecode(directory)) / "codex"))
    link = host_env.home / "bin" / "codex"  # a UTF-8 path whose target is not
    link.parent.mkdir()
    link.symlink_to(native)
    monkeypatch.setenv("PATH", f"{os.fsdecode(directory)}:{link.parent}")
    assert found(discover()) == [
        (Source.PATH, native, None, Reason.NOT_UTF8),
        (Source.PATH, str(link), native, Reason.NOT_UTF8),
    ]
    result = run_cli("discover", "--json", env=dict(os.environ))
    assert result.returncode == 3
    items = [c for c in json.loads(result.stdout)["candidates"] if c["source"] == "path"]
    shown = f"{host_env.home}/bin-\\xff/codex"
    assert [(c["path"], c["resolved"], c["reason"]) for c in items] == [
        (shown, None, "not_utf8"),
        (str(link), shown, "not_utf8"),
    ]
    assert run_cli("discover", env=dict(os.environ)).returncode == 3


def test_discover_command_json_shape_and_exit_codes(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = native_in(host_env.home / "good")
    shared = host_env.home / "shared"
    bad = native_in(shared)
    shared.chmod(0o777)
    monkeypatch.setenv("PATH", f"{shared}:{good.parent}")
    result = run_cli("discover", "--json", env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert list(report) == ["schema", "candidates", "skipped", "searched"]
    items = [c for c in report["candidates"] if c["source"] != "harness"]
    assert [list(item) for item in items] == [KEYS, KEYS]
    assert items[0] == {
        "source": "path",
        "path": str(bad),
        "resolved": str(bad),
        "ok": False,
        "reason": "unsafe_permissions",
        "detail": f"directory {shared} is writable by others without the sticky bit (mode 0777)",
        "also_found_at": [],
    }
    assert items[1]["ok"] is True
    assert items[1]["reason"] is None
    human = run_cli("discover", env=dict(os.environ))
    assert human.returncode == 0
    assert f"path       {bad}\n   resolved: {bad}\n   verdict:  REJECTED unsafe_permissions" in (
        human.stdout
    )
    monkeypatch.setenv("PATH", str(shared))
    rejected = run_cli("discover", env=dict(os.environ))
    assert rejected.returncode == 3
    assert rejected.stderr.startswith("launcher-probe: no Codex CLI passes the path rules")


def _run_harness(program: list[str], env: dict[str, str]) -> dict[str, object]:
    """Run ``program`` (which starts ``discover --json`` as its child) and return the harness
    candidate the child reported."""
    result = subprocess.run(program, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode in (0, 3), result.stderr
    report = json.loads(result.stdout)
    (harness,) = [c for c in report["candidates"] if c["source"] == "harness"]
    assert report["candidates"][0] == harness  # the harness comes before other sources
    return harness  # type: ignore[no-any-return]


def test_harness_is_the_nearest_codex_ancestor(host_env: HostEnv, tmp_path: Path) -> None:
    """A script named codex runs through its #! line, so its process's exe is the interpreter
    and cmdline[1] names the script: that is how a scripted harness is found. A script of
    no format discovery follows is then reported, never published."""
    codex = tmp_path / "harness" / "codex"
    codex.parent.mkdir()
    codex.write_text(
        f"#!{sys.executable}\nimport subprocess, sys\n"
        "child = [sys.executable, '-m', 'launcher_probe', 'discover', '--json']\n"
        "sys.exit(subprocess.run(child).returncode)\n"
    )
    codex.chmod(0o755)
    harness = _run_harness([str(codex)], host_env.env)
    assert (harness["path"], harness["resolved"], harness["ok"], harness["reason"]) == (
        str(codex),
        None,
        False,
        "unrecognised_script",
    )


def test_harness_script_whose_interpreter_has_another_real_name(
    host_env: HostEnv, tmp_path: Path
) -> None:
    """``#!/bin/sh`` runs as ``dash`` (or bash) where /bin/sh links to it: the running
    interpreter's name differs from the #! line's, and the harness is still found."""
    shell = os.path.realpath("/bin/sh")
    if os.path.basename(shell).startswith("sh"):
        pytest.skip(f"/bin/sh is {shell} itself here: nothing differs")
    codex = tmp_path / "harness" / "codex"
    codex.parent.mkdir()
    codex.write_text('#!/bin/sh\n"$TEST_PYTHON" -m launcher_probe discover --json\nexit $?\n')
    codex.chmod(0o755)
    env = {**host_env.env, "TEST_PYTHON": sys.executable}
    harness = _run_harness([str(codex)], env)
    assert (harness["path"], harness["resolved"], harness["reason"]) == (
        str(codex),
        None,
        "unrecognised_script",
    )


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_harness_running_the_npm_node_shim_resolves_to_native(
    host_env: HostEnv, tmp_path: Path
) -> None:
    link, native = npm_global(tmp_path / "prefix")
    shim = Path(os.path.realpath(link))
    shim.write_text(
        "#!/usr/bin/env node\n"
        "const { spawnSync } = require('node:child_process');\n"
        'const child = ["-m", "launcher_probe", "discover", "--json"];\n'
        "process.exit(spawnSync(process.env.TEST_PYTHON, child, { stdio: 'inherit' }).status);\n"
    )
    env = {
        **host_env.env,
        "TEST_PYTHON": sys.executable,
        "PATH": f"{host_env.env['PATH']}:{os.path.dirname(shutil.which('node') or '')}",
    }
    harness = _run_harness([shutil.which("node") or "node", str(link)], env)
    assert (harness["path"], harness["resolved"], harness["ok"]) == (str(link), str(native), True)


@pytest.mark.parametrize("replacement", ["kept", "deleted", "replaced"])
def test_harness_binary_named_codex_and_gone_from_disk(
    host_env: HostEnv, tmp_path: Path, replacement: str
) -> None:
    """A native executable named codex (a copy of sh) runs discover as its child; once its
    file is deleted or replaced, it is reported rather than the file now at that path."""
    codex = tmp_path / "harness" / "codex"
    codex.parent.mkdir()
    shutil.copy(os.path.realpath(shutil.which("sh") or "/bin/sh"), codex)
    codex.chmod(0o755)
    remove = "" if replacement == "kept" else 'rm -f "$0"; '
    replace = 'printf "#!/bin/sh\\n" > "$0"; chmod 755 "$0"; ' if replacement == "replaced" else ""
    script = f'{remove}{replace}"$TEST_PYTHON" -m launcher_probe discover --json; exit $?'
    env = {**host_env.env, "TEST_PYTHON": sys.executable}
    harness = _run_harness([str(codex), "-c", script, str(codex)], env)
    if replacement == "kept":
        assert (harness["path"], harness["resolved"], harness["ok"]) == (
            str(codex),
            str(codex),
            True,
        )
        return
    assert codex.exists() is (replacement == "replaced")
    assert (harness["path"], harness["resolved"], harness["ok"], harness["reason"]) == (
        str(codex),
        None,
        False,
        "not_found",
    )
    assert "was replaced or deleted on disk" in str(harness["detail"])


def test_operator_discovery_does_not_import_psutil(host_env: HostEnv) -> None:
    code = (
        "import sys; from launcher_probe.host.discovery.order import discover; "
        "discover('/nowhere/codex'); print('psutil' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=host_env.env, capture_output=True, text=True, check=True
    )
    assert result.stdout == "False\n"


def test_glob_characters_in_a_path_entry_are_taken_literally(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoy = native_in(host_env.home / "x")  # what the glob "[x]/codex" would match
    entry = host_env.home / "[x]"
    entry.mkdir()
    monkeypatch.setenv("PATH", str(entry))
    assert found(discover()) == []
    real = native_in(entry)
    monkeypatch.setenv("PATH", f"{entry}:{decoy.parent}")
    assert found(discover()) == [
        (Source.PATH, str(real), str(real), None),
        (Source.PATH, str(decoy), str(decoy), None),
    ]


def test_glob_characters_in_home_are_taken_literally(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = host_env.home / "me[1]"
    decoy = native_in(host_env.home / "me1" / ".nvm/versions/node/v1/bin")
    monkeypatch.setenv("HOME", str(home))
    assert not [c for c in discover().candidates if c.path == str(decoy)]
    nvm = native_in(home / ".nvm/versions/node/v1/bin")
    assert (Source.KNOWN, str(nvm), str(nvm), None) in found(discover())


@pytest.mark.parametrize("name", ["config", "npmrc"])
def test_a_fifo_in_place_of_a_file_we_read_never_blocks(host_env: HostEnv, name: str) -> None:
    if name == "config":
        fifo = host_env.config_dir / "launcher-probe" / "config.toml"
        fifo.parent.mkdir(mode=0o700)
    else:
        fifo = host_env.home / ".npmrc"
    os.mkfifo(fifo, 0o600)
    result = run_cli("discover", "--json", env=host_env.env, timeout=30)
    if name == "config":
        assert result.returncode == 4
        assert result.stderr == f"launcher-probe: {fifo}: cannot read: not a regular file\n"
    else:
        assert result.returncode == 3, result.stderr


def test_a_relative_non_utf8_location_variable_is_shown_escaped(host_env: HostEnv) -> None:
    env = {**host_env.env, "NVM_DIR": os.fsdecode(b"nvm-\xff")}
    result = run_cli("discover", "--json", env=env)
    assert result.returncode == 3, result.stderr
    skipped = {"source": "known", "entry": "NVM_DIR=nvm-\\xff", "reason": "relative"}
    assert skipped in json.loads(result.stdout)["skipped"]


def test_control_characters_in_a_path_are_escaped_in_the_human_report(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory name cannot forge a line (here: another candidate) of the report."""
    native = native_in(host_env.home / "x\n2. path       evil")
    monkeypatch.setenv("PATH", str(native.parent))
    human = run_cli("discover", env=dict(os.environ))
    assert human.returncode == 0, human.stderr
    shown = f"{host_env.home}/x\\n2. path       evil/codex"
    lines = human.stdout.splitlines()
    assert lines[:3] == [f"1. path       {shown}", f"   resolved: {shown}", "   verdict:  ok"]
    report = json.loads(run_cli("discover", "--json", env=dict(os.environ)).stdout)
    assert [c["path"] for c in report["candidates"]] == [str(native)]


def test_places_under_a_relative_home_are_skipped_not_searched(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With HOME relative, a ``codex`` under it would be found relative to the cwd."""
    planted = native_in(tmp_path / "rel" / ".npm-global" / "bin")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", "rel")
    discovery = discover()
    assert found(discovery) == []
    assert planted.exists()
    assert discovery.skipped == (
        {"source": "standalone", "entry": "HOME=rel", "reason": "relative"},
        {"source": "known", "entry": "HOME=rel", "reason": "relative"},
    )
    assert all(os.path.isabs(place["path"].split("*")[0]) for place in discovery.searched[1:])
    human = run_cli("discover", env=dict(os.environ), cwd=tmp_path)
    assert human.returncode == 3
    assert "None" not in human.stdout
    assert 'skipped: known "HOME=rel" (relative)\n' in human.stdout


def test_skipped_names_only_variables_that_were_set(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A relative HOME with one relative variable set: the variable is named with its value,
    the rest once as HOME; a relative XDG_DATA_HOME is ignored (the XDG spec), so fnm's and
    pnpm's defaults under HOME apply, never a ``None`` directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", "rel")
    monkeypatch.setenv("NVM_DIR", "nvm")
    monkeypatch.setenv("XDG_DATA_HOME", "data")
    discovery = discover()
    assert discovery.skipped == (
        {"source": "standalone", "entry": "HOME=rel", "reason": "relative"},
        {"source": "known", "entry": "XDG_DATA_HOME=data", "reason": "relative"},
        {"source": "known", "entry": "HOME=rel", "reason": "relative"},
        {"source": "known", "entry": "NVM_DIR=nvm", "reason": "relative"},
    )
    assert not [p for p in discovery.searched if "None" in p["path"]]
    home = host_env.home
    monkeypatch.setenv("HOME", str(home))
    fnm = native_in(home / ".local/share/fnm/node-versions/v1/installation/bin")
    pnpm = native_in(home / ".local/share/pnpm")
    assert [c.path for c in discover().candidates if c.source is Source.KNOWN] == [
        str(fnm),
        str(pnpm.parent / "codex"),
    ]


def test_a_version_directory_with_a_superscript_digit_is_sorted_not_fatal(
    host_env: HostEnv,
) -> None:
    """ "²" is a digit to ``str.isdigit`` but no number to ``int``: discovery sorts it as
    text rather than failing."""
    odd = native_in(host_env.home / ".nvm/versions/node/v1²2/bin")
    newer = native_in(host_env.home / ".nvm/versions/node/v3/bin")
    assert [path for _, path, _, _ in found(discover())] == [str(newer), str(odd)]
