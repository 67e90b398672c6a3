"""The probe's private directory, removed on every path: by its probe, or by a later one.

Each directory (``<tmp>/launcher-probe-XXXXXXXX``, 0700) holds an ``.owner`` file its probe
keeps ``flock``ed while it runs. The probe removes the directory when it ends; where it
cannot (it was SIGKILLed, or removing failed: out of file descriptors, say), the lock dies
with it, and a later probe of this user removes the directory: one older than
``ORPHAN_SECONDS`` whose ``.owner`` lock it can take, or that has no ``.owner``. A younger
one is left alone: a probe makes its directory, then locks it, and a sweep in between must
not take it from under that probe.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PREFIX = "launcher-probe-"
OWNER = ".owner"
#: A directory this old whose ``.owner`` is unlocked (or missing) is abandoned; a younger
#: one may be a probe's that has not locked it yet.
ORPHAN_SECONDS = 60.0


@contextlib.contextmanager
def private_directory() -> Iterator[Path]:
    """A new private directory for one probe; removed (as far as it can be) on leaving.
    Abandoned ones of this user are swept first. OSError when it cannot be made."""
    sweep_abandoned()
    directory = tempfile.mkdtemp(prefix=PREFIX)
    try:
        owner = os.open(
            os.path.join(directory, OWNER),
            os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
    except OSError:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    try:
        fcntl.flock(owner, fcntl.LOCK_EX)
        yield Path(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)  # what is left, a later probe sweeps
        os.close(owner)


def sweep_abandoned(now: float | None = None) -> None:
    """Remove this user's private directories whose probe is gone; never fails."""
    now = time.time() if now is None else now
    where = tempfile.gettempdir()
    try:
        names = [name for name in os.listdir(where) if name.startswith(PREFIX)]
    except OSError:
        return
    for name in names:
        directory = os.path.join(where, name)
        with contextlib.suppress(OSError):
            st = os.lstat(directory)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
                _remove_if_abandoned(directory, now - st.st_mtime)


def _remove_if_abandoned(directory: str, age: float) -> None:
    if age <= ORPHAN_SECONDS:
        return
    try:
        owner = os.open(os.path.join(directory, OWNER), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        shutil.rmtree(directory, ignore_errors=True)
        return
    try:
        fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        shutil.rmtree(directory, ignore_errors=True)
    except BlockingIOError:
        pass  # its probe runs
    finally:
        os.close(owner)
