"""Herd waiters: after a disk miss, wait for the process already probing, then read again.

Many processes that miss the same record at once (a herd) must not each import discovery
and the probe just to queue on the entry lock. The first one to miss *claims* the entry:
a POSIX record lock (``lockf``) on the entry's lock file, taken without blocking. It goes
on to the slow path (which takes the entry lock itself through ``filelock``, an ``flock``:
the two kinds of lock do not interact on Linux or the BSDs); the claim ends when its
process closes the lock file, which ``filelock`` does on release, after the verdict is
stored, or when it exits or dies. Every other process finds the entry claimed, polls the
claim every ``POLL_INTERVAL`` seconds until it can share it, and reads the record again
(it is replaced atomically): a passed verdict answers; anything else (a failed verdict,
a record behind a shim, none: the prober died) sends it the slow way, as without a claim.
The claim only saves work: single flight is the entry lock's, so a claim lost or never
taken (threads of one process share theirs) costs a slow path, never a second probe.

Standard-library C modules only, so a waiter imports nothing more than a warm resolve.
"""

from __future__ import annotations

import fcntl
import os
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

    from launcher_probe.host.decision import Published


#: Seconds between two looks of a waiter (the entry lock's waiters use it too).
POLL_INTERVAL = 0.005


class Claim:
    """This process's claim on one entry: held until :meth:`release`."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def release(self) -> None:
        """Let the waiters go (closing the file ends the POSIX lock)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _taken(fd: int, kind: int) -> bool:
    """Take (or turn this process's into) a claim of ``kind`` (``LOCK_EX``, ``LOCK_SH``)
    on ``fd`` without blocking; False when another process's claim is in the way."""
    try:
        fcntl.lockf(fd, kind | fcntl.LOCK_NB)
    except OSError:  # EAGAIN or EACCES: held elsewhere (anything else: as if held)
        return False
    return True


def wait_turn(
    lock_file: str, timeout: float, read_again: Callable[[], Published | None]
) -> Published | Claim | None:
    """After a disk miss: this process's Claim when it is the first (resolve the slow way,
    then release it), else what ``read_again`` gives once the prober's claim is gone (a
    Published decision, or None: resolve the slow way), or None when the lock file cannot
    be opened or the claim stays held past ``timeout`` seconds. The cache directories
    must exist. The prober's claim is exclusive; waiters take a shared one, all at once,
    to read again."""
    try:
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    claim = Claim(fd)
    if _taken(fd, fcntl.LOCK_EX):
        return claim
    deadline = time.monotonic() + timeout
    while not _taken(fd, fcntl.LOCK_SH):
        if time.monotonic() >= deadline:
            claim.release()
            return None
        time.sleep(POLL_INTERVAL)  # the claim has no wake-up; polling is the wait
    answer = read_again()
    claim.release()
    return answer
