"""The file system the verdict cache lives on, and a warning when it is a network one.

The cache's single flight rests on ``flock``, which a network file system may not enforce
across its clients (NFS mounted with ``local_lock``, SMB, FUSE ones): two hosts sharing a
home directory could then probe the same binary at once. Records stay apart (each host has
its own directory), so this costs duplicate probes, not wrong verdicts. Linux only (from
``/proc/self/mountinfo``); elsewhere the type is not known.
"""

from __future__ import annotations

import os
import re
import sys

#: File system types whose locks may not exclude processes on other machines.
NETWORK_TYPES = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "afs", "9p", "ceph", "glusterfs"}
    | {"lustre", "gpfs", "davfs", "fuse.sshfs", "fuse.glusterfs", "fuse.cephfs", "fuse.s3fs"}
)
_ESCAPE = re.compile(r"\\([0-7]{3})")


def filesystem_type(path: str, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """The type of the file system ``path`` (or its nearest existing parent) is on, from
    ``mountinfo``; None when it cannot be told (not Linux, unreadable)."""
    if sys.platform != "linux":
        return None
    where = os.path.realpath(path)
    while not os.path.exists(where) and where != "/":
        where = os.path.dirname(where)
    try:
        with open(mountinfo, encoding="utf-8", errors="surrogateescape") as file:
            lines = file.read(1 << 22).splitlines()
    except OSError:
        return None
    found: tuple[int, str] | None = None
    for line in lines:
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        mount_point = _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
        kind = fields[fields.index("-", 6) + 1]
        inside = where == mount_point or where.startswith(mount_point.rstrip("/") + "/")
        if inside and (found is None or len(mount_point) >= found[0]):
            found = (len(mount_point), kind)  # the deepest; of stacked mounts, the last
    return None if found is None else found[1]


def network_warning(directory: str, kind: str | None) -> str | None:
    """The warning for a cache ``directory`` on a file system of type ``kind``, or None."""
    if kind not in NETWORK_TYPES:
        return None
    return (
        f"the cache directory {directory} is on a network file system ({kind}): its flock "
        "may not exclude processes on other machines, so hosts sharing it may probe the "
        "same binary at once (each host keeps its own records); set "
        "LAUNCHER_PROBE_CACHE_DIR to a local directory"
    )
