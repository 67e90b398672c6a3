"""Path rules on real files: every rule, its reason code and the path its detail names."""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import TypeVar

import pytest

from launcher_probe.contract import Reason
from launcher_probe.errors import ExitCode, InputRejected
from launcher_probe.host.paths.rules import PathRejected, check_launcher_path, require_launcher_path
from launcher_probe.json_output import printable

NATIVE = b"\x7fELF\x02\x01\x01" + bytes(57)

PathT = TypeVar("PathT", Path, bytes)

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to nobody needs root")


def make_binary(path: PathT, mode: int = 0o755) -> PathT:
    """A fake native binary (ELF magic, never executed) with ``mode``."""
    with open(path, "wb") as file:
        file.write(NATIVE)
    os.chmod(path, mode)
    return path


def nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    directory = tmp_path / "bin"
    directory.mkdir(mode=0o755)
    return directory


def test_safe_binary_passes(bindir: Path) -> None:
    binary = make_binary(bindir / "codex")
    assert check_launcher_path(str(binary)).ok
    assert check_launcher_path(os.fsencode(binary)).ok


def test_relative_path_is_not_absolute(bindir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_binary(bindir / "codex")
    monkeypatch.chdir(bindir)
    for path in ("codex", "./codex", b"codex", ""):
        verdict = check_launcher_path(path)
        assert (verdict.ok, verdict.reason) == (False, Reason.NOT_ABSOLUTE), path


def test_non_utf8_directory_is_not_utf8(tmp_path: Path) -> None:
    directory = os.path.join(os.fsencode(tmp_path), b"bin-\xff")
    os.mkdir(directory, 0o755)
    binary = os.path.join(directory, b"codex")
    make_binary(binary)
    as_bytes = check_launcher_path(binary)
    as_text = check_launcher_path(os.fsdecode(binary))  # a str carrying a surrogate escape
    for verdict in (as_bytes, as_text):
        assert (verdict.ok, verdict.reason) == (False, Reason.NOT_UTF8)
        assert "bin-\\xff" in verdict.detail


def test_missing_and_dangling_are_not_found(tmp_path: Path) -> None:
    assert check_launcher_path(str(tmp_path / "nope")).reason is Reason.NOT_FOUND
    dangling = tmp_path / "codex"
    dangling.symlink_to(tmp_path / "gone" / "codex")
    verdict = check_launcher_path(str(dangling))
    assert verdict.reason is Reason.NOT_FOUND
    assert "dangling symlink" in verdict.detail
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert check_launcher_path(str(loop)).reason is Reason.NOT_FOUND


def test_directory_and_fifo_are_not_regular_files(tmp_path: Path) -> None:
    fifo = tmp_path / "codex-fifo"
    os.mkfifo(fifo, 0o755)
    for path in (tmp_path, fifo):
        assert check_launcher_path(str(path)).reason is Reason.NOT_REGULAR_FILE


def test_file_without_execute_bit_is_not_executable(bindir: Path) -> None:
    binary = make_binary(bindir / "codex", 0o644)
    verdict = check_launcher_path(str(binary))
    assert (verdict.reason, verdict.detail) == (
        Reason.NOT_EXECUTABLE,
        f"{binary} is not executable by this user",
    )


@pytest.mark.parametrize("mode", [0o777, 0o757, 0o775])
def test_binary_writable_by_others_or_group_is_unsafe(bindir: Path, mode: int) -> None:
    binary = make_binary(bindir / "codex", mode)
    verdict = check_launcher_path(str(binary))
    assert verdict.reason is Reason.UNSAFE_PERMISSIONS
    assert f"file {binary} is writable by" in verdict.detail


def test_binary_in_world_writable_non_sticky_directory_is_unsafe(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    binary = make_binary(shared / "codex")
    verdict = check_launcher_path(str(binary))
    assert verdict.reason is Reason.UNSAFE_PERMISSIONS
    assert verdict.detail == (
        f"directory {shared} is writable by others without the sticky bit (mode 0777)"
    )


def test_binary_in_sticky_world_writable_directory_passes(tmp_path: Path) -> None:
    shared = tmp_path / "sticky"
    shared.mkdir()
    shared.chmod(0o1777)
    assert check_launcher_path(str(make_binary(shared / "codex"))).ok


@as_root
def test_binary_owned_by_another_user_is_unsafe(bindir: Path) -> None:
    binary = make_binary(bindir / "codex")
    os.chown(binary, nobody(), -1)
    verdict = check_launcher_path(str(binary))
    assert verdict.reason is Reason.UNSAFE_PERMISSIONS
    assert verdict.detail == (
        f"{binary} is owned by uid {nobody()}, not by root or the current user"
    )


@as_root
def test_directory_owned_by_another_user_is_unsafe(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    binary = make_binary(theirs / "codex")
    os.chown(theirs, nobody(), -1)
    verdict = check_launcher_path(str(binary))
    assert verdict.reason is Reason.UNSAFE_PERMISSIONS
    assert str(theirs) in verdict.detail


def test_symlink_in_unsafe_directory_to_safe_binary_is_unsafe(tmp_path: Path, bindir: Path) -> None:
    binary = make_binary(bindir / "codex")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    link = shared / "codex"
    link.symlink_to(binary)
    verdict = check_launcher_path(str(link))
    assert verdict.reason is Reason.UNSAFE_PERMISSIONS
    assert f"directory {shared} " in verdict.detail


def test_safe_symlink_chain_to_binary_in_unsafe_directory_is_unsafe(
    tmp_path: Path, bindir: Path
) -> None:
    shared = tmp_path / "lib" / "shared"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    binary = make_binary(shared / "codex-native")
    hop = bindir / "hop"
    hop.symlink_to(os.path.relpath(binary, bindir))
    link = bindir / "codex"
    link.symlink_to("hop")
    verdict = check_launcher_path(str(link))
    assert verdict.reason is Reason.UNSAFE_PERMISSIONS
    assert f"directory {shared} " in verdict.detail


def test_relative_symlink_chain_with_dotdot_passes(tmp_path: Path, bindir: Path) -> None:
    native = tmp_path / "pkg" / "vendor" / "bin"
    native.mkdir(parents=True)
    make_binary(native / "codex")
    (bindir / "codex").symlink_to("../pkg/vendor/../vendor/bin/codex")
    assert check_launcher_path(str(bindir / "codex")).ok


@as_root
def test_foreign_symlink_in_shared_sticky_directory_is_unsafe(tmp_path: Path, bindir: Path) -> None:
    binary = make_binary(bindir / "codex")
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    link = sticky / "codex"
    link.symlink_to(binary)
    assert check_launcher_path(str(link)).ok
    os.lchown(link, nobody(), -1)
    verdict = check_launcher_path(str(link))
    assert verdict.reason is Reason.UNSAFE_PERMISSIONS
    assert f"symlink {link} is owned by uid {nobody()}" in verdict.detail


def test_require_launcher_path_returns_text_or_raises(bindir: Path) -> None:
    binary = make_binary(bindir / "codex")
    assert require_launcher_path(os.fsencode(binary)) == str(binary)
    assert require_launcher_path(str(binary)) == str(binary)
    with pytest.raises(PathRejected) as raised:
        require_launcher_path("codex")
    assert isinstance(raised.value, InputRejected)
    assert raised.value.exit_code is ExitCode.REFUSED
    assert raised.value.verdict.reason is Reason.NOT_ABSOLUTE
    assert str(raised.value) == "not_absolute: 'codex' is not absolute"


@pytest.mark.parametrize("path", ["/\ud800", "/bin/\ud800/codex", "/a\udcff\ud800"])
def test_lone_surrogates_are_not_utf8(path: str) -> None:
    """A str no file name can be (a lone surrogate, from JSON say) is reported, not raised."""
    verdict = check_launcher_path(path)
    assert (verdict.ok, verdict.reason) == (False, Reason.NOT_UTF8)
    assert "\\ud800" in verdict.detail
    with pytest.raises(PathRejected):
        require_launcher_path(path)


def test_printable_accepts_any_str() -> None:
    assert printable("/a\ud800b\udcffc") == "/a\\ud800b\\xffc"
    assert printable(b"/a\xffb") == "/a\\xffb"


@pytest.mark.skipif(os.geteuid() != 0, reason="root's execute rule")
def test_root_may_execute_a_file_with_any_x_bit(bindir: Path) -> None:
    assert check_launcher_path(str(make_binary(bindir / "codex", 0o610))).ok
    verdict = check_launcher_path(str(make_binary(bindir / "other", 0o600)))
    assert verdict.reason is Reason.NOT_EXECUTABLE
