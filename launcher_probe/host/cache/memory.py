"""The in-process memory front: verdict records by path as found, and their decisions.

A hit is a lookup in a ``cachetools.TTLCache``, a clock reading and the ``lstat`` replay of
the record's fingerprint: the replay proves the path rules still pass and the binary is the
one that was verified, so nothing is read, resolved or created. Entries are dropped after
``MEMORY_TTL`` seconds (so another process's ``cache clear`` is seen within that time) and
the least recently used go first beyond ``maxsize``. Thread-safe: a TTLCache mutates on
read (expiry, recency), so every access holds the front's lock.

``cachetools`` is imported when the front is first read with something in it: until then
the first record waits in a slot of its own, so a one-shot process (a CLI ``resolve``,
which stores what it read from disk and exits) never imports it.
"""

from __future__ import annotations

import time
from _thread import allocate_lock  # threading's Lock, without importing threading

from launcher_probe.host.decision import Published

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

    from cachetools import TTLCache

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
    """Records by path as found, each for ``ttl`` seconds at most, ``maxsize`` of them."""

    def __init__(self, maxsize: int = 256, ttl: float = MEMORY_TTL) -> None:
        self._entries: TTLCache[str, _Entry] | None = None
        #: The first record stored, until the front is first read.
        self._waiting: _Entry | None = None
        self._lock = allocate_lock()
        self._maxsize = maxsize
        self._ttl = ttl

    def _entry(self, path: str) -> _Entry | None:
        """The live entry for ``path``, if any (the front's lock held)."""
        if self._waiting is not None:
            self._settle()
        if self._entries is None:
            return None
        try:  # subscription, not get(): that checks expiry twice (about 3 µs against 1)
            entry = self._entries[path]
        except KeyError:
            return None
        return None if entry.fresh_until <= time.monotonic() else entry

    def _settle(self) -> None:
        """Make the TTLCache and move the waiting record into it (the lock held)."""
        if self._entries is None:
            from cachetools import TTLCache

            self._entries = TTLCache(self._maxsize, self._ttl, timer=time.monotonic)
        waiting, self._waiting = self._waiting, None
        if waiting is not None and waiting.fresh_until > time.monotonic():
            self._entries[waiting.record.path] = waiting

    def get(self, path: str) -> CacheRecord | None:
        """The record remembered for ``path``, if it is not too old to trust."""
        with self._lock:
            entry = self._entry(path)
        return None if entry is None else entry.record

    def put(self, record: CacheRecord) -> None:
        """Remember ``record`` (replacing any for its path) when its fingerprint passes the
        path rules; a record that does not is never served from memory."""
        if not record.fingerprint.verdict().ok:
            return
        entry = _Entry(record, time.monotonic() + self._ttl)
        with self._lock:
            if self._entries is None and self._waiting is None:
                self._waiting = entry
                return
            self._settle()
            assert self._entries is not None
            self._entries[record.path] = entry

    def forget(self, path: str | None = None) -> None:
        """Drop the record for ``path``, or every record."""
        with self._lock:
            if path is None or (self._waiting and self._waiting.record.path == path):
                self._waiting = None
            if self._entries is not None:
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
        if self._entries is None and self._waiting is None:
            return None  # nothing remembered yet: not even the lock
        with self._lock:
            entry = self._entry(path)
        if entry is None:
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
