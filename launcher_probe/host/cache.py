"""The per-host verdict cache's policy: lifetimes, the memory front, lookups and locking.

Records live on disk (``cache_store.py``) with the process-wide memory front
(``memory.py``) before them. A record is only ever used when its fingerprint equals the
walk of the file now and it has not expired; anything odd about it is a miss with a
warning, never an error. Nothing is created until the first verdict is stored.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time

from launcher_probe.host.cache_store import (
    CacheRead,
    CacheRecord,
    CacheUnavailable,
    RecordStore,
)
from launcher_probe.host.decision import Published
from launcher_probe.host.fingerprint import Fingerprint
from launcher_probe.host.hostid import host_id
from launcher_probe.host.paths import check_launcher_path, printable
from launcher_probe.host.probe_result import PROBE_PROTOCOL_VERSION, ProbeResult
from launcher_probe.value import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from launcher_probe.host.herd import Claim
    from launcher_probe.host.memory import MemoryFront

__all__ = [
    "CACHE_DIR_ENV",
    "DEFAULT_LOCK_TIMEOUT",
    "CacheRead",
    "CacheRecord",
    "CacheUnavailable",
    "Lifetimes",
    "VerdictCache",
    "cache_root",
]

#: Environment variable that overrides the cache root.
CACHE_DIR_ENV = "LAUNCHER_PROBE_CACHE_DIR"
APP_NAME = "launcher-probe"
DEFAULT_LOCK_TIMEOUT = 30.0


class Lifetimes(Value):
    """How long a verdict may be used, in seconds, by kind of verdict."""

    __slots__ = ("passed", "permanent_failure", "transient_failure")
    passed: float
    permanent_failure: float
    transient_failure: float

    def __init__(
        self,
        passed: float = 24 * 3600.0,
        permanent_failure: float = 3600.0,
        transient_failure: float = 30.0,
    ) -> None:
        super().__init__(
            passed=passed, permanent_failure=permanent_failure, transient_failure=transient_failure
        )

    def of(self, result: ProbeResult) -> float:
        """The lifetime of ``result``."""
        if result.ok:
            return self.passed
        return self.transient_failure if result.transient else self.permanent_failure

    def fresh(self, record: CacheRecord, now: float) -> bool:
        """True when ``record`` may still be used at ``now``: of this probe protocol,
        probed no later than now, and within both its own expiry and these lifetimes."""
        return (
            record.probe_protocol == PROBE_PROTOCOL_VERSION
            and record.probed_at <= now < record.expires_at
            and now < record.probed_at + self.of(record.result)
        )

    def publishable(self, record: CacheRecord, now: float) -> bool:
        """True when ``record`` may be published as it is: a passed verdict, fresh at
        ``now``, whose fingerprint still matches the disk (one ``lstat`` per component)."""
        return record.result.ok and self.fresh(record, now) and record.fingerprint.still_matches()


def cache_root() -> str:
    """``$LAUNCHER_PROBE_CACHE_DIR``, else platformdirs' user cache dir for launcher-probe
    (see :func:`user_cache_dir`).

    CacheUnavailable when the variable names a relative path (it would follow the cwd).
    """
    given = os.environ.get(CACHE_DIR_ENV)
    if given:
        if not os.path.isabs(given):
            raise CacheUnavailable(
                f"{CACHE_DIR_ENV}={given!r} is not an absolute path; cache not used"
            )
        return given
    return user_cache_dir()


def user_cache_dir() -> str:
    """``platformdirs.user_cache_dir("launcher-probe", appauthor=False)``.

    On Linux, when ``$XDG_CACHE_HOME`` is absolute, or unset or empty with an absolute
    ``$HOME``, that is the XDG rule (``$XDG_CACHE_HOME/launcher-probe``, else
    ``$HOME/.cache/launcher-probe``), computed here: importing platformdirs (pathlib,
    tempfile, shutil, random...) would cost a warm CLI ``resolve`` more than all its work.
    The tests check the two agree. Anything else (no usable HOME, another OS, Android)
    is platformdirs' to answer.
    """
    android = hasattr(sys, "getandroidapilevel") or "ANDROID_ROOT" in os.environ
    if sys.platform == "linux" and not android:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        if os.path.isabs(xdg):
            return os.path.join(xdg, APP_NAME)
        if not xdg and os.path.isabs(os.environ.get("HOME", "")):
            return os.path.join(os.path.expanduser("~/.cache"), APP_NAME)
    import platformdirs

    return platformdirs.user_cache_dir(APP_NAME, appauthor=False)


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
        if not 0 < lock_timeout < math.inf:
            raise ValueError(f"lock_timeout must be finite and positive, not {lock_timeout!r}")
        self.disk = RecordStore(cache_root() if root is None else os.fspath(root), host_id())
        self.root = self.disk.root
        self.host_id = self.disk.host_id
        self.directory = self.disk.directory
        self.lifetimes = lifetimes or Lifetimes()
        self.lock_timeout = lock_timeout
        self.clock = clock
        self.memory = memory
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

    def published(self, source: str, path: str) -> Published | None:
        """The decision for the operator's ``path`` (found through ``source``) that its
        record on disk gives, without discovery: only when the record's walk leads from
        ``path`` to the native binary by symlinks alone (no shim, dispatcher or wrapper,
        whose target may depend on files and variables the walk does not cover), passes
        the path rules and :meth:`Lifetimes.publishable`. None otherwise: then resolve the
        slow way, which reads the record again and reports what is wrong with it."""
        record = self.disk.read(self.record_file(path)).record
        if record is None or record.path != path:
            return None
        fingerprint = record.fingerprint
        if fingerprint.end != fingerprint.native or not fingerprint.verdict().ok:
            return None
        if not self.lifetimes.publishable(record, self.clock()):
            return None
        if self.memory is not None:
            self.memory.put(record)
        return Published.of_record(record, source)

    def wait_turn(self, source: str, path: str) -> Published | Claim | None:
        """After :meth:`published` missed for the operator's ``path``: the decision another
        process's probe of it leaves on disk, once that process lets go (``herd.py``), or
        this process's Claim on the entry (resolve the slow way, then release it), or None
        (resolve the slow way). Only a path that passes the path rules is waited for:
        nothing is created for one that will not be probed."""
        if not check_launcher_path(path).ok:
            return None
        from launcher_probe.host.herd import wait_turn  # fcntl: a miss only

        try:
            self.disk.check_directories(create=True)
        except CacheUnavailable:
            return None
        return wait_turn(
            self.lock_file(path), self.lock_timeout, lambda: self.published(source, path)
        )

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

    @contextlib.contextmanager
    def locked(self, path: str) -> Iterator[None]:
        """Hold the entry lock for ``path`` (threads and processes alike), making the
        cache directories first. LockTimeout when it stays held; CacheUnavailable when
        the lock file cannot be made."""
        from launcher_probe.host.entry_lock import entry_lock  # threads: the slow path only

        self.disk.check_directories(create=True)
        with entry_lock(self.lock_file(path), self.lock_timeout):
            yield
