"""``cache clear``: lock files go too; a record it cannot remove is an error, not a success."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from launcher_probe.host.cache.entry_lock import entry_lock
from launcher_probe.host.cache.store import remove_unheld_lock
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex
from tests.host.cache.test_policy import record_file, resolve_json
from tests.host.cache.test_single_flight import CLAIM_NOW


@pytest.mark.parametrize("held_by", ["a prober", "a claim"])
def test_clear_removes_the_lock_files_no_one_holds(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path, held_by: str
) -> None:
    """A lock file held, by a probe (its ``flock``) or by the claim of the process resolving
    it (its ``lockf``: its herd waits on that file), is left; the others go."""
    links = []
    for number in range(3):
        (tmp_path / f"l{number}").mkdir()
        links.append(tmp_path / f"l{number}" / "codex")
        links[-1].symlink_to(fake_codex.path)
        assert resolve_json(host_env.env, links[-1])[0] == 0
    directory = record_file(host_env, links[0]).parent
    held = record_file(host_env, links[0]).with_suffix(".lock")
    fd = os.open(held, os.O_RDWR)
    if held_by == "a prober":
        fcntl.flock(fd, fcntl.LOCK_EX)  # a probe of links[0] is running
    else:
        fcntl.lockf(fd, fcntl.LOCK_EX)  # links[0] is being resolved: its herd waits
    try:
        cleared = run_cli("cache", "clear", "--json", env=host_env.env)
    finally:
        os.close(fd)
    assert cleared.returncode == 0, cleared.stderr
    assert json.loads(cleared.stdout)["removed"] == 3
    assert [p.name for p in directory.iterdir()] == [held.name], "only the held lock is left"


def test_clear_removes_a_symlink_in_a_lock_files_place(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    """No lock is taken through a symlink, so none is cached for that path while it is
    there (each resolve probes, with a warning); ``cache clear`` takes it away."""
    assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    lock = record_file(host_env, fake_codex.path).with_suffix(".lock")
    lock.unlink()
    lock.symlink_to(tmp_path / "elsewhere")
    record_file(host_env, fake_codex.path).unlink()
    for _ in range(2):
        assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    assert fake_codex.probe_count() == 3  # uncached while the symlink is there

    assert run_cli("cache", "clear", env=host_env.env).returncode == 0

    assert not os.path.lexists(lock)
    for _ in range(2):
        assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    assert fake_codex.probe_count() == 4  # cached again
    assert not (tmp_path / "elsewhere").exists()


def test_a_lock_removed_between_open_and_lock_is_opened_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A waiter that opened the lock file before ``cache clear`` removed it locks the file
    now at the path, so it excludes a process that comes after the removal."""
    lock_file = tmp_path / "entry.lock"
    real_flock = fcntl.flock
    removals: list[Path] = []

    def clear_first(fd: int, operation: int) -> None:
        if not removals:  # clear runs between this waiter's open and its lock
            removals.append(lock_file)
            remove_unheld_lock(str(lock_file))
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", clear_first)
    with entry_lock(str(lock_file), 5.0):
        monkeypatch.setattr(fcntl, "flock", real_flock)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)  # a later process's lock
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert removals == [lock_file]


@contextlib.contextmanager
def unremovable(record: Path) -> Iterator[None]:
    """``record`` cannot be unlinked: immutable as root, its directory read-only otherwise."""
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", str(record)], capture_output=True, check=False)
        if made.returncode != 0:
            pytest.skip(f"chattr +i: {made.stderr.decode().strip()}")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(record)], check=True)
    else:
        record.parent.chmod(0o500)
        try:
            yield
        finally:
            record.parent.chmod(0o700)


@pytest.mark.parametrize("as_json", [False, True])
def test_clear_that_cannot_remove_a_record_exits_4_naming_it(
    host_env: HostEnv, fake_codex: FakeCodex, as_json: bool
) -> None:
    assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    record = record_file(host_env, fake_codex.path)
    with unremovable(record):
        cleared = run_cli("cache", "clear", *(["--json"] if as_json else []), env=host_env.env)
    assert cleared.returncode == 4, cleared.stdout
    if as_json:
        assert json.loads(cleared.stdout)["error"]["reason"] == "cache_unavailable"
    assert str(record) in cleared.stdout + cleared.stderr
    assert "removed 0 record(s)" in cleared.stdout + cleared.stderr
    assert record.exists()


def test_a_sweep_leaves_the_lock_file_this_process_claims(host_env: HostEnv) -> None:
    """A plain resolve claims its environment's discovery (the memo's lock file) and, when
    it stores, may sweep that environment's memo, a day old (written before the Codex
    update that made it miss): the memo goes, its lock file stays, claimed still (a POSIX
    lock never conflicts within its process, and closing any descriptor of the file would
    end it), so that the herd waiting on it does not wake to discover, each, meanwhile."""
    from launcher_probe.host.cache import discovery_memo
    from launcher_probe.host.cache.herd import Claim
    from launcher_probe.host.cache.policy import VerdictCache
    from launcher_probe.host.cache.store import memo_lock_file

    cache = VerdictCache()
    cache.disk.check_directories(create=True)
    memo = Path(discovery_memo.memo_file(cache))
    memo.write_text("{}")  # no memo a replay takes: a miss
    claim = discovery_memo.wait_turn(cache)
    assert isinstance(claim, Claim)
    try:
        day_old = memo.stat().st_mtime - 2 * 24 * 3600
        os.utime(memo, (day_old, day_old))
        cache.disk.sweep()
        assert not memo.exists()
        lock_file = memo_lock_file(str(memo))
        assert os.path.exists(lock_file)
        other = subprocess.run(
            [sys.executable, "-c", CLAIM_NOW, lock_file], capture_output=True, text=True
        )
        assert other.returncode != 0 and "claimed" not in other.stdout  # still this one's
    finally:
        claim.release()
