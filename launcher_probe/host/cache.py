"""The per-host verdict cache: memory in front of disk, file-locked, distrusted on read.

Layout: ``<root>/v1/<host-id>/<sha256 of the path as found>.json`` with a ``.lock`` beside
each record; ``<root>`` is ``$LAUNCHER_PROBE_CACHE_DIR`` or platformdirs' user cache dir.
A record is only ever used when its fingerprint equals the file's fingerprint now and it
has not expired; anything odd about it is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from launcher_probe import __version__
from launcher_probe.errors import InputRejected, LauncherProbeError
from launcher_probe.host.fingerprint import Fingerprint
from launcher_probe.host.hostid import host_id
from launcher_probe.host.probe_result import PROBE_PROTOCOL_VERSION, ProbeResult

if TYPE_CHECKING:
    from cachetools import TTLCache

#: Environment variable that overrides the cache root.
CACHE_DIR_ENV = "LAUNCHER_PROBE_CACHE_DIR"
#: Version of the record format and of the directory layout (``v1``).
SCHEMA_VERSION = 1
LAYOUT = "v1"
DEFAULT_LOCK_TIMEOUT = 30.0
#: How long the in-process memory front keeps a record before reading the disk again.
MEMORY_TTL = 60.0
#: A record larger than this is not a record.
MAX_RECORD_BYTES = 1 << 20


class CacheUnavailable(InputRejected):
    """The cache directory cannot be created or is not trustworthy; resolve without it."""


class LockTimeout(LauncherProbeError):
    """Another process held an entry's lock past the timeout."""

    def __init__(self, lock_file: Path, waited: float) -> None:
        super().__init__(
            f"lock file {lock_file} still held by another process or thread "
            f"after waiting {waited:.1f} s"
        )
        self.lock_file = lock_file
        self.waited = waited


@dataclass(frozen=True, slots=True)
class Lifetimes:
    """How long a verdict may be used, in seconds, by kind of verdict."""

    passed: float = 24 * 3600.0
    permanent_failure: float = 3600.0
    transient_failure: float = 30.0

    def of(self, result: ProbeResult) -> float:
        """The lifetime of ``result``."""
        if result.ok:
            return self.passed
        return self.transient_failure if result.transient else self.permanent_failure


@dataclass(frozen=True, slots=True)
class CacheRecord:
    """One cached verdict, bound to this host, the path as found and its fingerprint."""

    host_id: str
    path: str
    fingerprint: Fingerprint
    result: ProbeResult
    probed_at: float
    expires_at: float
    launcher_probe_version: str = __version__
    probe_protocol: int = PROBE_PROTOCOL_VERSION

    def to_json(self) -> dict[str, Any]:
        """The on-disk form."""
        return {
            "schema": SCHEMA_VERSION,
            "launcher_probe_version": self.launcher_probe_version,
            "probe_protocol": self.probe_protocol,
            "host_id": self.host_id,
            "path": self.path,
            "fingerprint": self.fingerprint.to_json(),
            "result": self.result.to_json(),
            "probed_at": self.probed_at,
            "expires_at": self.expires_at,
        }

    @classmethod
    def from_json(cls, value: Any) -> CacheRecord:
        """Parse the on-disk form; ValueError (or TypeError, KeyError, OverflowError) on any
        deviation."""
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
        schema = value.get("schema")
        if type(schema) is not int or schema != SCHEMA_VERSION:
            raise ValueError(f"unknown schema {schema!r}")
        for name in ("host_id", "path", "launcher_probe_version"):
            if not isinstance(value.get(name), str):
                raise ValueError(f"{name} must be a string")
        for name in ("probed_at", "expires_at"):
            moment = value.get(name)
            if isinstance(moment, bool) or not isinstance(moment, int | float):
                raise ValueError(f"{name} must be a number")
            if not math.isfinite(moment):  # OverflowError for an int beyond any float
                raise ValueError(f"{name} must be a finite number")
        if type(value.get("probe_protocol")) is not int:
            raise ValueError("probe_protocol must be an integer")
        return cls(
            host_id=value["host_id"],
            path=value["path"],
            fingerprint=Fingerprint.from_json(value["fingerprint"]),
            result=ProbeResult.from_json(value["result"]),
            probed_at=float(value["probed_at"]),
            expires_at=float(value["expires_at"]),
            launcher_probe_version=value["launcher_probe_version"],
            probe_protocol=value["probe_protocol"],
        )

    def expired(self, now: float, lifetimes: Lifetimes) -> bool:
        """True when the verdict is past its lifetime (or from a future, or another probe)."""
        return not (
            self.probe_protocol == PROBE_PROTOCOL_VERSION
            and self.probed_at <= now < self.expires_at
            and now < self.probed_at + lifetimes.of(self.result)
        )

    def usable(self, fingerprint: Fingerprint, now: float, lifetimes: Lifetimes) -> bool:
        """True when this verdict still speaks for ``fingerprint`` at ``now``."""
        return self.fingerprint == fingerprint and not self.expired(now, lifetimes)

    def staleness(self, now: float, lifetimes: Lifetimes) -> str | None:
        """None when the verdict is fresh against the file now; otherwise why it is stale."""
        try:
            current = Fingerprint.of(self.path, self.fingerprint.native)
        except OSError as error:
            return f"file gone ({error.strerror})"
        if current != self.fingerprint:
            return "the binary changed"
        return "expired" if self.expired(now, lifetimes) else None


