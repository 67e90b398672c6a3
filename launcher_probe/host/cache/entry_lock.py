"""The per-entry lock: ``filelock``'s ``flock``, held while one process or thread probes.

``flock`` is what makes probing single-flight across processes and threads (each holder
opens its own file description through its own ``FileLock``), and it dies with a killed
holder. A waiter polls every ``POLL_INTERVAL`` seconds (filelock's default 50 ms would put
the last of a herd's waiters far behind the release) until its own deadline. A lock taken on
a file that ``cache clear`` unlinked meanwhile is let go and the file now at the path locked
instead, so two holders can never hold two inodes of one name. ``filelock`` is imported
when a lock is taken, not with this module: it costs tens of milliseconds to import,
which a warm path never pays, and which a miss spends while the probe's supervisor starts.
"""

from __future__ import annotations

import contextlib
import os
import time

from launcher_probe.errors import LauncherProbeError
from launcher_probe.host.cache.location import CacheUnavailable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["LockTimeout", "entry_lock"]

#: Seconds between two looks of a waiter on the lock (filelock polls).
POLL_INTERVAL = 0.005


class LockTimeout(LauncherProbeError):
    """Another process held an entry's lock past the timeout."""

    reason = "lock_timeout"

    def __init__(self, lock_file: str, waited: float) -> None:
        super().__init__(
            f"lock file {lock_file} still held by another process or thread "
            f"after waiting {waited:.1f} s"
        )
        self.lock_file = lock_file
        self.waited = waited


@contextlib.contextmanager
def entry_lock(lock_file: str, timeout: float, *, waited: float = 0.0) -> Iterator[None]:
    """Hold the lock on ``lock_file`` (made 0600 when absent, never through a symlink) for
    the ``with`` block.

    LockTimeout when it stays held past ``timeout`` seconds, less what the caller
    ``waited`` for the entry already (the detail says how long in all); CacheUnavailable
    when the lock file cannot be opened or locked.
    """
    import filelock  # a miss only (see the module docstring)

    started = time.monotonic() - waited
    held: list[os.stat_result] = []
    lock = filelock.UnixFileLock(
        lock_file, timeout=timeout, mode=0o600, on_acquired=lambda fd: held.append(os.fstat(fd))
    )
    while True:
        remaining = max(0.0, timeout - (time.monotonic() - started))
        try:
            lock.acquire(timeout=remaining, poll_interval=POLL_INTERVAL)
        except filelock.Timeout as error:
            raise LockTimeout(lock_file, time.monotonic() - started) from error
        except OSError as error:
            raise CacheUnavailable(
                f"lock file {lock_file} unusable ({error.strerror or error}); verdict not cached"
            ) from error
        if _still_at(held[-1], lock_file):
            break
        lock.release()  # ``cache clear`` removed it meanwhile: lock the one there now
    try:
        yield
    finally:
        lock.release()


def _still_at(locked: os.stat_result, lock_file: str) -> bool:
    """Whether the locked file is still the one at ``lock_file``."""
    try:
        here = os.stat(lock_file, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (locked.st_dev, locked.st_ino)
