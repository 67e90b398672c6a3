"""The disk cache: location, modes, distrust on read, lifetimes, ``cache show|clear``."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import re
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from launcher_probe.contract import Reason
from launcher_probe.host.cache.location import host_id
from launcher_probe.host.cache.policy import CACHE_DIR_ENV, VerdictCache
from launcher_probe.host.cache.record import Lifetimes
from launcher_probe.host.decision import Published, Withheld
from launcher_probe.host.resolver import ResolverConfig, resolve_launcher
from tests.conftest import HostEnv, run_cli
from tests.fakes import FakeCodex, install_fake_codex

NOBODY = pwd.getpwnam("nobody").pw_uid


def resolve_json(env: dict[str, str], path: Path) -> tuple[int, dict[str, Any]]:
    done = run_cli("resolve", "--json", "--codex", str(path), env=env)
    return done.returncode, json.loads(done.stdout)


def record_file(host_env: HostEnv, path: Path) -> Path:
    """Where the record for ``path`` lives under the host_env's XDG cache dir."""
    return Path(VerdictCache(host_env.cache_dir / "launcher-probe").record_file(str(path)))


def test_location_and_modes(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    root = host_env.cache_dir / "launcher-probe"
    directory = root / "v2" / host_id()
    record = record_file(host_env, fake_codex.path)
    assert record.parent == directory
    assert record.name == f"{hashlib.sha256(bytes(fake_codex.path)).hexdigest()}.json"
    for path in (root, root / "v2", directory):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert stat.S_IMODE(record.with_suffix(".lock").stat().st_mode) == 0o600
    assert [p.name for p in directory.iterdir() if p.name.startswith(".")] == []  # no temp left
    saved = json.loads(record.read_text())
    assert saved["schema"] == 2
    assert (saved["host_id"], saved["path"]) == (host_id(), str(fake_codex.path))
    assert saved["probe_protocol"] == 1 and saved["result"]["ok"] is True
    assert saved["expires_at"] == pytest.approx(saved["probed_at"] + 24 * 3600)


def test_cache_dir_env_overrides_the_root(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    env = {**host_env.env, CACHE_DIR_ENV: str(tmp_path / "elsewhere")}
    assert resolve_json(env, fake_codex.path)[0] == 0
    assert list((tmp_path / "elsewhere" / "v2" / host_id()).glob("*.json"))
    assert not (host_env.cache_dir / "launcher-probe").exists()


def test_relative_cache_dir_is_not_used(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path
) -> None:
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    env = {**host_env.env, CACHE_DIR_ENV: "relative-cache"}
    done = run_cli("resolve", "--json", "--codex", str(fake_codex.path), env=env, cwd=workdir)
    assert done.returncode == 0, done.stderr
    (warning,) = json.loads(done.stdout)["warnings"]
    assert "relative-cache" in warning and "not an absolute path" in warning
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("problem", ["writable-by-others", "foreign-owner"])
def test_untrusted_cache_root_is_not_used(
    host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path, problem: str
) -> None:
    root = tmp_path / "shared-cache"
    root.mkdir()
    if problem == "writable-by-others":
        root.chmod(0o777)
    else:
        os.chown(root, NOBODY, -1)
    env = {**host_env.env, CACHE_DIR_ENV: str(root)}
    for expected_probes in (1, 2):
        code, decision = resolve_json(env, fake_codex.path)
        assert code == 0
        assert decision["from_cache"] is False
        (warning,) = decision["warnings"]
        assert str(root) in warning and "cache not used" in warning
        assert fake_codex.probe_count() == expected_probes
    assert list(root.iterdir()) == []
    done = run_cli("resolve", "--codex", str(fake_codex.path), env=env)
    assert done.returncode == 0
    assert "warning" in done.stderr and str(root) in done.stderr
    shown = run_cli("cache", "show", env=env)
    assert shown.returncode == 4 and str(root) in shown.stderr


# --- distrust on read --------------------------------------------------------


def _edit(field: str, value: Any) -> Callable[[Path], None]:
    def edit(record: Path) -> None:
        saved = json.loads(record.read_text())
        saved[field] = value
        record.write_text(json.dumps(saved))

    return edit


def _truncate(record: Path) -> None:
    data = record.read_bytes()
    record.write_bytes(data[: len(data) // 2])


def _garbage(record: Path) -> None:
    record.write_bytes(os.urandom(600))


def _deeply_nested(record: Path) -> None:
    record.write_text("[" * 200_000 + "]" * 200_000)


def _empty(record: Path) -> None:
    record.write_bytes(b"")


def _group_writable(record: Path) -> None:
    record.chmod(0o620)


def _foreign_owned(record: Path) -> None:
    os.chown(record, NOBODY, -1)


def _symlink(record: Path) -> None:
    decoy = record.with_name("decoy")
    decoy.write_bytes(record.read_bytes())
    record.unlink()
    os.symlink(decoy, record)


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "truncated": _truncate,
    "garbage": _garbage,
    "deeply-nested": _deeply_nested,
    "empty": _empty,
    "wrong-schema": _edit("schema", 99),
    "boolean-schema": _edit("schema", True),
    "infinite-expiry": _edit("expires_at", float("inf")),
    "huge-probed-at": _edit("probed_at", 10**400),
    "other-host": _edit("host_id", "0000000000000000"),
    "other-path": _edit("path", "/elsewhere/codex"),
    "lone-surrogate-path": _edit("path", "/\ud800/codex"),
    "wrong-fingerprint-shape": _edit("fingerprint", {"ino": 1}),
    "group-writable": _group_writable,
    "foreign-owned": _foreign_owned,
    "symlink": _symlink,
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_a_bad_record_is_a_miss_never_a_crash(
    host_env: HostEnv, fake_codex: FakeCodex, name: str
) -> None:
    assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    record = record_file(host_env, fake_codex.path)
    CORRUPTIONS[name](record)
    shown = run_cli("cache", "show", "--json", env=host_env.env)
    assert shown.returncode == 0, shown.stderr
    listing = json.loads(shown.stdout)
    assert [problem["file"] for problem in listing["problems"]] == [str(record)]
    assert listing["records"] == []

    code, decision = resolve_json(host_env.env, fake_codex.path)
    assert code == 0
    assert decision["launcher"] == {"codexExecutable": str(fake_codex.path)}
    assert decision["from_cache"] is False
    assert fake_codex.probe_count() == 2
    (warning,) = decision["warnings"]  # every record that is not trusted is said
    assert str(record) in warning and "ignored" in warning

    # the bad record was replaced by a good one
    st = os.lstat(record)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()
    assert stat.S_IMODE(st.st_mode) == 0o600
    code, decision = resolve_json(host_env.env, fake_codex.path)
    assert (code, decision["from_cache"], decision["warnings"]) == (0, True, [])
    assert fake_codex.probe_count() == 2


def test_a_failed_store_leaves_no_temporary_file(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    """A directory in the record's place: the write fails at ``os.replace``, the temporary
    file is removed, the launcher is still published, and ``cache clear`` does not crash."""
    record = record_file(host_env, fake_codex.path)
    record.mkdir(parents=True, mode=0o700)
    (record / "keep").write_text("")  # a non-empty directory cannot be replaced

    code, decision = resolve_json(host_env.env, fake_codex.path)
    assert code == 0 and decision["from_cache"] is False
    ignored, not_cached = decision["warnings"]
    assert str(record) in ignored and "not a regular file" in ignored
    assert not_cached.startswith("verdict not cached: ")
    assert sorted(p.name for p in record.parent.iterdir()) == [
        record.name,
        record.with_suffix(".lock").name,
    ]
    cleared = run_cli("cache", "clear", "--json", env=host_env.env)
    assert cleared.returncode == 0, cleared.stderr
    assert json.loads(cleared.stdout)["removed"] == 0
    assert record.is_dir()


def test_a_record_of_an_older_probe_protocol_is_probed_again(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    _edit("probe_protocol", 0)(record_file(host_env, fake_codex.path))
    assert resolve_json(host_env.env, fake_codex.path)[1]["from_cache"] is False
    assert fake_codex.probe_count() == 2


# --- lifetimes (a controllable clock) ---------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_transient_failure_is_retried_after_the_backoff(
    host_env: HostEnv, fake_codex: FakeCodex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A probe_timeout is stored under the default deadline or a longer one: 1 s stands
    # for it here, so that the hang costs 1 s, not 10.
    monkeypatch.setattr("launcher_probe.host.attempt.DEFAULT_TIMEOUT", 1.0)
    clock = Clock()
    config = ResolverConfig(lifetimes=Lifetimes(transient_failure=5.0), clock=clock)
    fake_codex.set_fault("hang")
    first = resolve_launcher(str(fake_codex.path), timeout=1.0, config=config)
    assert isinstance(first, Withheld) and first.reason is Reason.PROBE_TIMEOUT
    assert fake_codex.probe_count() == 1

    fake_codex.set_fault(None)
    clock.now += 4.0  # within the backoff: the cached transient failure stands
    second = resolve_launcher(str(fake_codex.path), config=config)
    assert isinstance(second, Withheld) and second.reason is Reason.PROBE_TIMEOUT
    assert "cached verdict" in second.detail
    assert fake_codex.probe_count() == 1

    clock.now += 2.0  # past the backoff
    third = resolve_launcher(str(fake_codex.path), config=config)
    assert isinstance(third, Published) and third.from_cache is False
    assert fake_codex.probe_count() == 2


def test_permanent_failure_is_kept_until_the_binary_changes(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    clock = Clock()
    config = ResolverConfig(clock=clock)
    fake_codex.set_fault("wrong_version")
    first = resolve_launcher(str(fake_codex.path), config=config)
    assert isinstance(first, Withheld) and first.reason is Reason.NOT_CODEX

    fake_codex.set_fault(None)  # the side file changed; the binary did not
    clock.now += 59 * 60.0  # far past a transient backoff, within the hour
    second = resolve_launcher(str(fake_codex.path), config=config)
    assert isinstance(second, Withheld) and second.reason is Reason.NOT_CODEX
    assert fake_codex.probe_count() == 1

    os.utime(fake_codex.path)  # the binary changed: probe now
    third = resolve_launcher(str(fake_codex.path), config=config)
    assert isinstance(third, Published) and third.from_cache is False
    assert fake_codex.probe_count() == 2


def test_permanent_failure_lasts_at_most_an_hour_and_a_pass_a_day(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    clock = Clock()
    config = ResolverConfig(clock=clock)
    fake_codex.set_fault("wrong_version")
    assert isinstance(resolve_launcher(str(fake_codex.path), config=config), Withheld)
    fake_codex.set_fault(None)
    clock.now += 3600.0
    assert isinstance(resolve_launcher(str(fake_codex.path), config=config), Published)
    assert fake_codex.probe_count() == 2
    clock.now += 24 * 3600.0 - 1
    assert isinstance(resolve_launcher(str(fake_codex.path), config=config), Published)
    assert fake_codex.probe_count() == 2
    clock.now += 1
    decision = resolve_launcher(str(fake_codex.path), config=config)
    assert isinstance(decision, Published) and decision.from_cache is False
    assert fake_codex.probe_count() == 3


def test_expired_record_on_disk_is_probed_again(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    """A fresh process honours ``expires_at`` written in the record."""
    assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    record = record_file(host_env, fake_codex.path)
    saved = json.loads(record.read_text())
    _edit("expires_at", saved["probed_at"])(record)
    assert resolve_json(host_env.env, fake_codex.path)[1]["from_cache"] is False
    assert fake_codex.probe_count() == 2


# --- cache show | clear ------------------------------------------------------


def test_cache_show_and_clear(host_env: HostEnv, fake_codex: FakeCodex, tmp_path: Path) -> None:
    empty = run_cli("cache", "show", "--json", env=host_env.env)
    assert empty.returncode == 0 and json.loads(empty.stdout)["records"] == []

    assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    listing = json.loads(run_cli("cache", "show", "--json", env=host_env.env).stdout)
    assert set(listing) == {"schema", "directory", "host_id", "records", "problems"}
    (entry,) = listing["records"]
    assert set(entry) == {
        "file",
        "path",
        "resolved",
        "ok",
        "reason",
        "detail",
        "transient",
        "version",
        "probed_at",
        "expires_at",
        "age",
        "state",
        "why",
        "bubblewrap",
    }
    assert (entry["path"], entry["ok"], entry["version"]) == (str(fake_codex.path), True, "0.169.0")
    assert (entry["state"], entry["why"]) == ("fresh", None)

    os.utime(fake_codex.path)
    (entry,) = json.loads(run_cli("cache", "show", "--json", env=host_env.env).stdout)["records"]
    assert (entry["state"], entry["why"]) == ("stale", "the binary changed")
    text = run_cli("cache", "show", env=host_env.env)
    assert "stale" in text.stdout and str(fake_codex.path) in text.stdout

    stray = Path(listing["directory"]) / ("0" * 64 + ".json")
    stray.write_text("not json")
    stray.chmod(0o600)
    problems = json.loads(run_cli("cache", "show", "--json", env=host_env.env).stdout)["problems"]
    assert [p["file"] for p in problems] == [str(stray)]

    cleared = run_cli("cache", "clear", "--json", env=host_env.env)
    assert cleared.returncode == 0
    assert json.loads(cleared.stdout) == {
        "schema": 1,
        "directory": listing["directory"],
        "removed": 2,
    }
    assert list(Path(listing["directory"]).glob("*.json")) == []
    assert resolve_json(host_env.env, fake_codex.path)[1]["from_cache"] is False


def test_cache_clear_keeps_other_hosts_records(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    other = host_env.cache_dir / "launcher-probe" / "v2" / "ffffffffffffffff"
    other.mkdir(mode=0o700)
    (other / "record.json").write_text("{}")
    done = run_cli("cache", "clear", env=host_env.env)
    assert done.returncode == 0 and "removed 1 record" in done.stdout
    assert (other / "record.json").exists()


def test_host_id_comes_from_the_host_name_and_machine_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launcher_probe.host.cache import location as hostid

    machine_id = tmp_path / "machine-id"
    machine_id.write_text("0123456789abcdef\n")
    monkeypatch.setattr(hostid, "MACHINE_ID_FILES", (str(tmp_path / "absent"), str(machine_id)))
    try:
        hostid.host_id.cache_clear()
        first = hostid.host_id()
        assert re.fullmatch(r"[0-9a-f]{16}", first)
        machine_id.write_text("fedcba9876543210\n")
        hostid.host_id.cache_clear()
        assert hostid.host_id() != first  # another machine, same host name

        monkeypatch.setattr(hostid, "MACHINE_ID_FILES", (str(tmp_path / "absent"),))
        hostid.host_id.cache_clear()
        fallback = hostid.host_id()
        hostid.host_id.cache_clear()
        assert hostid.host_id() == fallback  # stable without a machine id
        assert fallback != first
    finally:
        hostid.host_id.cache_clear()


# --- robustness: bad records, escaped output, leftovers, pruning --------------


def test_cache_clear_always_works_and_removes_writers_leftovers(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    """A record with a lone surrogate for a path (valid for json.loads), a writer's
    temporary file and garbage: ``cache show`` lists them as ignored, ``cache clear``
    removes them all, both exit 0."""
    assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    record = record_file(host_env, fake_codex.path)
    _edit("path", "/\ud800/codex")(record)
    temporary = record.parent / ".record-abandoned.tmp"
    temporary.write_text("{")
    for args in (("cache", "show"), ("cache", "show", "--json")):
        shown = run_cli(*args, env=host_env.env)
        assert (shown.returncode, shown.stderr) == (0, ""), shown.stderr
        assert str(record) in shown.stdout and "not a valid record" in shown.stdout
    cleared = run_cli("cache", "clear", "--json", env=host_env.env)
    assert cleared.returncode == 0, cleared.stderr
    assert json.loads(cleared.stdout)["removed"] == 1
    assert list(record.parent.iterdir()) == [], "the lock file goes too"


def test_cache_show_escapes_paths(host_env: HostEnv, tmp_path: Path) -> None:
    """A binary under a directory whose name holds a newline: its entry stays one line."""
    directory = tmp_path / "forged\nfresh     passed"
    directory.mkdir(mode=0o755)
    fake = install_fake_codex(directory)
    assert resolve_json(host_env.env, fake.path)[0] == 0
    shown = run_cli("cache", "show", env=host_env.env)
    assert shown.returncode == 0, shown.stderr
    _header, entry, bubblewrap = shown.stdout.splitlines()
    assert "forged\\nfresh" in entry and entry.startswith("fresh")
    assert bubblewrap.startswith("      bubblewrap: ")


def test_a_sweep_removes_stale_temporaries_and_records_of_gone_binaries(
    host_env: HostEnv, tmp_path: Path
) -> None:
    kept = install_fake_codex(_directory(tmp_path / "kept"))
    gone = install_fake_codex(_directory(tmp_path / "gone"))
    for fake in (kept, gone):
        assert resolve_json(host_env.env, fake.path)[0] == 0
    directory = record_file(host_env, kept.path).parent
    stale, live = directory / ".record-stale.tmp", directory / ".record-live.tmp"
    for temporary in (stale, live):
        temporary.write_text("{")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    gone.path.unlink()

    VerdictCache(host_env.cache_dir / "launcher-probe").disk.sweep()

    names = {p.name for p in directory.iterdir()}
    assert record_file(host_env, gone.path).name not in names
    assert {record_file(host_env, kept.path).name, live.name} <= names
    assert stale.name not in names


def _directory(path: Path) -> Path:
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    return path


def test_every_store_sweeps_a_small_directory(host_env: HostEnv, fake_codex: FakeCodex) -> None:
    """Up to ``SWEEP_BYTES`` of directory a store always sweeps; beyond, by chance only."""
    from launcher_probe.host.cache.store import SWEEP_BYTES

    assert resolve_json(host_env.env, fake_codex.path)[0] == 0
    disk = VerdictCache(host_env.cache_dir / "launcher-probe").disk
    assert os.lstat(disk.directory).st_size <= SWEEP_BYTES
    assert all(disk.sweep_due() for _ in range(100))