@dataclass(frozen=True, slots=True)
class CacheRead:
    """What one record file held: a trusted record, or why it was not trusted."""

    file: Path
    record: CacheRecord | None
    problem: str | None = None
    #: The problem is a security concern, worth a warning (foreign owner, writable by others).
    suspicious: bool = False


class MemoryFront:
    """The process-wide in-memory TTL cache in front of the disk (cachetools is not thread-safe)."""

    def __init__(self, maxsize: int = 256, ttl: float = MEMORY_TTL) -> None:
        from cachetools import TTLCache

        self._lock = threading.Lock()
        self._records: TTLCache[str, CacheRecord] = TTLCache(maxsize=maxsize, ttl=ttl)

    def get(self, key: str) -> CacheRecord | None:
        with self._lock:
            return self._records.get(key)

    def put(self, key: str, record: CacheRecord) -> None:
        with self._lock:
            self._records[key] = record

    def drop(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)


_MEMORY: MemoryFront | None = None
_MEMORY_LOCK = threading.Lock()


def memory_front() -> MemoryFront:
    """The process-wide memory front, created on first use."""
    global _MEMORY
    with _MEMORY_LOCK:
        if _MEMORY is None:
            _MEMORY = MemoryFront()
        return _MEMORY


def cache_root() -> Path:
    """``$LAUNCHER_PROBE_CACHE_DIR``, else platformdirs' user cache dir for launcher-probe.

    CacheUnavailable when the variable names a relative path (it would follow the cwd).
    """
    given = os.environ.get(CACHE_DIR_ENV)
    if given:
        if not os.path.isabs(given):
            raise CacheUnavailable(
                f"{CACHE_DIR_ENV}={given!r} is not an absolute path; cache not used"
            )
        return Path(given)
    import platformdirs

    return Path(platformdirs.user_cache_dir("launcher-probe", appauthor=False))


