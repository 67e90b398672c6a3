"""Fingerprint: the walk the path rules judge; every change of the binary or of a directory's
owner or mode shows, and the verdict is a function of the record."""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import Reason
from launcher_probe.host.paths.fingerprint import Fingerprint
from launcher_probe.host.paths.rules import check_launcher_path

NOBODY = pwd.getpwnam("nobody").pw_uid


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
    (hop,) = fingerprint.to_json()
    assert (hop["path"], hop["realpath"]) == (str(native), str(native))
    assert (hop["dev"], hop["ino"], hop["size"]) == (st.st_dev, st.st_ino, st.st_size)
    assert (hop["mtime_ns"], hop["ctime_ns"]) == (st.st_mtime_ns, st.st_ctime_ns)
    assert fingerprint.path == fingerprint.native == str(native)
    assert fingerprint.still_matches()


def test_every_directory_from_the_root_is_recorded(tmp_path: Path) -> None:
    native = make_file(tmp_path / "a" / "b" / "codex")
    fingerprint = Fingerprint.of(str(native), str(native))
    directories = [str(p) for p in reversed((tmp_path / "a" / "b" / "codex").parents)]
    assert [c.path for c in fingerprint.components] == [*directories, str(native)]
    for component in fingerprint.components[:-1]:
        st = os.lstat(component.path)
        assert (component.mode, component.uid, component.ino) == (st.st_mode, st.st_uid, st.st_ino)
        assert (component.size, component.mtime_ns, component.ctime_ns) == (0, 0, 0)


def test_symlink_chain_then_shim_then_native(tmp_path: Path) -> None:
    native = make_file(tmp_path / "pkg" / "vendor" / "codex")
    shim = make_file(tmp_path / "pkg" / "bin" / "codex.js", b"#!/usr/bin/env node\n")
    (tmp_path / "bin").mkdir()
    middle = tmp_path / "bin" / "middle"
    os.symlink("../pkg/bin/codex.js", middle)
    found = tmp_path / "bin" / "codex"
    os.symlink("middle", found)

    fingerprint = Fingerprint.of(str(found), str(native))

    hops = fingerprint.to_json()
    assert [hop["path"] for hop in hops] == [str(found), str(middle), str(shim), str(native)]
    assert [hop["realpath"] for hop in hops] == [str(shim)] * 3 + [str(native)]
    assert (fingerprint.end, fingerprint.native) == (str(shim), str(native))
    walked = {c.path for c in fingerprint.components}
    assert {str(tmp_path / "pkg" / "bin"), str(tmp_path / "pkg" / "vendor")} <= walked
    assert fingerprint.still_matches()


def test_native_given_through_a_symlink_is_its_realpath(tmp_path: Path) -> None:
    native = make_file(tmp_path / "real" / "codex")
    alias = tmp_path / "alias"
    os.symlink(native, alias)
    fingerprint = Fingerprint.of(str(alias), str(alias))
    assert [hop["path"] for hop in fingerprint.to_json()] == [str(alias), str(native)]
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
    assert before.first_change() == f"{native} changed"
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
    assert before.first_change() == f"{native} is gone"
    with pytest.raises(OSError):
        Fingerprint.of(str(native), str(native))


def test_symlink_loop_is_an_oserror(tmp_path: Path) -> None:
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    with pytest.raises(OSError):
        Fingerprint.of(str(tmp_path / "a"), str(tmp_path / "a"))


def test_a_directory_owner_or_mode_change_shows(tmp_path: Path) -> None:
    native = make_file(tmp_path / "bin" / "codex")
    directory = tmp_path / "bin"
    before = Fingerprint.of(str(native), str(native))
    (directory / "sibling").write_text("")  # a new entry beside it changes nothing judged
    (directory / "subdirectory").mkdir()  # nor does its link count
    assert before.still_matches()
    assert before.first_change() is None
    directory.chmod(0o750)
    assert not before.still_matches()
    assert before.first_change() == f"directory {directory} changed"
    directory.chmod(0o755)
    assert before.still_matches()
    os.chown(directory, NOBODY, -1)
    assert not before.still_matches()
    after = Fingerprint.of(str(native), str(native))
    assert after != before
    assert after.verdict().reason is Reason.UNSAFE_PERMISSIONS
    assert str(directory) in after.verdict().detail


def test_the_first_change_in_walk_order_is_named(tmp_path: Path) -> None:
    native = make_file(tmp_path / "bin" / "codex")
    before = Fingerprint.of(str(native), str(native))
    _touch(native)
    native.parent.chmod(0o750)
    assert before.first_change() == f"directory {native.parent} changed"
    native.parent.chmod(0o755)
    assert before.first_change() == f"{native} changed"


@pytest.mark.parametrize("layout", ["plain", "symlink", "writable-dir", "not-executable", "dir"])
def test_the_verdict_is_the_path_rules_on_the_record(tmp_path: Path, layout: str) -> None:
    """The record's verdict equals ``check_launcher_path`` on the same files."""
    native = make_file(tmp_path / "d" / "codex")
    path = native
    if layout == "symlink":
        path = tmp_path / "link"
        os.symlink(native, path)
    elif layout == "writable-dir":
        native.parent.chmod(0o777)
    elif layout == "not-executable":
        native.chmod(0o644 if os.geteuid() else 0o600)
    elif layout == "dir":
        path = native.parent
    fingerprint = Fingerprint.of(str(path), str(path))
    assert fingerprint.verdict() == check_launcher_path(str(path))
    assert fingerprint.verdict().ok is (layout in ("plain", "symlink"))


def test_record_round_trip(tmp_path: Path) -> None:
    native = make_file(tmp_path / "codex")
    link = tmp_path / "link"
    os.symlink(native, link)
    fingerprint = Fingerprint.of(str(link), str(native))
    text = json.dumps(fingerprint.record_json())
    assert Fingerprint.from_record_json(json.loads(text)) == fingerprint
    assert set(fingerprint.to_json()[0]) == {
        "path",
        "realpath",
        "dev",
        "ino",
        "size",
        "mtime_ns",
        "ctime_ns",
    }


def _record(tmp_path: Path) -> dict[str, Any]:
    native = make_file(tmp_path / "codex")
    value: dict[str, Any] = Fingerprint.of(str(native), str(native)).record_json()
    return value


def _edit_last(field: str, value: object) -> Callable[[dict[str, Any]], None]:
    def edit(record: dict[str, Any]) -> None:
        record["components"][-1][field] = value

    return edit


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda r: r.update(path="relative"),
        lambda r: r.update(path="/\ud800"),
        lambda r: r.update(native="/elsewhere"),
        lambda r: r.update(split=0),
        lambda r: r.update(split=True),
        lambda r: r.update(extra=1),
        lambda r: r.update(components=[]),
        lambda r: r["components"].pop(0),
        _edit_last("mtime_ns", 1.5),
        _edit_last("dev", True),
        _edit_last("uid", -1),
        _edit_last("hop", 1),
        _edit_last("path", "/\ud800"),
        lambda r: r["components"][-1].pop("gid"),
    ],
)
def test_from_record_json_rejects_anything_else(
    tmp_path: Path, corrupt: Callable[[dict[str, Any]], None]
) -> None:
    record = _record(tmp_path)
    corrupt(record)
    with pytest.raises(ValueError):
        Fingerprint.from_record_json(json.loads(json.dumps(record)))
