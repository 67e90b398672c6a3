"""Fingerprint: every hop's identity, and every kind of change to the binary shows."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from launcher_probe.host.fingerprint import Fingerprint


def make_file(path: Path, content: bytes = b"\x7fELF native\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    path.chmod(0o755)
    return path


def relink(link: Path, target: str) -> None:
    """Point ``link`` at ``target`` atomically (a new symlink replaces the old one)."""
    temporary = link.with_name(f".{link.name}.new")
    os.symlink(target, temporary)
    os.replace(temporary, link)


def test_plain_file_is_one_hop(tmp_path: Path) -> None:
    native = make_file(tmp_path / "codex")
    fingerprint = Fingerprint.of(str(native), str(native))
    st = native.stat()
    (hop,) = fingerprint.hops
    assert (hop.path, hop.realpath) == (str(native), str(native))
    assert (hop.dev, hop.ino, hop.size) == (st.st_dev, st.st_ino, st.st_size)
    assert (hop.mtime_ns, hop.ctime_ns) == (st.st_mtime_ns, st.st_ctime_ns)
    assert fingerprint.path == fingerprint.native == str(native)
    assert fingerprint.still_matches()


def test_symlink_chain_then_shim_then_native(tmp_path: Path) -> None:
    native = make_file(tmp_path / "pkg" / "vendor" / "codex")
    shim = make_file(tmp_path / "pkg" / "bin" / "codex.js", b"#!/usr/bin/env node\n")
    (tmp_path / "bin").mkdir()
    middle = tmp_path / "bin" / "middle"
    os.symlink("../pkg/bin/codex.js", middle)
    found = tmp_path / "bin" / "codex"
    os.symlink("middle", found)

    fingerprint = Fingerprint.of(str(found), str(native))

    assert [hop.path for hop in fingerprint.hops] == [
        str(found),
        str(middle),
        os.path.join(str(tmp_path / "bin"), "../pkg/bin/codex.js"),
        str(native),
    ]
    assert [hop.realpath for hop in fingerprint.hops] == [str(shim)] * 3 + [str(native)]
    assert fingerprint.native == str(native)
    assert fingerprint.still_matches()


def test_native_given_through_a_symlink_is_its_realpath(tmp_path: Path) -> None:
    native = make_file(tmp_path / "real" / "codex")
    alias = tmp_path / "alias"
    os.symlink(native, alias)
    fingerprint = Fingerprint.of(str(alias), str(alias))
    assert [hop.path for hop in fingerprint.hops] == [str(alias), str(native)]
    assert fingerprint.native == str(native)
    assert fingerprint.still_matches()


def _touch(native: Path) -> None:
    st = native.stat()
    os.utime(native, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def _replace(native: Path) -> None:
    temporary = native.with_name(".codex.new")
    temporary.write_bytes(native.read_bytes())
    temporary.chmod(0o755)
    os.replace(temporary, native)


def _rewrite_keeping_mtime(native: Path) -> None:
    st = native.stat()
    with open(native, "r+b") as stream:
        stream.seek(1)
        stream.write(b"e")  # same size, different content
    os.utime(native, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert native.stat().st_mtime_ns == st.st_mtime_ns
    assert native.stat().st_size == st.st_size


def _chmod(native: Path) -> None:
    native.chmod(0o750)


@pytest.mark.parametrize(
    "change",
    [_touch, _replace, _rewrite_keeping_mtime, _chmod],
    ids=["touch", "replace", "content-with-mtime-restored", "chmod"],
)
def test_every_change_of_the_binary_shows(tmp_path: Path, change: Callable[[Path], None]) -> None:
    native = make_file(tmp_path / "codex")
    link = tmp_path / "link"
    os.symlink(native, link)
    before = Fingerprint.of(str(link), str(native))
    change(native)
    assert not before.still_matches()
    assert Fingerprint.of(str(link), str(native)) != before


def test_retargeted_symlink_shows(tmp_path: Path) -> None:
    first = make_file(tmp_path / "one" / "codex")
    second = make_file(tmp_path / "two" / "codex")
    link = tmp_path / "codex"
    os.symlink(first, link)
    before = Fingerprint.of(str(link), str(first))
    relink(link, str(second))
    assert not before.still_matches()
    assert Fingerprint.of(str(link), str(second)).native == str(second)


def test_changed_shim_shows(tmp_path: Path) -> None:
    native = make_file(tmp_path / "vendor" / "codex")
    shim = make_file(tmp_path / "bin" / "codex.js", b"#!/usr/bin/env node\n")
    before = Fingerprint.of(str(shim), str(native))
    _touch(shim)
    assert not before.still_matches()


def test_vanished_file(tmp_path: Path) -> None:
    native = make_file(tmp_path / "codex")
    before = Fingerprint.of(str(native), str(native))
    native.unlink()
    assert not before.still_matches()
    with pytest.raises(OSError):
        Fingerprint.of(str(native), str(native))


def test_symlink_loop_is_an_oserror(tmp_path: Path) -> None:
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    with pytest.raises(OSError):
        Fingerprint.of(str(tmp_path / "a"), str(tmp_path / "a"))


def test_json_round_trip(tmp_path: Path) -> None:
    native = make_file(tmp_path / "codex")
    link = tmp_path / "link"
    os.symlink(native, link)
    fingerprint = Fingerprint.of(str(link), str(native))
    text = json.dumps(fingerprint.to_json())
    assert Fingerprint.from_json(json.loads(text)) == fingerprint
    assert set(fingerprint.to_json()[0]) == {
        "path",
        "realpath",
        "dev",
        "ino",
        "size",
        "mtime_ns",
        "ctime_ns",
    }


def hop(**overrides: object) -> dict[str, object]:
    valid: dict[str, object] = {
        "path": "/x",
        "realpath": "/x",
        "dev": 1,
        "ino": 1,
        "size": 1,
        "mtime_ns": 1,
        "ctime_ns": 1,
    }
    return {**valid, **overrides}


def test_from_json_accepts_a_valid_hop() -> None:
    assert Fingerprint.from_json([hop()]).native == "/x"


@pytest.mark.parametrize(
    "value",
    [
        None,
        [],
        {"path": "/x"},
        [{"path": "/x"}],
        [hop(path="x")],
        [hop(mtime_ns=1.5)],
        [hop(dev=True)],
        [hop(extra=1)],
        [hop()] * 42,
    ],
)
def test_from_json_rejects_anything_else(value: object) -> None:
    with pytest.raises(ValueError):
        Fingerprint.from_json(value)
