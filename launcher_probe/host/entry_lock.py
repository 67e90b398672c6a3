"""The per-entry lock: ``filelock``'s ``flock``, held while one process or thread probes.

``flock`` is what makes probing single-flight across processes and threads (each holder
opens its own file description through its own ``FileLock``), and it dies with a killed
holder. A waiter polls every ``herd.POLL_INTERVAL`` seconds (filelock's default 50 ms would put
the last of a herd's waiters far behind the release) until its own deadline. Imported on a
miss only: ``filelock`` costs tens of milliseconds to import, which a warm path never pays.
"""

from __future__ import annotations

import contextlib
import time

import filelock

from launcher_probe.errors import LauncherProbeError
from launcher_probe.host.cache_store import CacheUnavailable
from launcher_probe.host.herd import POLL_INTERVAL

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterator


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
def entry_lock(lock_file: str, timeout: float) -> Iterator[None]:
    """Hold the lock on ``lock_file`` (made 0600 when absent, never through a symlink) for
    the ``with`` block.

    LockTimeout when it stays held for ``timeout`` seconds; CacheUnavailable when the lock
    file cannot be opened or locked.
    """
    started = time.monotonic()
    lock = filelock.UnixFileLock(lock_file, timeout=timeout, mode=0o600)
    try:
        lock.acquire(poll_interval=POLL_INTERVAL)
    except filelock.Timeout as error:
        raise LockTimeout(lock_file, time.monotonic() - started) from error
    except OSError as error:
        raise CacheUnavailable(
            f"lock file {lock_file} unusable ({error.strerror or error}); verdict not cached"
        ) from error
    try:
        yield
    finally:
        lock.release()
