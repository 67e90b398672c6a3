"""The in-process memory front: verdict records by path as found, and their decisions.

A hit is a dictionary lookup, a clock reading and the ``lstat`` replay of the record's
fingerprint: the replay proves the path rules still pass and the binary is the one that
was verified, so nothing is read, resolved or created. Entries are dropped after
``MEMORY_TTL`` seconds (so another process's ``cache clear`` is seen within that time)
and the oldest go first beyond ``maxsize``. Thread-safe: readers take no lock (one dict
lookup is atomic); writers do.
"""

from __future__ import annotations

import time
from _thread import allocate_lock  # threading's Lock, without importing threading

from launcher_probe.host.decision import Published

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

    from launcher_probe.host.cache.record import Lifetimes
    from launcher_probe.host.cache.store import CacheRecord

#: How long the memory front keeps a record before reading the disk again.
MEMORY_TTL = 60.0


class _Entry:
    __slots__ = ("decisions", "fresh_until", "record")

    def __init__(self, record: CacheRecord, fresh_until: float) -> None:
        self.record = record
        self.fresh_until = fresh_until
        #: The Published decision per discovery source, made on first use.
        self.decisions: dict[str, Published] = {}


class MemoryFront:
    """Records by path as found, each for ``ttl`` seconds at most."""

    def __init__(self, maxsize: int = 256, ttl: float = MEMORY_TTL) -> None:
        self._entries: dict[str, _Entry] = {}
        self._lock = allocate_lock()
        self._maxsize = maxsize
        self._ttl = ttl

    def get(self, path: str) -> CacheRecord | None:
        """The record remembered for ``path``, if it is not too old to trust."""
        entry = self._entries.get(path)
        if entry is None or entry.fresh_until <= time.monotonic():
            return None
        return entry.record

    def put(self, record: CacheRecord) -> None:
        """Remember ``record`` (replacing any for its path) when its fingerprint passes the
        path rules; a record that does not is never served from memory."""
        if not record.fingerprint.verdict().ok:
            return
        with self._lock:
            self._entries.pop(record.path, None)
            while len(self._entries) >= self._maxsize:
                del self._entries[next(iter(self._entries))]
            self._entries[record.path] = _Entry(record, time.monotonic() + self._ttl)

    def forget(self, path: str | None = None) -> None:
        """Drop the record for ``path``, or every record."""
        with self._lock:
            if path is None:
                self._entries.clear()
            else:
                self._entries.pop(path, None)

    def published(
        self, source: str, path: str, clock: Callable[[], float], lifetimes: Lifetimes
    ) -> Published | None:
        """The Published decision for ``path`` found through ``source`` when a passed
        verdict is remembered, still fresh by ``clock``, and its fingerprint still matches
        the disk; None otherwise (then resolve the slow way). As for a record on disk
        (``VerdictCache.published``), only a path that leads to the native binary by
        symlinks alone: behind a shim, dispatcher or wrapper the binary depends on files
        and variables the walk does not cover, so discovery decides again."""
        entry = self._entries.get(path)
        if entry is None or entry.fresh_until <= time.monotonic():
            return None
        record = entry.record
        if record.fingerprint.end != record.fingerprint.native:
            return None
        if not lifetimes.publishable(record, clock()):
            return None
        decision = entry.decisions.get(source)
        if decision is None:
            decision = entry.decisions[source] = record.published(source)
        return decision


#: The process-wide memory front.
MEMORY = MemoryFront()
