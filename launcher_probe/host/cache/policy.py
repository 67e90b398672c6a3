"""The per-host verdict cache's policy: lifetimes, the memory front, lookups and locking.

Records live on disk (``cache_store.py``) with the process-wide memory front
(``memory.py``) before them. A record is only ever used when its fingerprint equals the
walk of the file now and it has not expired; anything odd about it is a miss with a
warning, never an error. Nothing is created until the first verdict is stored.
"""

from __future__ import annotations

import os
import time

from launcher_probe.host.cache.location import CACHE_DIR_ENV, cache_root, host_id
from launcher_probe.host.cache.record import Lifetimes
from launcher_probe.host.cache.store import (
    CacheRead,
    CacheRecord,
    CacheUnavailable,
    RecordStore,
)
from launcher_probe.host.paths.fingerprint import Fingerprint
from launcher_probe.host.paths.rules import check_launcher_path
from launcher_probe.host.probe_result import ProbeResult
from launcher_probe.json_output import printable
from launcher_probe.value import Value, finite

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from contextlib import AbstractContextManager
    from typing import Any

    from launcher_probe.host.cache.herd import Answer, Claim
    from launcher_probe.host.cache.memory import MemoryFront
    from launcher_probe.host.decision import Published

__all__ = [
    "CACHE_DIR_ENV",
    "DEFAULT_LOCK_TIMEOUT",
    "CacheRead",
    "CacheRecord",
    "CacheUnavailable",
    "Lifetimes",
    "ResolverConfig",
    "VerdictCache",
    "cache_root",
]

DEFAULT_LOCK_TIMEOUT = 30.0


class ResolverConfig(Value):
    """Where the cache lives and how long verdicts and lock waits last."""

    __slots__ = ("cache_dir", "lifetimes", "lock_timeout", "clock")
    #: None: ``$LAUNCHER_PROBE_CACHE_DIR`` or platformdirs' user cache dir.
    cache_dir: str | os.PathLike[str] | None
    lifetimes: Lifetimes
    lock_timeout: float
    #: Wall clock used for probed-at and expiry (tests pass their own).
    clock: Callable[[], float]

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        lifetimes: Lifetimes | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(
            cache_dir=cache_dir,
            lifetimes=Lifetimes() if lifetimes is None else lifetimes,
            lock_timeout=lock_timeout,
            clock=clock,
        )


def _shown_bubblewrap(result: ProbeResult) -> dict[str, str | None] | None:
    """The record's bubblewrap for a listing, its path shown with ``printable``."""
    if result.bubblewrap is None:
        return None
    shown = result.bubblewrap.to_json()
    return {**shown, "path": None if shown["path"] is None else printable(shown["path"])}


