"""Verdict records on disk: one file per path as found, replaced atomically, distrusted on read.

Layout: ``<root>/v2/<host-id>/<sha256 of the path as found>.json``. Nothing here decides
whether a record may be used (see ``cache.py``); this module only promises that what it
hands back was read from a private, regular, well-formed file of this host.
"""

from __future__ import annotations

import os
import stat
import time

from launcher_probe.host.cache.location import CacheUnavailable as CacheUnavailable  # re-exported
from launcher_probe.host.cache.location import sha256_hex
from launcher_probe.host.cache.record import CacheRecord as CacheRecord  # re-exported
from launcher_probe.json_core import dumps, loads
from launcher_probe.json_output import printable
from launcher_probe.value import Value

#: The directory layout, versioned with the record format (``cache_record.SCHEMA_VERSION``).
LAYOUT = "v2"
#: A record larger than this is not a record.
MAX_RECORD_BYTES = 1 << 20
#: A writer's temporary file this old was left by a writer that died (a store takes ms).
STALE_TEMPORARY_SECONDS = 600.0
#: A discovery memo not written for this long is removed by a sweep: a hit does not write
#: it, and an environment still in use writes it again at its next full discovery (at the
#: latest once the verdict it rests on expires: a passed one lives a day). So environments
#: that come and go (a directory of each session's own on ``PATH``) leave no memo for long.
STALE_MEMO_SECONDS = 24 * 3600.0
#: Record files looked at per sweep for binaries that are gone.
PRUNE_BATCH = 8
#: The directory size (``st_size``) up to which every store sweeps (``sweep_due``).
SWEEP_BYTES = 32 * 1024
#: A writer's temporary file (a record's or a memo's) is named ``.record-*.tmp``.
TEMPORARY_PREFIX, TEMPORARY_SUFFIX = ".record-", ".tmp"
#: The discovery memos' file names end so (``discovery_memo.py``).
MEMO_SUFFIX = ".memo"
#: A lock file (a record's, or a memo's: the claim of its environment's discovery) is named
#: as what it guards, with this suffix.
LOCK_SUFFIX = ".lock"


class CacheRead(Value):
    """What one record file held: a trusted record, or why it was not trusted."""

    __slots__ = ("file", "record", "problem")
    file: str
    record: CacheRecord | None
    problem: str | None

    def __init__(self, file: str, record: CacheRecord | None, problem: str | None = None) -> None:
        super().__init__(file=file, record=record, problem=problem)


def record_name(path: str) -> str:
    """The file name stem of the record for ``path`` (any ``str``, lone surrogates too)."""
    return sha256_hex(path.encode("utf-8", "surrogatepass"))


