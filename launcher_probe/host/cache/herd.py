"""Herd waiters: after a disk miss, wait for the process already probing, then read again.

Many processes that miss the same record at once (a herd) must not each import discovery
and the probe just to queue on the entry lock. The first one to miss *claims* the entry:
a POSIX record lock (``lockf``) on the entry's lock file, taken without blocking; it
reads the record again under its claim (one that missed just before another process
stored its verdict and let go answers from it then), and only then goes on to the slow
path (which takes the entry lock itself through ``filelock``, an ``flock``: the two kinds
of lock do not interact on Linux or the BSDs); the claim ends when its process closes
the lock file, which ``filelock`` does on release, after the verdict is stored, or when
it exits or dies. Every other process finds the entry claimed and waits
for a shared claim, all of them at once: blocked in the kernel (``F_SETLKW``, on a thread
of its own so that the wait has a deadline), woken when the claim goes, no polling. Then
it reads the record again (it is replaced atomically): a passed verdict answers; anything
else (a failed verdict, a record behind a shim, none: the prober died) sends it the slow
way, as without a claim. The claim only saves work: single flight is the entry lock's, so
a claim lost or never taken (threads of one process share theirs) costs a slow path, never
a second probe. A plain ``resolve`` whose discovery memo missed claims its environment's
discovery the same way, on the memo's lock file, until the memo is written; its waiters
replay the memo (``discovery_memo.wait_turn``).

Standard-library C modules only (``fcntl``, ``_thread``), so a waiter imports nothing more
than a warm resolve.
"""

from __future__ import annotations

import fcntl
import os
from _thread import TIMEOUT_MAX, allocate_lock, start_new_thread  # threading's, without it

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    #: What a waiter reads again once the claim goes.
    Answer = TypeVar("Answer")


#: How many claims this process holds on each lock file, by device and inode. A claim is a
#: POSIX lock, which never conflicts within one process and which closing *any* descriptor
#: of the file ends: whoever would open a lock file to remove it asks here first.
_CLAIMED: dict[tuple[int, int], int] = {}
_CLAIMED_LOCK = allocate_lock()


class Claim:
    """This process's claim on one entry: held until :meth:`release`."""

    __slots__ = ("fd", "key")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.key = _file_key(os.fstat(fd))
        with _CLAIMED_LOCK:
            _CLAIMED[self.key] = _CLAIMED.get(self.key, 0) + 1

    def release(self) -> None:
        """Let the waiters go (closing the file ends the POSIX lock)."""
        if self.fd >= 0:
            with _CLAIMED_LOCK:
                if _CLAIMED[self.key] == 1:
                    del _CLAIMED[self.key]
                else:
                    _CLAIMED[self.key] -= 1
            os.close(self.fd)
            self.fd = -1


def _file_key(found: os.stat_result) -> tuple[int, int]:
    """A lock file's key in this process's registries: its device and inode."""
    return found.st_dev, found.st_ino


def claimed_here(found: os.stat_result) -> bool:
    """Whether this process claims the lock file ``found`` describes (see ``_CLAIMED``)."""
    return _file_key(found) in _CLAIMED


def _claimed(fd: int) -> bool:
    """Take the (exclusive) claim on ``fd`` without blocking; False when another process's
    claim is in the way."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # EAGAIN or EACCES: held elsewhere (anything else: as if held)
        return False
    return True


class _Wait:
    """One wait for a claim to go, under way in this process: its thread's end, and whether
    the claim went (set before ``ended`` is released)."""

    __slots__ = ("ended", "gone")

    def __init__(self) -> None:
        self.ended = allocate_lock()
        self.ended.acquire()
        self.gone = False

    def joined(self, timeout: float) -> bool:
        """Whether the claim goes within ``timeout`` seconds (each caller that sees the end
        passes it on to the next: a lock wakes one)."""
        if not self.ended.acquire(timeout=min(timeout, TIMEOUT_MAX)):
            return False
        self.ended.release()
        return self.gone


#: The waits under way in this process, by the lock file's device and inode: a caller that
#: finds one joins it, so a claim held for long (its prober stopped) costs a long-lived
#: process one thread and one descriptor per file, however many of its waits time out.
_WAITS: dict[tuple[int, int], _Wait] = {}
_WAITS_LOCK = allocate_lock()


def _gone_in_time(fd: int, timeout: float) -> bool:
    """Whether the claim on ``fd`` (closed here) goes within ``timeout`` seconds: a thread
    of its own blocks for a shared claim (the kernel wakes it when the prober's goes),
    then closes its descriptor, which from then on is that thread's alone: on time, late
    (every caller gave up) or failed (EDEADLK, say: as if never gone); or, when such a
    thread waits on the same file already, that one's end. A late close also ends any
    claim this process took on the file meanwhile: a claim lost, which costs its waiters a
    slow path, never a second probe."""
    key = _file_key(os.fstat(fd))
    with _WAITS_LOCK:
        wait = _WAITS.get(key)
        if wait is None:
            wait = _WAITS[key] = _Wait()
            owned = fd

            def run() -> None:
                try:
                    fcntl.lockf(owned, fcntl.LOCK_SH)
                    wait.gone = True
                except OSError:
                    pass
                finally:
                    os.close(owned)
                    with _WAITS_LOCK:
                        del _WAITS[key]
                    wait.ended.release()

            try:
                start_new_thread(run, ())
            except RuntimeError:  # no thread to be had: as if the claim stayed held
                del _WAITS[key]
                os.close(fd)
                return False
            fd = -1
    if fd >= 0:  # this file's wait was under way already: joined
        os.close(fd)
    return wait.joined(timeout)


def _opened(lock_file: str) -> int | None:
    try:
        return os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None


def wait_turn(
    lock_file: str, timeout: float, read_again: Callable[[], Answer | None]
) -> Answer | Claim | None:
    """After a disk miss: what ``read_again`` gives once no other process claims the entry
    (at once when none does: a prober that let go since the miss left its answer), else
    this process's Claim when it is the first (resolve the slow way, then release it), or
    None (resolve the slow way) when ``read_again`` gives None after a wait, the lock file
    cannot be opened or the claim stays held past ``timeout`` seconds. The cache directories
    must exist. The prober's claim is exclusive; its waiters wake all at once (each to a
    shared one, let go at once) to read again."""
    fd = _opened(lock_file)
    if fd is None:
        return None
    if _claimed(fd):
        # A prober may have let go between this process's miss and its claim: what it
        # left answers, and the claim goes at once (else this one resolved a second time).
        try:
            answer = read_again()
        except BaseException:
            os.close(fd)
            raise
        if answer is None:
            return Claim(fd)
        os.close(fd)
        return answer
    if not _gone_in_time(fd, timeout):
        return None
    return read_again()
