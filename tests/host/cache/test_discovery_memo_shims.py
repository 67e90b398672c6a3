"""The discovery memo behind an npm shim, a dispatcher and a wrapper script: a warm plain
``resolve`` answers without discovery, as discovery would, and a change to any file native
resolution looked at (the shim, a ``package.json``, the platform package, a place it
tried) is a full discovery."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from launcher_probe.contract import Source
from launcher_probe.host.cache import discovery_memo
from launcher_probe.host.cache.policy import VerdictCache
from launcher_probe.host.decision import Published
from launcher_probe.host.discovery.candidate import make_candidate
from launcher_probe.host.discovery.order import Discovery
from launcher_probe.host.native import follow
from launcher_probe.host.native.follow import NativeResolution
from launcher_probe.host.resolver import resolve_launcher
from tests.commands.test_plain_resolve import HEAVY, imported, run
from tests.conftest import ROOT, HostEnv
from tests.fakes import FakeCodex, install_fake_codex
from tests.host.cache.test_discovery_memo import DISCOVERY
from tests.host.memo_check import forget_memos, memos, timeless
from tests.host.native.test_shims import npm_package, target, write
from tests.host.stubs import native_stub


def _private(root: Path) -> None:
    """Every directory under ``root`` 0755 (the path rules' owner and mode)."""
    for directory, _, _ in os.walk(root):
        os.chmod(directory, 0o755)


def _fake_at(native: Path) -> FakeCodex:
    native.parent.mkdir(parents=True, exist_ok=True)
    return install_fake_codex(native.parent)


class Layout:
    """An install on disk whose native binary is the fake: the directory to put first on
    ``PATH``, and the files a change may touch."""

    def __init__(self, bin_dir: Path, fake: FakeCodex, files: dict[str, Path]) -> None:
        self.bin_dir, self.fake, self.files = bin_dir, fake, files


def npm_global(prefix: Path, *, sibling: bool = False) -> Layout:
    """``npm i -g`` under ``prefix`` (``bin/codex -> ../lib/node_modules/@openai/codex/bin/
    codex.js``), the platform package nested in the main package, or beside it."""
    host = target()
    modules = prefix / "lib" / "node_modules"
    shim, _ = npm_package(modules, "bare")
    package = shim.parent.parent
    platform = (modules if sibling else package / "node_modules") / host.package
    manifest = write(platform / "package.json", b'{"name": "@openai/codex"}')
    fake = _fake_at(platform / "vendor" / host.triple / "bin" / "codex")
    link = prefix / "bin" / "codex"
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.relpath(shim, link.parent))
    _private(prefix)
    files = {"shim": shim, "package": package, "platform": platform, "manifest": manifest}
    return Layout(link.parent, fake, files)


def volta(root: Path, home: Path) -> Layout:
    """Volta's dispatcher ``~/.volta/bin/codex -> volta-shim`` and its image's package."""
    bin_dir = home / ".volta" / "bin"
    native_stub(bin_dir / "volta-shim")
    (bin_dir / "codex").symlink_to("volta-shim")
    image = npm_global(home / ".volta/tools/image/packages/@openai/codex")
    _private(home / ".volta")
    return Layout(bin_dir, image.fake, image.files)


def wrapper(root: Path) -> Layout:
    """A Nix ``makeWrapper`` script: ``exec -a "$0" "<native>" "$@"``."""
    store = root / "nix-store" / "h-codex"
    fake = _fake_at(store / "libexec" / "codex" / "bin" / "codex")
    script = f'#! /bin/sh -e\nexec -a "$0" "{fake.path}"  "$@" \n'.encode()
    shim = write(store / "bin" / "codex", script, 0o755)
    _private(root / "nix-store")
    return Layout(shim.parent, fake, {"shim": shim})


def _first_on_path(host_env: HostEnv, layout: Layout) -> Layout:
    host_env.env["PATH"] = f"{layout.bin_dir}:{host_env.env['PATH']}"
    return layout


def resolve(env: dict[str, str]) -> tuple[int, dict[str, object], bool]:
    """``resolve --json`` in a fresh process: exit code, decision, whether it discovered."""
    code, out, err, modules = run(env, "resolve", "--json")
    assert code in (0, 3), err
    return code, json.loads(out), DISCOVERY in modules


