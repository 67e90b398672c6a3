"""The cost of a store as the record directory grows: the sweep is one scan, run with a
chance inverse to the directory's size (``RecordStore.sweep_due``), so a store at 10,000
records should cost what it does at 100."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.core import Action, Env, Row, batched, interleaved_medians

if TYPE_CHECKING:
    from launcher_probe.host.cache.store import CacheRecord

#: Stores per sample.
STORES = 64
FEW, MANY = 100, 10_000


def _verdict(env: Env) -> CacheRecord:
    """The in-process cache's record of the real binary (resolved first when needed)."""
    from launcher_probe.host.cache.policy import VerdictCache
    from launcher_probe.host.resolver import resolve_launcher

    resolve_launcher(codex=env.codex)
    cache = VerdictCache()
    record = cache.disk.read(cache.record_file(env.codex)).record
    if record is None:
        raise SystemExit(f"no verdict for {env.codex} in the in-process cache")
    return record


def _storing(env: Env, count: int, record: CacheRecord) -> Action:
    """One store of ``record`` into a fresh cache root that holds ``count`` other record
    files (of paths that do not exist: what a sweep prunes, once it picks them)."""
    from launcher_probe.host.cache.policy import VerdictCache

    cache = VerdictCache(tempfile.mkdtemp(dir=env.scratch))
    cache.disk.check_directories(create=True)
    for index in range(count):
        file = Path(cache.record_file(f"/nonexistent/{index}/codex"))
        file.write_text("{}")
        file.chmod(0o600)
    return lambda: cache.store(record.fingerprint, record.result, record.probed_at)


def rows(env: Env, runs: int) -> list[Row]:
    """A store at ``MANY`` records against a store at ``FEW``, same run."""
    record = _verdict(env)
    actions = [batched(_storing(env, count, record), STORES) for count in (FEW, MANY)]
    few, many = (median / STORES for median in interleaved_medians(actions, runs))
    return [
        Row(
            f"store at {MANY:,} records",
            many,
            f"store at {FEW} records",
            few,
            1.25,
            note="the sweep: one scan, no sort, chance inverse to the size",
        )
    ]
