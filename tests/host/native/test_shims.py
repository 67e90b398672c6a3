"""Shim resolution on real npm, pnpm and bun layouts built on disk (node is never run).

The layout builders here are reused by test_discovery.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from launcher_probe.contract import Reason
from launcher_probe.host.native.file_kind import FileKind, classify, shebang
from launcher_probe.host.native.follow import resolve_native
from launcher_probe.host.native.shims import Target, host_target
from tests.host.stubs import header, native_stub

NODE_SHIM = b'#!/usr/bin/env node\n// stand-in for @openai/codex/bin/codex.js\nimport "node:os";\n'


def target() -> Target:
    found = host_target()
    if found is None:
        pytest.skip("Codex has no build for this platform")
    return found


def write(path: Path, content: bytes, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    path.chmod(mode)
    return path


def npm_package(node_modules: Path, layout: str = "new") -> tuple[Path, Path]:
    """``@openai/codex`` (and its platform package) under ``node_modules``: (shim, native).

    layouts: ``new`` platform package ``vendor/<triple>/bin/codex``; ``old`` platform package
    ``vendor/<triple>/codex/codex``; ``local`` package-local ``vendor/``; ``mid2025``
    ``@openai/codex/bin/codex-<triple>``; ``missing`` a platform package without its
    binary; ``bare`` the shim package alone.
    """
    host = target()
    package = node_modules / "@openai" / "codex"
    shim = write(package / "bin" / "codex.js", NODE_SHIM, 0o755)
    write(package / "package.json", b'{"name": "@openai/codex"}')
    platform_package = node_modules / host.package
    natives = {
        "new": platform_package / "vendor" / host.triple / "bin" / "codex",
        "old": platform_package / "vendor" / host.triple / "codex" / "codex",
        "local": package / "vendor" / host.triple / "bin" / "codex",
        "mid2025": package / "bin" / f"codex-{host.triple}",
        "missing": platform_package / "vendor" / host.triple / "bin" / "codex",
    }
    native = natives.get(layout, package / "absent")
    if layout in ("new", "old", "missing"):
        write(platform_package / "package.json", b'{"name": "%s"}' % host.package.encode())
    if layout in natives and layout != "missing":
        native_stub(native)
    return shim, native


def npm_global(prefix: Path, layout: str = "new") -> tuple[Path, Path]:
    """``npm install -g`` under ``prefix``: (``prefix/bin/codex`` symlink, native)."""
    shim, native = npm_package(prefix / "lib" / "node_modules", layout)
    link = prefix / "bin" / "codex"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(shim, link.parent))
    return link, native


def pnpm_global(pnpm_home: Path) -> tuple[Path, Path]:
    """``pnpm add -g``: shell shim ``PNPM_HOME/codex`` into the ``.pnpm`` store: (shim, native)."""
    host = target()
    store = pnpm_home / "global" / "5" / "node_modules" / ".pnpm"
    codex_dir = store / "@openai+codex@1.0.0" / "node_modules"
    shim, _ = npm_package(codex_dir, "bare")
    platform_dir = store / f"{host.package.replace('/', '+')}@1.0.0" / "node_modules"
    platform_package = platform_dir / host.package
    write(platform_package / "package.json", b"{}")
    native = native_stub(platform_package / "vendor" / host.triple / "bin" / "codex")
    (codex_dir / host.package).symlink_to(os.path.relpath(platform_package, codex_dir / "@openai"))
    top = pnpm_home / "global" / "5" / "node_modules" / "@openai"
    top.mkdir(parents=True)
    (top / "codex").symlink_to(os.path.relpath(shim.parent.parent, top))
    script = (
        '#!/bin/sh\nbasedir=$(dirname "$(echo "$0" | sed -e \'s,\\\\,/,g\')")\n'
        'if [ -x "$basedir/node" ]; then\n'
        '  exec "$basedir/node"  "$basedir/global/5/node_modules/@openai/codex/bin/codex.js" "$@"\n'
        "else\n"
        '  exec node  "$basedir/global/5/node_modules/@openai/codex/bin/codex.js" "$@"\nfi\n'
    )
    return write(pnpm_home / "codex", script.encode(), 0o755), native


def bun_global(bun_install: Path) -> tuple[Path, Path]:
    """``bun add -g``: ``BUN_INSTALL/bin/codex`` links straight to codex.js: (link, native)."""
    shim, native = npm_package(bun_install / "install" / "global" / "node_modules")
    link = bun_install / "bin" / "codex"
    link.parent.mkdir(parents=True)
    link.symlink_to(shim)
    return link, native


@pytest.mark.parametrize("layout", ["new", "old", "local", "mid2025"])
def test_npm_global_shim_resolves_to_native(tmp_path: Path, layout: str) -> None:
    link, native = npm_global(tmp_path / "prefix", layout)
    resolution = resolve_native(str(link))
    assert resolution.native == str(native)
    assert resolution.shim == str(tmp_path / "prefix/lib/node_modules/@openai/codex/bin/codex.js")
    assert resolution.tried[-1] == str(native)


def test_pnpm_shell_shim_resolves_through_store(tmp_path: Path) -> None:
    shim, native = pnpm_global(tmp_path / "pnpm")
    resolution = resolve_native(str(shim))
    assert (resolution.native, resolution.shim) == (str(native), str(shim))
    assert resolution.tried[0] == str(
        tmp_path / "pnpm/global/5/node_modules/@openai/codex/bin/codex.js"
    )


def test_bun_link_resolves(tmp_path: Path) -> None:
    link, native = bun_global(tmp_path / "bun")
    assert resolve_native(str(link)).native == str(native)


def test_shim_reached_through_symlink_chain(tmp_path: Path) -> None:
    link, native = npm_global(tmp_path / "prefix")
    first = tmp_path / "a" / "codex"
    first.parent.mkdir()
    second = tmp_path / "b"
    second.symlink_to(link)
    first.symlink_to(second)
    assert resolve_native(str(first)).native == str(native)


def test_dangling_shim_lists_every_path_tried(tmp_path: Path) -> None:
    host = target()
    link, missing = npm_global(tmp_path / "prefix", "missing")
    resolution = resolve_native(str(link))
    assert resolution.native is None
    package = tmp_path / "prefix/lib/node_modules/@openai/codex"
    platform_vendor = tmp_path / "prefix/lib/node_modules" / host.package / "vendor" / host.triple
    for expected in (
        package / "bin" / "codex.js",
        tmp_path / "prefix/lib/node_modules" / host.package / "package.json",
        missing,
        platform_vendor / "codex" / "codex",
        package / "vendor" / host.triple / "bin" / "codex",
        package / "vendor" / host.triple / "codex" / "codex",
        package / "bin" / f"codex-{host.triple}",
    ):
        assert str(expected) in resolution.tried
    assert resolution.detail == (
        f"{package / 'bin' / 'codex.js'} is a node shim; no native {host.triple} binary behind "
        f"it: reinstall Codex with its platform package {host.package}, or name the native "
        "Codex binary with --codex"
    )


def test_shell_shim_to_missing_script_is_unresolved(tmp_path: Path) -> None:
    shim = write(tmp_path / "codex", b'#!/bin/sh\nexec node "$basedir/lib/codex.js" "$@"\n', 0o755)
    resolution = resolve_native(str(shim))
    assert (resolution.native, resolution.tried) == (None, (str(tmp_path / "lib/codex.js"),))


def test_native_binary_is_itself_and_a_plain_script_is_unrecognised(tmp_path: Path) -> None:
    native = native_stub(tmp_path / "codex.js")  # named like the shim, but ELF inside
    script = write(tmp_path / "codex", b"#!/usr/bin/python3\nprint('hi')\n", 0o755)
    link = tmp_path / "link"
    link.symlink_to(script)
    resolution = resolve_native(str(native))
    assert (resolution.native, resolution.shim, resolution.tried) == (str(native), None, ())
    resolution = resolve_native(str(link))
    assert (resolution.native, resolution.shim, resolution.reason) == (
        None,
        None,
        Reason.UNRECOGNISED_SCRIPT,
    )
    assert resolution.detail.startswith(f"{script} is a #! script of no format ")
    assert resolution.detail.endswith("; name the native Codex binary with --codex")


@pytest.mark.parametrize(
    ("line", "name"),
    [
        (b"#!/usr/bin/node", "node"),
        (b"#!/usr/bin/env node", "node"),
        (b"#!/usr/bin/env -S node --no-warnings", "node"),
        (b"#!/usr/bin/env -S NODE_OPTIONS=x node", "node"),
        (b"#!/usr/bin/env -S -u NODE_OPTIONS node", "node"),  # -u takes the next word
        (b"#!/usr/bin/env -S -C /opt/python node", "node"),  # so does -C
        (b"#!/usr/bin/env -S --unset NODE_OPTIONS -i node", "node"),
        (b"#!/usr/bin/env -uNODE_OPTIONS --unset=X node", "node"),  # values attached
        (b"#!/usr/bin/env -- A=1 node", "node"),
        (b"#!/usr/bin/env -Snode --no-warnings", "node"),  # -S's string attached
        (b"#!/usr/bin/env --split-string=node --no-warnings", "node"),
        (b"#!/usr/bin/env -S 'node' --no-warnings", "node"),  # quoted, as -S unquotes
        (b'#!/usr/bin/env -S "node"', "node"),
        (b"#!/usr/bin/env -u", None),
        (b"#!/usr/bin/env A=1", None),
    ],
)
def test_env_is_read_past_its_options_and_assignments(line: bytes, name: str | None) -> None:
    found = shebang(line + b"\n")
    assert (None if found is None else found.name) == name


def test_node_shim_is_recognised_by_content_not_name(tmp_path: Path) -> None:
    assert classify("/x/codex", NODE_SHIM) is FileKind.NODE_SHIM
    assert classify("/x/codex", b"#!/usr/bin/env -S node --no-warnings\n") is FileKind.NODE_SHIM
    assert classify("/x/codex.js", header()) is FileKind.NATIVE
    assert classify("/x/codex", b"\xcf\xfa\xed\xfe") is FileKind.NATIVE
    assert classify("/x/codex", b"#!/bin/sh\necho hi\n") is FileKind.SCRIPT
    assert classify("/x/codex", b"just text\n") is FileKind.OTHER
    unnamed = write(tmp_path / "weird-name", NODE_SHIM, 0o755)
    assert resolve_native(str(unnamed)).shim == str(unnamed)


def test_fifo_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "codex"
    os.mkfifo(fifo)
    resolution = resolve_native(str(fifo))  # returns, does not block
    assert (resolution.native, resolution.reason) == (None, Reason.NOT_NATIVE)
    assert resolution.detail.startswith(f"{fifo} is neither a native executable nor a script; ")


@pytest.mark.real_codex
def test_real_npm_install_resolves_to_the_real_native_binary(real_codex: Path) -> None:
    node_modules = real_codex.parents[5]
    link = node_modules / ".bin" / "codex"
    if not link.exists():
        pytest.skip(f"{real_codex} is not inside an npm install")
    resolution = resolve_native(str(link))
    assert resolution.native == os.path.realpath(real_codex)
    shim = node_modules / "@openai" / "codex" / "bin" / "codex.js"
    assert resolution.shim == os.path.realpath(shim)