class RecordStore:
    """The record files of one host in one cache root (a path, as ``str``)."""

    def __init__(self, root: str, host_id: str) -> None:
        self.root = root
        self.host_id = host_id
        self.directory = os.path.join(root, LAYOUT, host_id)

    def record_file(self, path: str) -> str:
        """Where the record for ``path`` (as found) lives."""
        return os.path.join(self.directory, f"{record_name(path)}.json")

    def lock_file(self, path: str) -> str:
        """The lock file guarding the record for ``path``."""
        return os.path.join(self.directory, f"{record_name(path)}{LOCK_SUFFIX}")

    def check_directories(self, *, create: bool) -> None:
        """Verify (and with ``create``, first make, 0700) the root, ``v2`` and host
        directories: each present must be ours and not writable by others; ``root`` may
        be a symlink, the ones below it may not. CacheUnavailable otherwise."""
        for directory in (self.root, os.path.join(self.root, LAYOUT), self.directory):
            try:
                if create:
                    _make_directory(directory, parents=directory is self.root)
                st = os.stat(directory) if directory is self.root else os.lstat(directory)
            except OSError as error:
                if not create and isinstance(error, FileNotFoundError):
                    return  # nothing stored yet
                raise CacheUnavailable(
                    f"cache directory {directory} unusable ({error.strerror}); cache not used"
                ) from error
            _check_private(directory, st)

    def read(self, file: str) -> CacheRead:
        """Read one record file, trusting nothing: a bad record is a problem, never an error."""
        try:
            fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            return CacheRead(file, None)
        except OSError as error:
            return CacheRead(file, None, f"cannot open ({error.strerror})")
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return CacheRead(file, None, "not a regular file")
            if st.st_uid != os.geteuid():
                return CacheRead(file, None, f"owned by uid {st.st_uid}, not the current user")
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                problem = f"writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
                return CacheRead(file, None, problem)
            with open(fd, "rb", closefd=False) as stream:
                data = stream.read(MAX_RECORD_BYTES + 1)
        except OSError as error:
            return CacheRead(file, None, f"cannot read ({error.strerror})")
        finally:
            os.close(fd)
        if len(data) > MAX_RECORD_BYTES:
            return CacheRead(file, None, f"larger than {MAX_RECORD_BYTES} bytes")
        try:
            record = CacheRecord.from_json(loads(data.decode("utf-8")))
        except (ValueError, TypeError, KeyError, OverflowError, RecursionError) as error:
            return CacheRead(file, None, f"not a valid record ({printable(str(error))})")
        if record.host_id != self.host_id:
            return CacheRead(file, None, f"written by another host ({record.host_id})")
        if os.path.basename(file) != f"{record_name(record.path)}.json":
            return CacheRead(file, None, f"a record for another path ({record.path})")
        return CacheRead(file, record)

    def record_files(self) -> list[str]:
        """Every ``*.json`` entry of this host's directory, sorted by name."""
        return self._entries(".json")

    def _entries(self, suffix: str) -> list[str]:
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return []
        return [os.path.join(self.directory, name) for name in names if name.endswith(suffix)]

    def write(self, record: CacheRecord) -> str:
        """Store ``record`` atomically (temporary file, fsync, replace), 0600, making the
        directories first when needed. OSError or CacheUnavailable propagate."""
        import contextlib
        import tempfile

        self.check_directories(create=True)
        file = self.record_file(record.path)
        data = dumps(record.to_json()).encode()
        fd, temporary = tempfile.mkstemp(
            dir=self.directory, prefix=TEMPORARY_PREFIX, suffix=TEMPORARY_SUFFIX
        )
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
        return file

    def remove(self, file: str) -> bool:
        """Unlink ``file`` unless it is a directory; True when it was removed."""
        try:
            return _unlink_unless_directory(file)
        except OSError:
            return False

    def clear(self) -> int:
        """Remove every record file, trusted or not, every writer's temporary file, every
        discovery memo and every lock file no one holds, reading none of them; the number
        of record files removed. A directory in a record's place is left. CacheUnavailable,
        once all else is removed, when a record file cannot be removed (it would stay in
        use)."""
        removed, failed = 0, []
        try:
            for file in self.record_files():
                try:
                    removed += _unlink_unless_directory(file)
                except OSError as error:
                    failed.append(f"{printable(file)} ({error.strerror or error})")
            for file in (*self._temporaries(), *self._entries(MEMO_SUFFIX)):
                self.remove(file)
            for file in self._entries(LOCK_SUFFIX):
                remove_unheld_lock(file)
        except OSError as error:  # the directory itself cannot be listed
            failed.append(f"{printable(self.directory)} ({error.strerror or error})")
        if failed:
            raise CacheUnavailable(
                f"removed {removed} record(s); cannot remove {len(failed)}: "
                + ", ".join(failed[:3])
                + (", ..." if len(failed) > 3 else "")
            )
        return removed

    def sweep_due(self) -> bool:
        """Whether this store should sweep: always while the directory is small, then with
        a chance inversely proportional to its size (``SWEEP_BYTES / st_size``; a
        directory's size grows with its entries on every common filesystem), so that the
        scan's expected cost per store stays flat however many records there are."""
        try:
            size = os.lstat(self.directory).st_size
        except OSError:
            return False
        chance = int.from_bytes(os.urandom(4), "big") / (1 << 32)
        return size <= SWEEP_BYTES or chance < SWEEP_BYTES / size

    def sweep(self, now: float | None = None) -> None:
        """Bounded housekeeping, never failing, in one scan of the directory (no sort, no
        list of it kept): remove writers' temporary files older than
        ``STALE_TEMPORARY_SECONDS``, discovery memos older than ``STALE_MEMO_SECONDS`` (with
        their lock files, unless held) and
        the records, among up to ``PRUNE_BATCH`` picked at random, of binaries that are
        gone (their path as found no longer exists)."""
        import contextlib
        import math
        import random  # a store: the slow path

        draw = random.SystemRandom()  # a few dozen numbers per sweep

        def unit() -> float:  # uniform in the open interval (0, 1): its log is finite
            return (draw.getrandbits(53) + 1) / ((1 << 53) + 2)

        def skip(weight: float) -> int:
            return int(math.log(unit()) / math.log(1.0 - weight))

        now = time.time() if now is None else now
        picked: list[str] = []
        # Reservoir sampling with skips (Li's algorithm L): a few random numbers per
        # sweep, not one per record, so the scan's cost is the directory's listing alone.
        weight = math.exp(math.log(unit()) / PRUNE_BATCH)
        take, seen = PRUNE_BATCH + skip(weight), 0
        with contextlib.suppress(OSError), os.scandir(self.directory) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(".json"):
                    if seen < PRUNE_BATCH:
                        picked.append(entry.path)
                    elif seen == take:
                        picked[draw.randrange(PRUNE_BATCH)] = entry.path
                        weight *= math.exp(math.log(unit()) / PRUNE_BATCH)
                        take = seen + 1 + skip(weight)
                    seen += 1
                elif (oldest := _kept_for(name)) is not None:
                    with contextlib.suppress(OSError):
                        if now - entry.stat(follow_symlinks=False).st_mtime > oldest:
                            self.remove(entry.path)
                            if name.endswith(MEMO_SUFFIX):
                                remove_unheld_lock(memo_lock_file(entry.path))
        for file in picked:
            record = self.read(file).record
            if record is not None and not os.path.lexists(record.path):
                self.remove(file)
                remove_unheld_lock(self.lock_file(record.path))

    def _temporaries(self) -> list[str]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        return [
            os.path.join(self.directory, name)
            for name in names
            if name.startswith(TEMPORARY_PREFIX) and name.endswith(TEMPORARY_SUFFIX)
        ]


