"""The in-process memory front is a cachetools TTLCache: bounded, expiring, shared by
threads, and not imported at all by a process that never reads it."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from launcher_probe.host.cache.memory import MEMORY, MemoryFront
from launcher_probe.host.cache.policy import VerdictCache
from launcher_probe.host.cache.store import CacheRecord
from launcher_probe.host.decision import Published
from launcher_probe.host.resolver import resolve_launcher
from tests.conftest import HostEnv
from tests.fakes import FakeCodex, install_fake_codex


def _records(tmp_path: Path, count: int) -> list[CacheRecord]:
    """``count`` passed verdicts on disk, each of its own fake binary, read back."""
    for index in range(count):
        directory = tmp_path / f"bin{index}"
        directory.mkdir(mode=0o755)
        directory.chmod(0o755)
        fake = install_fake_codex(directory)
        assert isinstance(resolve_launcher(str(fake.path)), Published)
    records = [read.record for read in VerdictCache().records()]
    assert all(record is not None for record in records)
    return [record for record in records if record is not None]


def test_the_front_is_a_bounded_ttl_cache(
    host_env: HostEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = _records(tmp_path, 3)
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    front = MemoryFront(maxsize=2, ttl=60.0)
    for record in records:
        front.put(record)
    import cachetools

    assert isinstance(front._entries, cachetools.TTLCache)
    assert front.get(records[0].path) is None  # the least recently used went first
    assert [front.get(r.path) for r in records[1:]] == records[1:]
    now[0] += 59.0
    assert front.get(records[2].path) == records[2]
    now[0] += 1.0
    assert [front.get(r.path) for r in records] == [None, None, None]  # expired


def test_threads_share_the_front(host_env: HostEnv, tmp_path: Path) -> None:
    """TTLCache mutates on read: readers and writers of many threads hold its lock, and
    every read sees a record that was put."""
    records = _records(tmp_path, 4)
    front = MemoryFront(maxsize=3)
    barrier = threading.Barrier(8)
    seen: list[CacheRecord | None] = []

    def churn(offset: int) -> None:
        barrier.wait()
        for turn in range(2000):
            record = records[(turn + offset) % len(records)]
            front.put(record)
            seen.append(front.get(records[turn % len(records)].path))

    threads = [threading.Thread(target=churn, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(seen) == 8 * 2000
    assert {id(r) for r in seen if r is not None} <= {id(r) for r in records}


def test_an_in_process_hit_comes_from_the_ttl_cache(
    host_env: HostEnv, fake_codex: FakeCodex
) -> None:
    first = resolve_launcher(str(fake_codex.path))
    again = resolve_launcher(str(fake_codex.path))
    assert isinstance(first, Published) and isinstance(again, Published)
    assert again.from_cache and "cachetools" in sys.modules
    assert MEMORY.get(str(fake_codex.path)) is not None
    assert fake_codex.probe_count() == 1
