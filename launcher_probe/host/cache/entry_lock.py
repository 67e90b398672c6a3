"""The per-entry lock: an OS ``flock`` that waiters get the moment its holder lets go.

``flock`` is what makes probing single-flight across processes and threads (each holder
opens its own file description), and it dies with a killed holder. It has no timeout, so
a waiter does not block in it: one daemon thread per lock file and process blocks in
``flock`` on its own descriptor, lets go at once and sets an Event; every waiter of that
process waits on the Event with its own deadline, then tries again without blocking.
A waiter that times out leaves nothing behind it holds: the watcher thread's descriptor
is closed (and its lock, held for an instant, released) as soon as the holder lets go.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time

from launcher_probe.errors import LauncherProbeError
from launcher_probe.host.cache.store import CacheUnavailable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterator


__all__ = ["LockTimeout", "entry_lock"]


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


class _ReleaseWatch:
    """Sets :attr:`released` once the lock on ``lock_file`` is (or becomes) free."""

    def __init__(self, lock_file: str, fd: int) -> None:
        self.lock_file = lock_file
        self.released = threading.Event()
        threading.Thread(target=self._watch, args=(fd,), daemon=True).start()

    def _watch(self, fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError:
            pass  # the waiters find out for themselves
        finally:
            os.close(fd)
            with _WATCHES_LOCK:
                if _WATCHES.get(self.lock_file) is self:
                    del _WATCHES[self.lock_file]
            self.released.set()


_WATCHES: dict[str, _ReleaseWatch] = {}
_WATCHES_LOCK = threading.Lock()


def _watch(lock_file: str) -> _ReleaseWatch:
    """The live watch of ``lock_file`` in this process, started when there is none."""
    with _WATCHES_LOCK:
        watch = _WATCHES.get(lock_file)
        if watch is None:
            watch = _WATCHES[lock_file] = _ReleaseWatch(lock_file, _open(lock_file))
        return watch


def _open(lock_file: str) -> int:
    try:
        return os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        raise CacheUnavailable(
            f"lock file {lock_file} unusable ({error.strerror or error}); verdict not cached"
        ) from error


@contextlib.contextmanager
def entry_lock(lock_file: str, timeout: float) -> Iterator[None]:
    """Hold the lock on ``lock_file`` (made 0600 when absent) for the ``with`` block.

    LockTimeout when it stays held for ``timeout`` seconds; CacheUnavailable when the lock
    file cannot be opened or locked.
    """
    started = time.monotonic()
    fd = _open(lock_file)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if _still_at(fd, lock_file):
                    break
                os.close(fd)  # ``cache clear`` removed it meanwhile: lock the one there now
                fd = -1
                fd = _open(lock_file)
                continue
            except BlockingIOError:
                pass
            except OSError as error:
                raise CacheUnavailable(
                    f"lock file {lock_file} unusable ({error.strerror}); verdict not cached"
                ) from error
            left = started + timeout - time.monotonic()
            if left <= 0:
                raise LockTimeout(lock_file, time.monotonic() - started)
            _watch(lock_file).released.wait(left)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        if fd >= 0:
            os.close(fd)


def _still_at(fd: int, lock_file: str) -> bool:
    """Whether the locked ``fd`` is still the file at ``lock_file`` (not unlinked by a
    ``cache clear`` between the open and the lock)."""
    try:
        here = os.stat(lock_file, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)