def heavy_imports(env: dict[str, str]) -> list[str]:
    """What a plain ``resolve`` in an interpreter without site-packages imports of what the
    warm path avoids (as in tests/host/cache/test_discovery_memo.py)."""
    done = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", "-m", "launcher_probe", "resolve"],
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return sorted(set(imported(done.stderr)) & HEAVY)


def full_discovery(env: dict[str, str]) -> tuple[int, dict[str, object]]:
    """What a resolve with no memo at all decides (the memo it writes removed again)."""
    forget_memos()
    code, decision, discovered = resolve(env)
    assert discovered
    return code, timeless(decision)


LAYOUTS: dict[str, Callable[[HostEnv, Path], Layout]] = {
    "npm shim": lambda host_env, tmp_path: npm_global(tmp_path / "npm-prefix"),
    "npm shim, platform package beside": lambda host_env, tmp_path: npm_global(
        tmp_path / "npm-prefix", sibling=True
    ),
    "Volta dispatcher": lambda host_env, tmp_path: volta(tmp_path, host_env.home),
    "makeWrapper script": lambda host_env, tmp_path: wrapper(tmp_path),
}


@pytest.mark.parametrize("kind", LAYOUTS)
def test_a_warm_plain_resolve_behind_a_shim_answers_from_the_memo(
    host_env: HostEnv, tmp_path: Path, kind: str
) -> None:
    layout = _first_on_path(host_env, LAYOUTS[kind](host_env, tmp_path))
    code, first, discovered = resolve(host_env.env)
    assert (code, discovered, len(memos())) == (0, True, 1)
    assert first["launcher"] == {"codexExecutable": str(layout.fake.path)}
    code, second, discovered = resolve(host_env.env)
    assert (code, discovered, heavy_imports(host_env.env)) == (0, False, [])
    assert (0, timeless(second)) == full_discovery(host_env.env)
    assert layout.fake.probe_count() == 1


def _edit_shim(layout: Layout, tmp_path: Path) -> None:
    shim = layout.files["shim"]
    content = shim.read_bytes()
    write(shim, content + b"// edited\n", 0o755)


def _swap_platform_package(layout: Layout, tmp_path: Path) -> None:
    platform = layout.files["platform"]
    shutil.move(platform, tmp_path / "old-platform")
    manifest = write(platform / "package.json", b'{"name": "@openai/codex"}')
    _fake_at(platform / "vendor" / target().triple / "bin" / "codex")
    _private(manifest.parent)


def _replace_manifest(layout: Layout, tmp_path: Path) -> None:
    manifest = layout.files["manifest"]
    replacement = write(tmp_path / "package.json", b'{"name": "@openai/codex", "x": 1}')
    os.replace(replacement, manifest)


def _nested_package_appears(layout: Layout, tmp_path: Path) -> None:
    """Beside-the-package layout: a nested platform package appears, which Node's lookup
    reaches first (a name the first resolution found absent)."""
    host = target()
    nested = layout.files["package"] / "node_modules" / host.package
    write(nested / "package.json", b'{"name": "@openai/codex"}')
    _fake_at(nested / "vendor" / host.triple / "bin" / "codex")
    _private(layout.files["package"])


def _manifest_removed(layout: Layout, tmp_path: Path) -> None:
    layout.files["manifest"].unlink()


#: (layout, change): what changes between the memo and the next resolve.
CHANGES: dict[str, tuple[str, Callable[[Layout, Path], None]]] = {
    "the shim is edited": ("npm shim", _edit_shim),
    "the platform package is swapped": ("npm shim", _swap_platform_package),
    "package.json is replaced": ("npm shim", _replace_manifest),
    "package.json is removed": ("npm shim", _manifest_removed),
    "a nested platform package appears": (
        "npm shim, platform package beside",
        _nested_package_appears,
    ),
    "the dispatcher's package's shim is edited": ("Volta dispatcher", _edit_shim),
    "the wrapper is edited": ("makeWrapper script", _edit_shim),
}


@pytest.mark.parametrize("change", CHANGES)
def test_any_change_to_what_native_resolution_read_discovers_again(
    host_env: HostEnv, tmp_path: Path, change: str
) -> None:
    kind, edit = CHANGES[change]
    layout = _first_on_path(host_env, LAYOUTS[kind](host_env, tmp_path))
    resolve(host_env.env)
    edit(layout, tmp_path)
    code, after, discovered = resolve(host_env.env)
    assert discovered
    assert (code, timeless(after)) == full_discovery(host_env.env)


