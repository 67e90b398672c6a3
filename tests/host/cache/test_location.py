"""The cache root's SHA-256 without OpenSSL is hashlib's; a root through a magic link is
refused (``tests/test_xdg_dirs.py``: the root without platformdirs is platformdirs' own)."""

from __future__ import annotations

import hashlib

import pytest

from launcher_probe.host.cache.location import cache_root, sha256_hex


@pytest.mark.parametrize(
    "data",
    [b"", b"abc", "/usr/bin/codex\udcff".encode("utf-8", "surrogatepass"), bytes(range(256))],
)
def test_the_builtin_sha256_is_hashlibs(data: bytes) -> None:
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    "given",
    ["/proc/self/cwd", "/proc/self/cwd/cache", "/proc/self/root/tmp", "/proc/thread-self/cwd"],
)
def test_a_cache_dir_through_a_procfs_magic_link_is_refused_like_a_relative_one(
    monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    from launcher_probe.host.cache.location import CacheUnavailable

    monkeypatch.setenv("LAUNCHER_PROBE_CACHE_DIR", given)
    with pytest.raises(CacheUnavailable, match="procfs magic link"):
        cache_root()


def test_a_cache_dir_through_ordinary_symlinks_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for given in (str(tmp_path / "link" / "cache"), str(tmp_path / "missing" / "cache")):
        monkeypatch.setenv("LAUNCHER_PROBE_CACHE_DIR", given)
        assert cache_root() == given