class VerdictCache:
    """This host's records in one cache root. Thread-safe; every method is a short critical
    section on the filesystem or the memory front."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        lifetimes: Lifetimes | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        clock: Callable[[], float] = time.time,
        memory: MemoryFront | None = None,
    ) -> None:
        """Open the cache (nothing is created); CacheUnavailable when a directory of it
        exists and is not ours. ``lock_timeout`` must be finite and positive."""
        if not (finite(lock_timeout) and lock_timeout > 0):
            raise ValueError(f"lock_timeout must be finite and positive, not {lock_timeout!r}")
        self.disk = RecordStore(cache_root() if root is None else os.fspath(root), host_id())
        self.root = self.disk.root
        self.host_id = self.disk.host_id
        self.directory = self.disk.directory
        self.lifetimes = lifetimes or Lifetimes()
        self.lock_timeout = lock_timeout
        self.clock = clock
        self.memory = memory
        #: How long this cache waited for each path's entry so far (seconds); None: before
        #: discovery named a path (``wait_for``).
        self._waited: dict[str | None, float] = {}
        self.disk.check_directories(create=False)

    def record_file(self, path: str) -> str:
        """Where the record for ``path`` (as found) lives."""
        return self.disk.record_file(path)

    def lock_file(self, path: str) -> str:
        """The lock file guarding the record for ``path``."""
        return self.disk.lock_file(path)

    def lookup(
        self,
        fingerprint: Fingerprint,
        *,
        warnings: list[str],
        use_memory: bool = True,
        probed_since: float | None = None,
    ) -> CacheRecord | None:
        """A usable record for ``fingerprint``'s path, from memory or disk, or None.

        ``probed_since`` also requires the verdict to be at least that recent. A record
        file that is not a trusted record adds a line to ``warnings``.
        """
        now = self.clock()

        def fits(record: CacheRecord | None) -> bool:
            return (
                record is not None
                and record.fingerprint == fingerprint
                and self.lifetimes.fresh(record, now)
                and (probed_since is None or record.probed_at >= probed_since)
            )

        if use_memory and self.memory is not None:
            remembered = self.memory.get(fingerprint.path)
            if fits(remembered):
                return remembered
        read = self.disk.read(self.record_file(fingerprint.path))
        if read.problem is not None:
            warning = f"cache record {read.file} ignored: {read.problem}"
            if warning not in warnings:
                warnings.append(warning)
        if not fits(read.record):
            return None
        assert read.record is not None
        if self.memory is not None:
            self.memory.put(read.record)
        return read.record

    def holds_verdict(self, path: str) -> bool:
        """Whether the record on disk for ``path`` (as found) holds a fresh verdict for the
        files now, passed or failed: then the slow path answers from it and probes nothing."""
        record = self.disk.read(self.record_file(path)).record
        return (
            record is not None
            and record.path == path
            and self.lifetimes.fresh(record, self.clock())
            and record.fingerprint.still_matches()
        )

    def published(self, source: str, path: str, *, behind: str | None = None) -> Published | None:
        """The decision for ``path`` (found through ``source``) that its record on disk
        gives, without discovery: only when the record's walk leads from ``path`` to the
        native binary by symlinks alone, or to ``behind`` (the binary the caller proved a
        shim, dispatcher or wrapper at ``path`` leads to now: the discovery memo's trace;
        without that proof their target may depend on files and variables the walk does
        not cover), passes the path rules and :meth:`Lifetimes.publishable`. None
        otherwise: then resolve the slow way, which reads the record again and reports
        what is wrong with it."""
        record = self.disk.read(self.record_file(path)).record
        if record is None or record.path != path:
            return None
        fingerprint = record.fingerprint
        if fingerprint.native not in (fingerprint.end, behind) or not fingerprint.verdict().ok:
            return None
        if not self.lifetimes.publishable(record, self.clock()):
            return None
        if self.memory is not None:
            self.memory.put(record)
        return record.published(source)

    def wait_turn(self, source: str, path: str) -> Published | Claim | None:
        """After :meth:`published` missed for the operator's ``path``: the decision another
        process's probe of it leaves on disk, once that process lets go (``herd.py``), or
        this process's Claim on the entry (resolve the slow way, then release it), or None
        (resolve the slow way). Only a path that passes the path rules is waited for:
        nothing is created for one that will not be probed."""
        if not check_launcher_path(path).ok:
            return None
        return self.wait_for(self.lock_file(path), lambda: self.published(source, path), path)

    def wait_for(
        self, lock_file: str, read_again: Callable[[], Answer | None], path: str | None = None
    ) -> Answer | Claim | None:
        """The herd's wait (``herd.wait_turn``) on the claim of ``lock_file`` in this cache's
        directory, made first: what ``read_again`` gives once another process's claim goes,
        or this process's Claim, or None (the directory or the file unusable, or the
        timeout passed). The time waited counts against the entry lock of ``path`` (of
        every path, for None: a claim taken before discovery named one)."""
        from launcher_probe.host.cache.herd import Claim, wait_turn  # fcntl: a miss only

        try:
            self.disk.check_directories(create=True)
        except CacheUnavailable:
            return None
        started = time.monotonic()
        turn = wait_turn(lock_file, self.lock_timeout, read_again)
        if not isinstance(turn, Claim):  # it waited: ``locked`` waits what is left
            self._waited[path] = time.monotonic() - started
        return turn

    def store(self, fingerprint: Fingerprint, result: ProbeResult, probed_at: float) -> CacheRecord:
        """Record ``result`` for ``fingerprint`` (atomically, 0600, directories made 0700 on
        the first store), then, when ``RecordStore.sweep_due``, tidy the directory (one
        bounded scan, ``RecordStore.sweep``). OSError or CacheUnavailable
        propagate; the caller decides whether a failed write matters."""
        record = CacheRecord(
            host_id=self.host_id,
            fingerprint=fingerprint,
            result=result,
            probed_at=probed_at,
            expires_at=probed_at + self.lifetimes.of(result),
        )
        self.disk.write(record)
        if self.memory is not None:
            self.memory.put(record)
        if self.disk.sweep_due():
            self.disk.sweep()
        return record

    def records(self) -> list[CacheRead]:
        """Every record file of this host, read with the same distrust, sorted by file name."""
        return [self.disk.read(file) for file in self.disk.record_files()]

    def clear(self) -> int:
        """Remove this host's record files, whatever they hold, and writers' temporary
        files; forget the memory front. The number of record files removed; an entry that
        cannot be removed (a directory in a record's place) is left."""
        if self.memory is not None:
            self.memory.forget()
        return self.disk.clear()

    def listing(self) -> dict[str, Any]:
        """``cache show --json``: every record, fresh or stale against the file now, and
        every file that is not a trusted record. Paths are shown with ``printable``."""
        now = self.clock()
        records: list[dict[str, Any]] = []
        problems: list[dict[str, str]] = []
        for read in self.records():
            record = read.record
            if record is None:
                problem = read.problem or "vanished while listed"
                problems.append({"file": printable(str(read.file)), "problem": problem})
                continue
            why = self.staleness(record, now)
            records.append(
                {
                    "file": printable(str(read.file)),
                    "path": printable(record.path),
                    "resolved": printable(record.fingerprint.native),
                    "ok": record.result.ok,
                    "reason": None if record.result.reason is None else str(record.result.reason),
                    "detail": printable(record.result.detail),
                    "transient": record.result.transient,
                    "version": record.result.version,
                    "probed_at": record.probed_at,
                    "expires_at": record.expires_at,
                    "age": now - record.probed_at,
                    "state": "fresh" if why is None else "stale",
                    "why": why,
                    "bubblewrap": _shown_bubblewrap(record.result),
                }
            )
        return {
            "directory": printable(str(self.directory)),
            "host_id": self.host_id,
            "records": records,
            "problems": problems,
        }

    def staleness(self, record: CacheRecord, now: float) -> str | None:
        """None when ``record`` is fresh against the files now; otherwise why it is stale."""
        if record.fingerprint.still_matches():
            return None if self.lifetimes.fresh(record, now) else "expired"
        try:
            current = Fingerprint.of(record.path, record.fingerprint.native)
        except OSError as error:
            return f"file gone ({error.strerror})"
        if current.hops() != record.fingerprint.hops():
            return "the binary changed"
        return "a directory on its path changed (owner or mode)"

    def locked(self, path: str) -> AbstractContextManager[None]:
        """The entry lock for ``path`` (threads and processes alike), held by a ``with``
        block, the cache directories made first. LockTimeout when it stays held past what
        is left of the lock timeout: one timeout for every wait of this cache for the
        entry (:meth:`wait_for`'s for a prober, this lock's, a retry's); CacheUnavailable
        when the directories or the lock file cannot be made."""
        import contextlib  # the slow path only, as the lock

        from launcher_probe.host.cache.entry_lock import entry_lock  # threads too

        self.disk.check_directories(create=True)
        waited = self._waited.get(path, self._waited.get(None, 0.0))

        @contextlib.contextmanager
        def held() -> Iterator[None]:
            started = time.monotonic()
            with entry_lock(self.lock_file(path), self.lock_timeout, waited=waited):
                self._waited[path] = waited + time.monotonic() - started
                yield

        return held()