def _group_writable(layout: Layout, tmp_path: Path) -> None:
    os.chmod(layout.files["platform"], 0o775)


def _unsafe_shim_target(layout: Layout, tmp_path: Path) -> None:
    """The wrapper now runs a binary in a directory others may write to."""
    unsafe = tmp_path / "unsafe"
    fake = _fake_at(unsafe / "codex")
    os.chmod(unsafe, 0o777)
    write(layout.files["shim"], f'#! /bin/sh -e\nexec "{fake.path}" "$@"\n'.encode(), 0o755)


@pytest.mark.parametrize(
    ("kind", "edit"),
    [("npm shim", _group_writable), ("makeWrapper script", _unsafe_shim_target)],
)
def test_a_file_the_path_rules_now_reject_is_never_published_from_the_memo(
    host_env: HostEnv, tmp_path: Path, kind: str, edit: Callable[[Layout, Path], None]
) -> None:
    layout = _first_on_path(host_env, LAYOUTS[kind](host_env, tmp_path))
    resolve(host_env.env)
    edit(layout, tmp_path)
    code, after, discovered = resolve(host_env.env)
    assert (code, discovered, after.get("launcher")) == (3, True, None)
    assert after["reason"] == "unsafe_permissions"
    assert (code, timeless(after)) == full_discovery(host_env.env)


def test_a_resolution_that_globs_writes_no_memo(host_env: HostEnv, tmp_path: Path) -> None:
    """mise picks the newest of its installs by listing them: no trace can replay that."""
    home = host_env.home
    mise = native_stub(home / ".local" / "bin" / "mise")
    shims = home / ".local/share/mise/shims"
    shims.mkdir(parents=True)
    (shims / "codex").symlink_to(mise)
    install = npm_global(home / ".local/share/mise/installs/node/22.12.0")
    host_env.env["PATH"] = f"{shims}:{host_env.env['PATH']}"
    code, decision, discovered = resolve(host_env.env)
    assert decision["launcher"] == {"codexExecutable": str(install.fake.path)}
    assert (code, discovered, memos()) == (0, True, [])


def test_discoverys_resolution_is_the_first_of_the_two_the_trace_is_taken_between(
    host_env: HostEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold plain resolve behind a shim resolves the native binary three times in all:
    once in discovery, once in the attempt after its walk (the shim still leads there),
    once more after the trace is taken (the memo's proof)."""
    layout = _first_on_path(host_env, LAYOUTS["npm shim"](host_env, tmp_path))
    monkeypatch.setenv("PATH", host_env.env["PATH"])
    resolved: list[str] = []
    resolve_native = follow.resolve_native

    def counted(path: str) -> NativeResolution:
        resolved.append(path)
        return resolve_native(path)

    monkeypatch.setattr(follow, "resolve_native", counted)
    decision = resolve_launcher()
    assert isinstance(decision, Published), decision
    assert decision.descriptor.codex_executable == str(layout.fake.path)
    assert len(memos()) == 1
    assert resolved == [str(layout.bin_dir / "codex")] * 3


def test_a_change_between_discovery_and_the_memo_writes_none(
    host_env: HostEnv, tmp_path: Path
) -> None:
    """What discovery's resolution found no longer holds when the memo is written (a
    platform package Node's lookup reaches first appeared): the second resolution
    disagrees, and no memo names the binary discovery found (without the change, one does)."""
    layout = npm_global(tmp_path / "npm-prefix", sibling=True)
    shim = str(layout.bin_dir / "codex")
    seen = discovery_memo.observed()
    assert seen is not None
    found = Discovery((make_candidate(Source.PATH, shim),), (), ({"source": "path", "path": shim},))
    assert found.candidates[0].resolved == str(layout.fake.path)
    cache = VerdictCache()
    cache.disk.check_directories(create=True)
    discovery_memo.record(cache, found, seen)
    (written,) = memos()
    written.unlink()
    _nested_package_appears(layout, tmp_path)
    discovery_memo.record(cache, found, seen)
    assert memos() == []