def memo_lock_file(memo: str) -> str:
    """The lock file of the discovery memo ``memo`` (its claim, ``herd.py``)."""
    return memo.removesuffix(MEMO_SUFFIX) + LOCK_SUFFIX


def _kept_for(name: str) -> float | None:
    """How old the file ``name`` may be before a sweep removes it (a writer's temporary
    file, a discovery memo), or None when its age decides nothing."""
    if name.startswith(TEMPORARY_PREFIX) and name.endswith(TEMPORARY_SUFFIX):
        return STALE_TEMPORARY_SECONDS
    if name.endswith(MEMO_SUFFIX):
        return STALE_MEMO_SECONDS
    return None


def _unlink_unless_directory(file: str) -> bool:
    """Unlink ``file`` unless it is a directory (or gone); True when it was removed."""
    try:
        if stat.S_ISDIR(os.lstat(file).st_mode):
            return False
        os.unlink(file)
    except FileNotFoundError:
        return False
    return True


def remove_unheld_lock(file: str) -> None:
    """Unlink the lock file ``file`` while holding its lock and its claim (``herd.py``),
    unless another process holds either, or this one its claim (or it is a directory);
    never fails. A symlink in its place (no lock is ever taken through one: caching that
    path stays off while it is there) is unlinked as it is. A waiter that opened it before
    checks, once it holds the lock, that the file is still the one at the path
    (``entry_lock``); a claim taken on an unlinked file is only lost, which costs its
    waiters a slow path, never a second probe."""
    import contextlib
    import fcntl  # ``cache clear`` only

    from launcher_probe.host.cache.herd import claimed_here

    with contextlib.suppress(OSError):
        found = os.lstat(file)
        if stat.S_ISLNK(found.st_mode):
            os.unlink(file)
            return
        if claimed_here(found):  # this process's own claim, which opening it would end
            return
        fd = os.open(file, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.unlink(file)
        finally:
            os.close(fd)


def _make_directory(directory: str, *, parents: bool) -> None:
    """Make ``directory`` 0700 (and, with ``parents``, its missing parents) unless it is
    one already; FileExistsError when something else is in its place."""
    if parents:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        return
    try:
        os.mkdir(directory, mode=0o700)
    except FileExistsError:
        if not os.path.isdir(directory):
            raise


def _check_private(directory: str, st: os.stat_result) -> None:
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
