"""Native resolution reports every path it looked at: each file-system call it makes is
about a path its trail kept, or about a name the trace of those paths covers (so the
discovery memo's replay cannot miss one)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from launcher_probe.host.native.follow import resolve_native
from launcher_probe.host.paths.trace import Trace
from tests.host.discovery.test_install_layouts import ASDF_SHIM, MAKE_WRAPPER
from tests.host.native.test_shims import bun_global, npm_global, pnpm_global, write
from tests.host.stubs import native_stub

#: The calls through which the standard library looks at files (realpath, isfile,
#: lexists, open, glob).
CALLS = ("stat", "lstat", "open", "readlink", "scandir", "listdir")


def _volta(home: Path) -> tuple[Path, Path]:
    native_stub(home / ".volta/bin/volta-shim")
    (home / ".volta/bin/codex").symlink_to("volta-shim")
    _, native = npm_global(home / ".volta/tools/image/packages/@openai/codex")
    return home / ".volta/bin/codex", native


def _vite_plus(home: Path) -> tuple[Path, Path]:
    native_stub(home / ".vite-plus/0.9.0/bin/vp")
    (home / ".vite-plus/current").symlink_to("0.9.0")
    write(home / ".vite-plus/packages/@openai/codex.json", b'{"installId": "abc123"}')
    _, native = npm_global(home / ".vite-plus/packages/@openai/codex/abc123")
    (home / ".vite-plus/bin").mkdir()
    (home / ".vite-plus/bin/codex").symlink_to("../current/bin/vp")
    return home / ".vite-plus/bin/codex", native


def _asdf(home: Path) -> tuple[Path, Path]:
    asdf = native_stub(home / ".asdf/bin/asdf")
    shim = write(home / ".asdf/shims/codex", ASDF_SHIM.format(asdf=asdf).encode(), 0o755)
    _, native = npm_global(home / ".asdf/installs/nodejs/22.12.0")
    return shim, native


def _make_wrapper(home: Path) -> tuple[Path, Path]:
    native = native_stub(home / "store/h-codex/libexec/codex/bin/codex")
    text = MAKE_WRAPPER.format(bash="/bin/sh", target=native)
    return write(home / "store/h-codex/bin/codex", text.encode(), 0o555), native


LAYOUTS: dict[str, Callable[[Path], tuple[Path, Path]]] = {
    "npm": lambda home: npm_global(home / "npm"),
    "npm, old layout": lambda home: npm_global(home / "npm", "old"),
    "npm, package-local vendor": lambda home: npm_global(home / "npm", "local"),
    "npm, codex-<triple>": lambda home: npm_global(home / "npm", "mid2025"),
    "pnpm": lambda home: pnpm_global(home / "pnpm"),
    "bun": lambda home: bun_global(home / "bun"),
    "Volta": _volta,
    "Vite+": _vite_plus,
    "asdf": _asdf,
    "makeWrapper": _make_wrapper,
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("VOLTA_HOME", "VP_HOME", "ASDF_DATA_DIR", "MISE_DATA_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    yield home


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_path_native_resolution_looks_at_is_on_its_trail(
    home: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    start, native = LAYOUTS[layout](home)
    seen: list[str] = []
    for name in CALLS:
        original = getattr(os, name)

        def recording(
            path: object, *args: object, _call: Callable[..., object] = original, **kwargs: object
        ) -> object:
            if isinstance(path, str | os.PathLike):
                seen.append(os.fspath(path))
            return _call(path, *args, **kwargs)

        monkeypatch.setattr(os, name, recording)
    resolution = resolve_native(str(start))
    monkeypatch.undo()
    assert resolution.native == os.path.realpath(native)
    assert resolution.shim is not None and not resolution.trail.listed
    trace = Trace.of(resolution.trail.looked)
    covered = {
        *resolution.trail.looked,
        *(component.path for component in trace.components),
        *(path for path, _ in trace.absent),
    }
    assert [path for path in seen if path not in covered] == []
    assert trace.still_matches()
    assert native.parent.exists()


def test_a_glob_is_on_the_trail(home: Path) -> None:
    mise = native_stub(home / ".local/bin/mise")
    (home / ".local/share/mise/shims").mkdir(parents=True)
    (home / ".local/share/mise/shims/codex").symlink_to(mise)
    _, native = npm_global(home / ".local/share/mise/installs/node/22.12.0")
    resolution = resolve_native(str(home / ".local/share/mise/shims/codex"))
    assert resolution.native == str(native) and resolution.trail.listed