def _check_private(directory: Path, st: os.stat_result) -> None:
    if not stat.S_ISDIR(st.st_mode):
        raise CacheUnavailable(f"cache directory {directory} is not a directory; cache not used")
    if st.st_uid != os.geteuid():
        raise CacheUnavailable(
            f"cache directory {directory} is owned by uid {st.st_uid}, not the current user; "
            "cache not used"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheUnavailable(
            f"cache directory {directory} is writable by group or others "
            f"(mode {stat.S_IMODE(st.st_mode):04o}); cache not used"
        )


def _private_dirs(root: Path, *below: Path, create: bool) -> None:
    """Create (when asked) ``root`` and each directory below it, 0700, and verify that each
    one present is ours and not writable by others. ``root`` may be a symlink; the
    directories below it may not. CacheUnavailable otherwise."""
    for directory in (root, *below):
        try:
            if create:
                directory.mkdir(mode=0o700, parents=directory is root, exist_ok=True)
            st = os.stat(directory) if directory is root else os.lstat(directory)
        except OSError as error:
            if not create and isinstance(error, FileNotFoundError):
                return  # nothing cached yet
            raise CacheUnavailable(
                f"cache directory {directory} unusable ({error.strerror}); cache not used"
            ) from error
        _check_private(directory, st)


def _record_name(path: str) -> str:
    return hashlib.sha256(os.fsencode(path)).hexdigest()


class VerdictCache:
    """This host's records in one cache root. Thread-safe; every method is a short critical
    section on the filesystem or the memory front."""

    def __init__(
        self,
        root: Path | None = None,
        *,
        lifetimes: Lifetimes | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        clock: Callable[[], float] = time.time,
        memory: MemoryFront | None = None,
        create: bool = True,
    ) -> None:
        """Open (and with ``create``, make) the cache; CacheUnavailable when it is not ours.

        ``lock_timeout`` must be finite and positive: a lock wait always ends.
        """
        if not 0 < lock_timeout < math.inf:
            raise ValueError(f"lock_timeout must be finite and positive, not {lock_timeout!r}")
        self.root = cache_root() if root is None else root
        self.host_id = host_id()
        self.directory = self.root / LAYOUT / self.host_id
        self.lifetimes = lifetimes or Lifetimes()
        self.lock_timeout = lock_timeout
        self.clock = clock
        self.memory = memory
        _private_dirs(self.root, self.root / LAYOUT, self.directory, create=create)

    def record_file(self, path: str) -> Path:
        """Where the record for ``path`` (as found) lives."""
        return self.directory / f"{_record_name(path)}.json"

    def lock_file(self, path: str) -> Path:
        """The lock file guarding the record for ``path``."""
        return self.directory / f"{_record_name(path)}.lock"

    # --- reading -------------------------------------------------------------

    def read_file(self, file: Path) -> CacheRead:
        """Read one record file, trusting nothing: a bad record is a problem, never an error."""
        try:
            fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            return CacheRead(file, None)
        except OSError as error:
            return CacheRead(file, None, f"cannot open ({error.strerror})", suspicious=True)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return CacheRead(file, None, "not a regular file", suspicious=True)
            if st.st_uid != os.geteuid():
                problem = f"owned by uid {st.st_uid}, not the current user"
                return CacheRead(file, None, problem, suspicious=True)
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                problem = f"writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
                return CacheRead(file, None, problem, suspicious=True)
            with open(fd, "rb", closefd=False) as stream:
                data = stream.read(MAX_RECORD_BYTES + 1)
        except OSError as error:
            return CacheRead(file, None, f"cannot read ({error.strerror})")
        finally:
            os.close(fd)
        if len(data) > MAX_RECORD_BYTES:
            return CacheRead(file, None, f"larger than {MAX_RECORD_BYTES} bytes")
        try:
            record = CacheRecord.from_json(json.loads(data))
        except (ValueError, TypeError, KeyError, OverflowError, RecursionError) as error:
            return CacheRead(file, None, f"not a valid record ({error})")
        if record.host_id != self.host_id:
            return CacheRead(file, None, f"written by another host ({record.host_id})")
        if file.name != self.record_file(record.path).name:
            return CacheRead(file, None, f"a record for another path ({record.path})")
        return CacheRead(file, record)

    def lookup(
        self,
        fingerprint: Fingerprint,
        *,
        warnings: list[str],
        use_memory: bool = True,
        probed_since: float | None = None,
    ) -> CacheRecord | None:
        """A usable record for ``fingerprint``'s path, from memory or disk, or None.

        ``probed_since`` also requires the verdict to be at least that recent. Suspicious
        record files add a line to ``warnings``.
        """
        path = fingerprint.path
        file = self.record_file(path)
        now = self.clock()

        def fits(record: CacheRecord | None) -> bool:
            return (
                record is not None
                and record.usable(fingerprint, now, self.lifetimes)
                and (probed_since is None or record.probed_at >= probed_since)
            )

        if use_memory and self.memory is not None:
            remembered = self.memory.get(str(file))
            if fits(remembered):
                return remembered
        read = self.read_file(file)
        warning = f"cache record {file} ignored: {read.problem}"
        if read.suspicious and warning not in warnings:
            warnings.append(warning)
        if read.record is None or not fits(read.record):
            return None
        if self.memory is not None:
            self.memory.put(str(file), read.record)
        return read.record

    def records(self) -> list[CacheRead]:
        """Every record file of this host, read with the same distrust, sorted by file name."""
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return []
        return [self.read_file(self.directory / name) for name in names if name.endswith(".json")]

    def listing(self) -> dict[str, Any]:
        """``cache show --json``: every record, fresh or stale against the file now, and
        every file that is not a trusted record."""
        now = self.clock()
        records: list[dict[str, Any]] = []
        problems: list[dict[str, str]] = []
        for read in self.records():
            record = read.record
            if record is None:
                problems.append({"file": str(read.file), "problem": read.problem or "unreadable"})
                continue
            why = record.staleness(now, self.lifetimes)
            records.append(
                {
                    "file": str(read.file),
                    "path": record.path,
                    "native": record.fingerprint.native,
                    "ok": record.result.ok,
                    "reason": None if record.result.reason is None else str(record.result.reason),
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
            "directory": str(self.directory),
            "host_id": self.host_id,
            "records": records,
            "problems": problems,
        }

    # --- writing -------------------------------------------------------------

    def store(self, fingerprint: Fingerprint, result: ProbeResult, probed_at: float) -> CacheRecord:
        """Record ``result`` for ``fingerprint`` atomically (temp file, fsync, replace), 0600.

        OSError propagates; the caller decides whether a failed write matters.
        """
        record = CacheRecord(
            host_id=self.host_id,
            path=fingerprint.path,
            fingerprint=fingerprint,
            result=result,
            probed_at=probed_at,
            expires_at=probed_at + self.lifetimes.of(result),
        )
        import tempfile

        file = self.record_file(fingerprint.path)
        data = json.dumps(record.to_json(), indent=1).encode()
        fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".record-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as stream:
                os.fchmod(fd, 0o600)
                stream.write(data)
                stream.flush()
                os.fsync(fd)
            os.replace(temporary, file)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        if self.memory is not None:
            self.memory.put(str(file), record)
        return record

    def clear(self) -> int:
        """Remove this host's records (and forget them in memory); the number removed.

        An entry that cannot be removed (a directory in a record's place) is left and
        still shows in :meth:`listing`.
        """
        removed = 0
        for read in self.records():
            with contextlib.suppress(OSError):
                read.file.unlink()
                removed += 1
            if self.memory is not None:
                self.memory.drop(str(read.file))
        return removed

    # --- single flight -------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, path: str) -> Iterator[None]:
        """Hold the entry lock for ``path`` (threads and processes alike).

        LockTimeout when it stays held; CacheUnavailable when the lock file cannot be made.
        Each call opens its own lock (filelock locks are per instance and per thread), so
        two threads of one process exclude each other through the OS lock.
        """
        from filelock import FileLock, Timeout

        lock_file = self.lock_file(path)
        started = time.monotonic()
        lock = FileLock(lock_file, timeout=self.lock_timeout, mode=0o600)
        try:
            lock.acquire()
        except Timeout as error:
            raise LockTimeout(lock_file, time.monotonic() - started) from error
        except OSError as error:
            raise CacheUnavailable(
                f"lock file {lock_file} unusable ({error.strerror or error}); verdict not cached"
            ) from error
        try:
            yield
        finally:
            lock.release()
